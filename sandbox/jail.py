"""The jail: inside fresh namespaces, make the filesystem read-only but a private folder, drop privileges, exec.

Runs as `python -m sandbox.jail [options] -- ARGV...`, started by sandbox.isolation under `unshare`.
Standard library only, so that it starts in milliseconds and trusts nothing it does not own.
"""
import argparse
import ctypes
import os
import resource
import stat
import sys
from pathlib import Path

MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_NOATIME, MS_NODIRATIME, MS_BIND, MS_REC = 32, 1024, 2048, 4096, 16384
MS_PRIVATE, MS_RELATIME = 1 << 18, 1 << 21
# statvfs flags that a remount must keep (the kernel refuses to clear locked ones).
_KEEP = {os.ST_NOSUID: MS_NOSUID, os.ST_NODEV: MS_NODEV, os.ST_NOEXEC: MS_NOEXEC,
         os.ST_NOATIME: MS_NOATIME, os.ST_NODIRATIME: MS_NODIRATIME, os.ST_RELATIME: MS_RELATIME}
# Pseudo filesystems stay as they are: device nodes (the GPU) must keep working.
_SKIP = ("/proc", "/sys", "/dev")
# Each gets a fresh, private tmpfs. /run (where /var/run points) holds local services' Unix sockets (PostgreSQL,
# MySQL, Docker), which a network namespace does not cut off and a read-only mount does not stop.
_SCRATCH = ("/tmp", "/var/tmp", "/dev/shm", "/run")

_libc = ctypes.CDLL(None, use_errno=True)


def _mount(src, target, fstype, flags, data=None):
    enc = lambda s: s.encode() if s is not None else None  # noqa: E731
    if _libc.mount(enc(src), enc(str(target)), enc(fstype), ctypes.c_ulong(flags), enc(data)) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"mount {target}: {os.strerror(err)}")


def _kept_flags(path):
    f = os.statvfs(path).f_flag & ~os.ST_RDONLY
    return sum(ms for st, ms in _KEEP.items() if f & st)


def _read_only(path):
    _mount(None, path, None, MS_REMOUNT | MS_BIND | MS_RDONLY | _kept_flags(path))



def _mount_points():
    points = []
    with open("/proc/self/mountinfo") as fh:
        for line in fh:
            mp = line.split()[4].replace("\\040", " ")
            if not any(mp == s or mp.startswith(s + "/") for s in _SKIP):
                points.append(mp)
    return points


def _under(path, top):
    return path == top or path.startswith(top.rstrip("/") + "/")


def _bind(fd, target, read_only):
    target = Path(target)
    if not target.exists():
        if stat.S_ISDIR(os.fstat(fd).st_mode):
            target.mkdir(parents=True, exist_ok=True)
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.touch()
    _mount(f"/proc/self/fd/{fd}", target, None, MS_BIND | MS_REC)
    # A bind copies the source mount's flags, read-only included: set the ones wanted explicitly.
    _mount(None, target, None, MS_REMOUNT | MS_BIND | _kept_flags(str(target)) | (MS_RDONLY if read_only else 0))


def setup_filesystem(private, keep):
    """Everything read-only; fresh tmpfs scratch; `keep` reachable by an unprivileged uid; `private` writable."""
    _mount(None, "/", None, MS_REC | MS_PRIVATE)
    keep = [os.path.realpath(k) for k in keep if os.path.exists(k)]
    # Root-owned 0700 ancestors (such as /root holding a pyenv) would lock the unprivileged uid out of
    # the interpreter: cover each with an empty tmpfs and bind back just the child that is needed.
    holes = {}
    for k in keep:
        parts = Path(k).parts
        for i in range(2, len(parts)):
            top = str(Path(*parts[:i]))
            if not os.stat(top).st_mode & stat.S_IXOTH:
                # The kept path itself, not just the next folder: deeper 0700 folders (a cache under
                # ~/.cache/private/...) would lock the uid out again; the tmpfs makes its parents 0755.
                holes.setdefault(top, set()).add(k)
                break
    originals = {child: os.open(child, os.O_PATH) for kids in holes.values() for child in kids}
    scratch = [d for d in _SCRATCH if os.path.isdir(d)]
    # Kept paths under a scratch folder (a checkout or venv in /tmp) come back, read-only, into its fresh tmpfs.
    in_scratch = {d: [k for k in keep if _under(k, d) and k != d] for d in scratch}
    for kids in in_scratch.values():
        originals.update({k: os.open(k, os.O_PATH) for k in kids if k not in originals})
    private_fd = os.open(private, os.O_PATH | os.O_DIRECTORY)

    for mp in _mount_points():
        try:
            _read_only(mp)
        except OSError:
            pass  # mounts we cannot see into (overmounted) stay as they are; they are not writable anyway
    for top, kids in holes.items():
        _mount("tmpfs", top, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=1m")
        for child in sorted(kids):
            _bind(originals[child], child, read_only=True)
    for d in scratch:
        _mount("tmpfs", d, "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777,size=25%")
        for kept in sorted(in_scratch[d]):
            _bind(originals[kept], kept, read_only=True)
    _bind(private_fd, private, read_only=False)
    return scratch


def set_limits(mem_mb, fsize_mb, nproc, cpu_s):
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_FSIZE, (fsize_mb << 20, fsize_mb << 20))
    if nproc:
        resource.setrlimit(resource.RLIMIT_NPROC, (nproc, nproc))
    if cpu_s:
        resource.setrlimit(resource.RLIMIT_CPU, (cpu_s, cpu_s + 5))
    if mem_mb:
        # Address-space limits break CUDA's large reservations; the parent's watchdog covers GPU runs.
        resource.setrlimit(resource.RLIMIT_AS, (mem_mb << 20, mem_mb << 20))


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m sandbox.jail")
    parser.add_argument("--private", required=True)
    parser.add_argument("--keep", action="append", default=[])
    parser.add_argument("--mounts", action="store_true")
    parser.add_argument("--uid", type=int, default=None)
    parser.add_argument("--address-space-mb", type=int, default=0)
    parser.add_argument("--fsize-mb", type=int, default=16384)
    parser.add_argument("--nproc", type=int, default=0)
    parser.add_argument("--cpu-s", type=int, default=0)
    parser.add_argument("--fds", default="")
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("no command given")
    if args.mounts:
        setup_filesystem(args.private, args.keep)
    set_limits(args.address_space_mb, args.fsize_mb, args.nproc, args.cpu_s)
    if args.uid is not None:
        os.setgroups([])
        os.setgid(args.uid)
        os.setuid(args.uid)
    for fd in filter(None, args.fds.split(",")):
        os.set_inheritable(int(fd), True)
    os.chdir(args.private)
    if args.mounts:
        return init(command, [int(fd) for fd in filter(None, args.fds.split(","))])
    os.execvp(command[0], command)


def init(command, fds):
    """PID 1 of the namespace: run COMMAND as its child, reap every orphan, exit as the child did.

    The command must not be PID 1 itself: the kernel drops signals PID 1 sends itself (a solution's own
    SIGSEGV would be ignored), and orphans it never waits for would pile up against the process limit.
    Exits 128 + N when the child died of signal N, which sandbox.isolation reads back as that signal.
    """
    child = os.fork()
    if child == 0:
        os.execvp(command[0], command)
    for fd in fds:
        os.close(fd)  # the harness must see the channel close when the child dies, not when we do
    while True:
        pid, status = os.wait()
        if pid == child:
            if os.WIFSIGNALED(status):
                return 128 + os.WTERMSIG(status)
            return os.WEXITSTATUS(status)


if __name__ == "__main__":
    sys.exit(main())
