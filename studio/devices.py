"""Which target a form offers first: KS_DEFAULT_DEVICE where the operator set it (a web host without a GPU in front
of GPU workers sets cuda), else CUDA where this host has a GPU, else the CPU. Live workers on the gpu queue say
nothing: runstudio starts one on every host, and without a GPU it evaluates on the CPU target."""

from pathlib import Path

from django.conf import settings


def gpu_on_this_host():
    """Whether the NVIDIA driver sees a GPU here (its device nodes), without touching CUDA in the web process."""
    return Path("/dev/nvidiactl").exists() and any(Path("/dev").glob("nvidia[0-9]*"))


def default_device():
    """'cuda' or 'cpu': what a form's target defaults to."""
    if settings.KS_DEFAULT_DEVICE:
        return settings.KS_DEFAULT_DEVICE
    return "cuda" if gpu_on_this_host() else "cpu"
