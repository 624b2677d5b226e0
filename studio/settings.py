"""The studio's only settings module: every value comes from the environment, with local defaults."""

import os
import tempfile
from pathlib import Path

import dj_database_url
from channels_redis.core import RedisChannelLayer
from django.core.exceptions import ImproperlyConfigured

from studio.lib.env import env_bool, env_int, env_secret, env_str, env_switch
from studio.lib.secret_key import local_secret_key
from studio.queues import NAMES as QUEUE_NAMES

BASE_DIR = Path(__file__).resolve().parent.parent

# Off unless asked (DEBUG=True, or runstudio --debug): with it on, an unknown URL lists every route.
DEBUG = env_bool("DEBUG", False)
# Local state: runstudio's embedded servers and admin login, the generated secret key, build caches.
KS_CACHE_DIR = Path(env_str("KS_CACHE_DIR", str(BASE_DIR / ".cache")))
# A deployment sets SECRET_KEY or SECRET_KEY_FILE (compose requires one). Without either, a random key is made
# once and kept in KS_CACHE_DIR (mode 0600), so every process of one machine (web, workers) signs alike.
SECRET_KEY = env_secret("SECRET_KEY", "") or local_secret_key(KS_CACHE_DIR)
ALLOWED_HOSTS = env_str("ALLOWED_HOSTS", "localhost,127.0.0.1,[::1]").split(",")

INSTALLED_APPS = [
    # daphne first: it replaces runserver with an ASGI server.
    "daphne",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "channels",
    "django_rq",
    "django_htmx",
    "studio",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "servestatic.middleware.ServeStaticMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "studio.csp.content_security_policy",
    "django_htmx.middleware.HtmxMiddleware",
]

ROOT_URLCONF = "studio.urls"
ASGI_APPLICATION = "studio.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "studio.context_processors.vendor",
                "studio.context_processors.features",
            ],
        },
    },
]

DATABASE_URL = env_str("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/kernel_studio")
# No persistent connections (CONN_MAX_AGE=0): under ASGI they leak across threads (Django's deployment docs).
DATABASES = {"default": dj_database_url.parse(DATABASE_URL)}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

REDIS_URL = env_str("REDIS_URL", "redis://127.0.0.1:6379/0")
# redis-py >= 8 stops reading a socket after 5 s by default, and the channel layer waits up to 5 s at a time in
# BZPOPMIN for a message (RedisChannelLayer.brpop_timeout): each idle WebSocket died with "Timeout reading from
# redis" every 5-10 s. The layer's reads wait well past its own blocking time; a dead server is still noticed.
# (RQ workers raise their own connection's timeout above their blocking dequeue.)
REDIS_SOCKET_TIMEOUT = env_int("KS_REDIS_SOCKET_TIMEOUT", 30)
if REDIS_SOCKET_TIMEOUT <= RedisChannelLayer.brpop_timeout + 5:
    raise ImproperlyConfigured(
        f"KS_REDIS_SOCKET_TIMEOUT={REDIS_SOCKET_TIMEOUT}: must exceed the channel layer's "
        f"{RedisChannelLayer.brpop_timeout} s blocking wait by more than 5 s"
    )
CHANNEL_LAYERS = {
    # The core layer, not the pub/sub one (PITFALLS.md).
    "default": {
        "BACKEND": "channels_redis.core.RedisChannelLayer",
        "CONFIG": {"hosts": [{"address": REDIS_URL, "socket_timeout": REDIS_SOCKET_TIMEOUT}]},
    },
}
# Users' queues (gpu, cpu), staff queues (staff-gpu, staff-cpu) and the learners' (train): studio/queues.py.
RQ_QUEUES = {name: {"URL": REDIS_URL} for name in QUEUE_NAMES}
# Workers that end every process a job started, and remove its scratch folder, however the job ends (studio/workers.py).
RQ = {"WORKER_CLASS": "studio.workers.Worker"}

# The OpenAI-compatible endpoint (vLLM) serving the trained policy.
KS_POLICY_BASE_URL = env_str("KS_POLICY_BASE_URL", "http://127.0.0.1:8001/v1")
KS_POLICY_MODEL = env_str("KS_POLICY_MODEL", "kernel-studio-policy")
KS_POLICY_API_KEY = env_secret("KS_POLICY_API_KEY", "")

# The target forms offer first; empty: CUDA where this host has a GPU, else the CPU (a web host without a GPU in
# front of GPU workers sets cuda).
KS_DEFAULT_DEVICE = env_str("KS_DEFAULT_DEVICE", "")
if KS_DEFAULT_DEVICE not in ("", "cpu", "cuda"):
    raise ImproperlyConfigured(f"KS_DEFAULT_DEVICE={KS_DEFAULT_DEVICE!r}: use 'cpu', 'cuda' or leave it empty")
# Where runstudio binds daphne.
KS_HOST = env_str("KS_HOST", "127.0.0.1")
KS_PORT = env_int("KS_PORT", 8000)

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
# Whether people may create their own accounts at /accounts/signup (KS_SIGNUP=on|off); off, staff create them.
KS_SIGNUP = env_switch("KS_SIGNUP", True)
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = Path(env_str("STATIC_ROOT", str(BASE_DIR / "staticfiles")))  # collectstatic's target
STATICFILES_DIRS = [BASE_DIR / "static"]
# daphne serves no files: servestatic does, asynchronously, right after the security middleware, with DEBUG on
# or off. It serves the source folders (static/ and the apps'), so runstudio needs no collectstatic; where
# STATIC_ROOT holds collected files (the web image), they are the same files.
SERVESTATIC_USE_FINDERS = True

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": env_str("KS_LOG_LEVEL", "INFO")},
}

# Problem uploads: the size limit, and how long validation of an upload may run on a worker.
KS_UPLOAD_LIMIT_BYTES = env_int("KS_UPLOAD_LIMIT_BYTES", 1 << 20)
KS_VALIDATE_TIMEOUT = env_int("KS_VALIDATE_TIMEOUT", 180)

# Options every policy back-end receives (each takes what it needs): the endpoint of the served checkpoint.
KS_POLICY_OPTIONS = {"base_url": KS_POLICY_BASE_URL, "model": KS_POLICY_MODEL, "api_key": KS_POLICY_API_KEY}
# The longest an optimization run may take on a worker before RQ stops it.
KS_RUN_TIMEOUT = env_int("KS_RUN_TIMEOUT", 6 * 3600)
# How long the sandbox may take over one edit from the kernel editor (build, trials, timing) on a worker.
KS_EVALUATE_TIMEOUT = env_int("KS_EVALUATE_TIMEOUT", 900)
# Built packages (sdists and wheels) of kernel versions: written by workers, served to their owners.
KS_PACKAGES_DIR = Path(env_str("KS_PACKAGES_DIR", str(BASE_DIR / ".cache" / "packages")))
# KernelBench evaluations launched from the staff area: the problems they draw from, where their folders go,
# and extra `python -m training evaluate` flags every one of them gets (e.g. "--no-compiled" on a CPU host).
KS_KERNELBENCH_PROBLEMS = Path(
    env_str("KS_KERNELBENCH_PROBLEMS", str(BASE_DIR.parent / "shared" / "kernelbench" / "problems.jsonl"))
)
KS_EVALUATIONS_DIR = Path(env_str("KS_EVALUATIONS_DIR", str(BASE_DIR / ".cache" / "evaluations")))
KS_EVALUATION_ARGS = env_str("KS_EVALUATION_ARGS", "")
KS_EVALUATION_TIMEOUT = env_int("KS_EVALUATION_TIMEOUT", 48 * 3600)
# Task-synthesis runs launched from the staff area: where their datasets go, and extra
# `python -m training synthesize` flags every one of them gets (e.g. "--profile tiny --min-ms 0" on a CPU host).
KS_SYNTHESIS_DIR = Path(env_str("KS_SYNTHESIS_DIR", str(BASE_DIR / ".cache" / "synthesis")))
KS_SYNTHESIS_ARGS = env_str("KS_SYNTHESIS_ARGS", "")
KS_SYNTHESIS_TIMEOUT = env_int("KS_SYNTHESIS_TIMEOUT", 48 * 3600)
# RL training runs launched from the staff area: where their run folders and served (exported) checkpoints go,
# the configs offered to launch from, and how long a run may take on a worker.
KS_TRAINING_DIR = Path(env_str("KS_TRAINING_DIR", str(BASE_DIR / ".cache" / "training")))
KS_TRAINING_CONFIGS = Path(env_str("KS_TRAINING_CONFIGS", str(BASE_DIR / "training" / "configs")))
KS_TRAINING_TIMEOUT = env_int("KS_TRAINING_TIMEOUT", 7 * 24 * 3600)
# A served checkpoint runs through the configured endpoint when KS_POLICY_BASE_URL is set (vLLM or agent.serve
# loaded with it), otherwise through the transformers policy in the worker, from the exported folder.
KS_POLICY_ENDPOINT_SET = "KS_POLICY_BASE_URL" in os.environ
# Each RQ job's scratch folder (its TMPDIR) lives here on its worker's host, removed when the job ends however it ends;
# one whose job is gone (its worker killed) is swept by the next worker to start or finish a job there.
KS_JOB_SCRATCH_DIR = Path(env_str("KS_JOB_SCRATCH_DIR", str(Path(tempfile.gettempdir()) / "kernel-studio-jobs")))
