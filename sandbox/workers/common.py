"""What both workers share: their start and end (off the timing cores, reaping what they started), device setup,
output saving and sampling, error text."""

import ctypes
import gc
import os
import signal
import time
import traceback

import torch

from sandbox import settings, timing_lock

PR_SET_CHILD_SUBREAPER = 36

# Errors after which the CUDA context is unusable: the verdict is `crashed`, not a Python-level failure.
CUDA_FAULTS = (
    "illegal memory access",
    "unspecified launch failure",
    "misaligned address",
    "illegal instruction",
    "an illegal",
    "device-side assert",
    "CUDA error: unknown error",
    "hardware stack error",
)


def become_worker():
    """A jailed worker's first step: off the cores timing uses (what it builds and starts inherits that), and the
    reaper of every process its children leave behind, which would otherwise outlive it (issue 17: zombies after
    the benchmarks)."""
    timing_lock.leave_timing_cores()
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    except (OSError, AttributeError):
        pass  # reap_children still ends and reaps the direct children


def _children():
    """Pids whose parent is this process (its children, and orphans handed to it as a subreaper)."""
    me, found = str(os.getpid()), []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[1] == me:  # fields after the command: state, ppid, ...
            found.append(int(entry))
    return found


def reap_children(grace_s=2.0):
    """End every process this worker started that is still there (compile workers, build tools, what solution code
    left running) and reap it, with what it leaves in turn: a worker exits with no process of its own behind it."""
    deadline = time.monotonic() + grace_s
    while True:
        while True:  # collect what has already ended
            try:
                pid, _ = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                pid = 0
            if not pid:
                break
        children = _children()
        if not children:
            return
        for pid in children:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        if time.monotonic() > deadline:
            return
        time.sleep(0.02)


def setup_device(device):
    torch.set_num_threads(settings.CPU_THREADS)
    if device == "cuda":
        if not torch.cuda.is_available():
            raise RuntimeError("device cuda was asked for but no CUDA device is visible")
        torch.cuda.init()
        torch.cuda.set_device(0)


def synchronize(device):
    if device == "cuda":
        torch.cuda.synchronize()


def release_memory(device):
    """Hand the GPU memory this process no longer uses back to the device: the reference and the candidate share
    one GPU, and memory freed into PyTorch's caching allocator stays out of the other process's reach."""
    gc.collect()
    if device == "cuda":
        torch.cuda.synchronize()
        torch.cuda.empty_cache()


FINITE_CHUNK = 1 << 26  # elements checked at a time: the mask of a 7 GiB output would take 1.75 GiB more


def all_finite(tensor, isfinite=torch.isfinite, chunk=FINITE_CHUNK):
    """Whether every element is finite, in chunks of a contiguous tensor's flat view (little extra memory)."""
    if not tensor.is_contiguous() or tensor.numel() <= chunk:
        return bool(isfinite(tensor).all())
    flat = tensor.view(-1)
    return all(bool(isfinite(flat[i : i + chunk]).all()) for i in range(0, flat.numel(), chunk))


def is_cuda_fault(exc):
    text = f"{type(exc).__name__}: {exc}"
    return any(marker.lower() in text.lower() for marker in CUDA_FAULTS)


def error_text(exc, limit=6000):
    text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    return text if len(text) <= limit else text[: limit // 3] + "\n[...]\n" + text[-2 * limit // 3 :]


def sample_indices(numel, seed, count):
    """The secret sample of element positions compared for outputs too large to transfer whole."""
    gen = torch.Generator().manual_seed(seed)
    return torch.randint(0, numel, (min(count, numel),), generator=gen)


SPECIAL_LIMIT = 1 << 22  # the most NaN/Inf positions a sampled output sends, in all its tensors
_nonzero, _isfinite_all = torch.nonzero, torch.isfinite  # taken before any solution is imported


def special_values(tensors):
    """Two tensors for each of TENSORS: the flat positions of its NaN and Inf values and those values (none for an
    integer tensor); past SPECIAL_LIMIT positions in all, [-1] in place of the positions."""
    out, sent = [], 0
    for t in tensors:
        flat = t.detach().reshape(-1)
        if flat.is_floating_point():
            where = _nonzero(~_isfinite_all(flat)).reshape(-1)
        else:
            where = flat.new_empty(0, dtype=torch.long)
        sent += where.numel()
        if sent > SPECIAL_LIMIT:
            out += [torch.tensor([-1]), flat.new_empty(0).cpu()]
            continue
        out += [where.cpu(), flat[where].cpu()]
    return out


def select(tensors, sample_seed, count):
    """Full CPU copies when SAMPLE_SEED is None, else the sampled elements of each tensor."""
    if sample_seed is None:
        return [t.detach().cpu() for t in tensors]
    out = []
    for i, t in enumerate(tensors):
        idx = sample_indices(t.numel(), sample_seed + i, count).to(t.device)
        out.append(t.detach().reshape(-1)[idx].cpu())
    return out
