"""The Content-Security-Policy header on every kind of page, and templates that need nothing it forbids."""

import re
from pathlib import Path

import pytest
from django.conf import settings
from django.contrib.auth import get_user_model

from studio.models import BenchEvaluation, KernelVersion, Problem, Run, SynthesisRun

pytestmark = pytest.mark.django_db


def directives(response):
    header = response["Content-Security-Policy"]
    return {name: values for name, *values in (part.split() for part in header.split(";"))}


@pytest.fixture
def staff_client(client):
    admin = get_user_model().objects.create_superuser("root", "", "pw")
    client.force_login(admin)
    problem = Problem.objects.create(owner=admin, name="relu", source="# relu", sha256="0" * 64)
    run = Run.objects.create(owner=admin, problem=problem)
    version = KernelVersion.objects.create(problem=problem, run=run, files={"kernels/k.cu": "// k"})
    evaluation = BenchEvaluation.objects.create(created_by=admin)
    synthesis = SynthesisRun.objects.create(created_by=admin, count=1)
    client.pages = {
        "home": "/",
        "upload": "/problems/new",
        "problem": f"/problems/{problem.pk}",
        "run": f"/runs/{run.pk}",
        "versions json": f"/runs/{run.pk}/versions.json",
        "editor": f"/versions/{version.pk}/edit",
        "staff": "/staff/",
        "evaluations": "/staff/evaluations/",
        "evaluation": f"/staff/evaluations/{evaluation.pk}",
        "synthesis runs": "/staff/synthesis/",
        "synthesis run": f"/staff/synthesis/{synthesis.pk}",
        "training runs": "/staff/training/",
        "admin": "/admin/",
        "unknown": "/no/such/page",
        "healthz": "/healthz",
    }
    return client


def test_every_kind_of_page_sends_the_policy(staff_client):
    for name, url in staff_client.pages.items():
        response = staff_client.get(url)
        assert response.status_code in (200, 404), (name, response.status_code)
        policy = directives(response)
        assert policy["script-src"] == ["'self'"], name
        assert policy["connect-src"] == ["'self'", "ws://testserver", "wss://testserver"], name
        assert policy["object-src"] == ["'none'"] and policy["frame-ancestors"] == ["'none'"], name
        assert policy["base-uri"] == ["'self'"] and policy["default-src"] == ["'self'"], name
        # No origin but our own: every source is a keyword, a scheme (data:, blob:) or this host.
        sources = [s for values in policy.values() for s in values]
        assert all(s.startswith("'") or s.endswith(":") or s.endswith("//testserver") for s in sources), sources


def test_the_login_page_and_the_rq_dashboard_send_it_too(client, staff_client):
    anonymous = client.__class__()
    assert directives(anonymous.get("/accounts/login/"))["script-src"] == ["'self'"]
    # django-rq's templates (staff only) carry inline scripts: allowed there and nowhere else.
    assert directives(staff_client.get("/admin/rq/"))["script-src"] == ["'self'", "'unsafe-inline'"]


def test_templates_hold_no_inline_script_or_event_handler():
    inline = re.compile(r"<script(?![^>]*\bsrc=)(?![^>]*application/json)[^>]*>|\son[a-z]+\s*=", re.I)
    offenders = [
        f"{path}: {match.group(0)}"
        for path in Path(settings.BASE_DIR, "templates").rglob("*.html")
        for match in inline.finditer(path.read_text())
    ]
    assert offenders == []
