"""A package build whose job can never finish (its work horse killed, its job stopped) reads as a sentence to act on
with a Try again, instead of "building the package" polling forever; a second click builds nothing twice."""

import time

import django_rq
import psutil
import pytest
from django.contrib.auth import get_user_model

from agent.heuristic.analyze import analyze
from agent.heuristic.codegen import workspace_files
from agent.heuristic.plan import make_plan
from sandbox import Verdict
from studio import actions, packages, queues
from studio.models import KernelVersion, Problem, Run

pytestmark = pytest.mark.django_db(transaction=True)
SOURCE = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x)

def get_inputs():
    return [torch.randn(16, 256)]

def get_init_inputs():
    return []
"""


@pytest.fixture
def version(client, settings, tmp_path):
    settings.KS_PACKAGES_DIR = tmp_path / "packages"
    owner = get_user_model().objects.create_user("ada", password="pw")
    client.force_login(owner)
    django_rq.get_queue(queues.queue_name("package", "cpu")).empty()
    problem = Problem.objects.create(owner=owner, name="relu", source=SOURCE, sha256="0" * 64, device="cpu")
    run = Run.objects.create(owner=owner, problem=problem, status="succeeded", max_turns=3)
    source = tmp_path / "relu.py"
    source.write_text(SOURCE)
    files = workspace_files(make_plan(analyze(str(source))), "cpu", SOURCE)  # a build of seconds: time to kill it
    verdict = Verdict(status="ok", correct=True, runtime_ms=0.01, eager_ms=0.02, reward=2, speedup_vs_eager=2.0)
    return actions.record_version(run.pk, files, verdict.to_json())


def poll(client, version):
    return client.get(f"/versions/{version.pk}/package", HTTP_HX_REQUEST="true").content.decode()


def wait_for(condition, timeout=60, what="the condition"):
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"{what} did not happen within {timeout} s"
        time.sleep(0.1)


def work_horse(worker):
    """The worker's work horse: RQ forks one per job, so it runs the worker's command line. The worker is a
    subreaper, so processes a job's jails and builds left in sessions of their own can be its children too."""
    parent = psutil.Process(worker.pid)

    def forks():
        found = []
        for child in parent.children():
            try:
                if child.cmdline() == parent.cmdline():
                    found.append(child)
            except psutil.Error:  # gone or a zombie meanwhile: not the running horse
                pass
        return found

    wait_for(lambda: len(forks()) == 1, what="one work horse among the worker's children")
    return forks()[0]


def test_a_second_click_while_it_waits_queues_nothing_more_and_the_page_says_where_it_waits(client, version):
    for _ in range(2):
        page = client.post(f"/versions/{version.pk}/package", HTTP_HX_REQUEST="true").content.decode()
    assert django_rq.get_queue("cpu").job_ids == [packages.job_id(version)]
    assert "building the package on a worker" in page and "0 jobs ahead in the cpu queue" in page
    assert "worker offline: no worker serves the cpu queue" in page


def test_a_stopped_build_says_so_and_tried_again_it_is_queued_afresh(client, version):
    client.post(f"/versions/{version.pk}/package", HTTP_HX_REQUEST="true")
    queues.stop(packages.job_id(version))
    page = poll(client, version)
    assert "The job was stopped before it finished. Retry it to run it again." in page and "Try again" in page
    assert "building the package" not in page
    version.refresh_from_db()
    assert version.package_error == "the package build failed: its job canceled"
    again = client.post(f"/versions/{version.pk}/package", HTTP_HX_REQUEST="true").content.decode()
    assert "building the package on a worker" in again and "Try again" not in again
    version.refresh_from_db()
    assert version.package_error == "" and queues.fetch(packages.job_id(version)).get_status() == "queued"


def test_a_build_whose_work_horse_was_killed_reads_as_the_sentence_with_rqs_text_folded(client, version, start_worker):
    client.post(f"/versions/{version.pk}/package", HTTP_HX_REQUEST="true")
    worker = start_worker("cpu", KS_WARM_POOL="0")
    job = queues.fetch(packages.job_id(version))
    wait_for(lambda: job.get_status(refresh=True) == "started", timeout=120, what="the worker taking the job")
    work_horse(worker).kill()  # as the kernel's OOM killer would
    wait_for(lambda: job.get_status(refresh=True) == "failed", what="RQ marking the job failed")
    page = poll(client, version)
    assert "The worker&#x27;s process was killed (SIGKILL), most often because it ran out of memory." in page
    assert '<details class="failure-details"><summary>details</summary>' in page
    assert "Work-horse terminated unexpectedly; waitpid returned 9" in page and "Try again" in page
    assert not KernelVersion.objects.get(pk=version.pk).package
