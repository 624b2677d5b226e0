# syntax=docker/dockerfile:1
# The studio's web process: Django under daphne (ASGI), static files collected and served by servestatic,
# migrations on start. It never runs kernels and needs no GPU.
# Build from the repository root: docker build -f docker/web.Dockerfile -t kernel-studio-web .

# Monaco and htmx at the versions package-lock.json pins; studio.vendor copies them into static/ below.
FROM node:22-bookworm-slim AS npm
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund --loglevel=error

FROM python:3.12-slim-bookworm
# torch is a dependency of the project but the web process never imports it: the CPU build is the smallest.
ARG TORCH_SPEC=torch==2.11.0
ARG TORCH_INDEX=https://download.pytorch.org/whl/cpu
ENV PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    DJANGO_SETTINGS_MODULE=studio.settings \
    DEBUG=False \
    KS_HOST=0.0.0.0 \
    KS_PORT=8000 \
    STATIC_ROOT=/app/staticfiles \
    KS_PACKAGES_DIR=/var/lib/kernel-studio/packages
# hadolint ignore=DL3013
RUN --mount=type=cache,target=/root/.cache/pip pip install "$TORCH_SPEC" --index-url "$TORCH_INDEX"
WORKDIR /app
COPY . .
COPY --from=npm /app/node_modules node_modules
# collectstatic signs nothing: a placeholder SECRET_KEY keeps settings from generating a key into the image.
RUN --mount=type=cache,target=/root/.cache/pip pip install -e . \
    && python -m studio.vendor \
    && rm -rf node_modules \
    && SECRET_KEY=collectstatic-signs-nothing python manage.py collectstatic --noinput
# Packages built by the workers arrive on a shared volume; the web process only reads them.
RUN useradd --system --uid 10001 --home-dir /app --shell /usr/sbin/nologin studio \
    && mkdir -p /var/lib/kernel-studio/packages
USER 10001
EXPOSE 8000
CMD ["docker/web-entrypoint.sh"]
