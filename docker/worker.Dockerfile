# syntax=docker/dockerfile:1
# GPU (and CPU-target) workers: RQ workers that run agent episodes, problem validation, sandbox evaluations
# and package builds; `manage.py gpuworkers` starts one per GPU, each with CUDA_VISIBLE_DEVICES set to it.
# Build from the repository root: docker build -f docker/worker.Dockerfile -t kernel-studio-worker .
#
# The worker runs as root inside its container, on purpose: the sandbox's jail gives each evaluation's solution
# code a uid of its own (KS_SANDBOX_UID_BASE, 61000 and up, no passwd entry, no capabilities) in fresh network,
# mount and PID namespaces, and only root can switch to those uids and create the namespaces. The container
# therefore needs CAP_SYS_ADMIN and an AppArmor profile that allows mount (docker/compose.yml sets both);
# KS_SANDBOX_REQUIRE_ISOLATION=True makes a worker without them refuse to evaluate rather than run code unjailed.

# nvcc must match the CUDA that torch was built with: CUDA 13.0 here, torch 2.11 from the cu130 index.
ARG CUDA_IMAGE=nvidia/cuda:13.0.2-devel-ubuntu24.04
FROM ${CUDA_IMAGE}
ARG TORCH_SPEC=torch==2.11.0
ARG TORCH_INDEX=https://download.pytorch.org/whl/cu130
ENV DEBIAN_FRONTEND=noninteractive
# python3-dev: Python.h for classic (pybind11) bindings; bubblewrap: the jail's namespaces and allow-listed root;
# libseccomp2: its seccomp filter (sandbox/jailfs.py, sandbox/seccomp.py).
RUN apt-get update \
    && apt-get install -y --no-install-recommends python3 python3-venv python3-dev g++ bubblewrap libseccomp2 ca-certificates \
    && rm -rf /var/lib/apt/lists/*
ENV VIRTUAL_ENV=/opt/venv \
    PATH=/opt/venv/bin:/usr/local/cuda/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    DJANGO_SETTINGS_MODULE=studio.settings \
    DEBUG=False \
    CUDA_HOME=/usr/local/cuda \
    KS_CACHE_DIR=/var/cache/kernel-studio \
    KS_SANDBOX_REQUIRE_ISOLATION=True \
    KS_PACKAGES_DIR=/var/lib/kernel-studio/packages
RUN python3 -m venv "$VIRTUAL_ENV"
# hadolint ignore=DL3013
RUN --mount=type=cache,target=/root/.cache/pip pip install "$TORCH_SPEC" --index-url "$TORCH_INDEX"
RUN python -c "import re, subprocess, torch; out = subprocess.run(['nvcc', '--version'], capture_output=True, text=True).stdout; nvcc = re.search(r'release (\d+\.\d+)', out).group(1); assert nvcc == torch.version.cuda, f'nvcc {nvcc} but torch {torch.__version__} was built with CUDA {torch.version.cuda}: choose CUDA_IMAGE and TORCH_INDEX together'; print('nvcc', nvcc, 'matches torch', torch.__version__)"
WORKDIR /app
COPY . .
RUN --mount=type=cache,target=/root/.cache/pip pip install -e .
# The precompiled torch header of classic bindings (about 15 s per build without it), for both targets, in
# KS_CACHE_DIR; its key holds no GPU architecture, so it serves whatever GPU the container gets. Then the same
# header for load_inline's C++ unit with torch's own flags and no extra_cflags (sandbox/native/inline.py): a
# KernelBench solution's build then takes seconds from the first evaluation on.
RUN python -c "from sandbox.native.build import ensure_pch; print(ensure_pch('cuda')); print(ensure_pch('cpu'))" \
    && python -c "from sandbox.native.inline import prepare_headers; print(prepare_headers(b'', 'image', 'cuda')); print(prepare_headers(b'', 'image', 'cpu'))" \
    && mkdir -p /var/lib/kernel-studio/packages
CMD ["python", "manage.py", "gpuworkers", "gpu"]
