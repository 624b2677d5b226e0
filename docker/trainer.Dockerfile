# syntax=docker/dockerfile:1
# The RL trainer: the project with its `train` extra (accelerate, transformers, ...). In compose it serves the
# studio's `train` queue; a learner over several GPUs or hosts is `accelerate launch -m training train CONFIG`
# (README, Deploy). Rollouts are not run here: they are episodes on the `gpu` queue, on the GPU workers.
# Build from the repository root: docker build -f docker/trainer.Dockerfile -t kernel-studio-trainer .

# The same CUDA and torch as the workers: Triton and torch.compile compile kernels in the learner too.
ARG CUDA_IMAGE=nvidia/cuda:13.0.2-devel-ubuntu24.04
FROM ${CUDA_IMAGE}
ARG TORCH_SPEC=torch==2.11.0
ARG TORCH_INDEX=https://download.pytorch.org/whl/cu130
ENV DEBIAN_FRONTEND=noninteractive
RUN apt-get update \
    && apt-get install -y --no-install-recommends python3 python3-venv python3-dev g++ ca-certificates \
    && rm -rf /var/lib/apt/lists/*
ENV VIRTUAL_ENV=/opt/venv \
    PATH=/opt/venv/bin:/usr/local/cuda/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    DJANGO_SETTINGS_MODULE=studio.settings \
    DEBUG=False \
    CUDA_HOME=/usr/local/cuda \
    KS_CACHE_DIR=/var/cache/kernel-studio
RUN python3 -m venv "$VIRTUAL_ENV"
# hadolint ignore=DL3013
RUN --mount=type=cache,target=/root/.cache/pip pip install "$TORCH_SPEC" --index-url "$TORCH_INDEX"
WORKDIR /app
COPY . .
RUN --mount=type=cache,target=/root/.cache/pip pip install -e ".[train]"
# Fail the build, not the first run, if accelerate cannot launch the project's training module.
RUN accelerate launch --help > /dev/null && python -c "import training.cli"
CMD ["python", "manage.py", "rqworker", "train"]
