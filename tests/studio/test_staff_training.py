"""RL training runs from the staff area: a tiny CPU run launched from a config on a real RQ worker, stopped and
resumed on its folder, its page (charts of every metric, stage, log, checkpoints, plots, recent trajectories opened
in the viewer), a checkpoint served as a policy for studio runs, bad configs refused with nothing stored, staff only."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import django_rq
import pytest
from django.contrib.auth import get_user_model
from django.db import connection

from studio.models import Problem, Run, ServedCheckpoint, TrainingRun

pytestmark = pytest.mark.django_db(transaction=True)
ROOT = Path(__file__).resolve().parents[2]
# toy.yaml cut to RFT on one heuristic episode, then a value pre-training long enough to stop mid-way (it never
# converges: patience is out of reach), half a second to a few seconds an epoch.
TINY = "\n".join(
    [
        "stages=[rft, value]",
        "eval_episodes=0",
        "episode.max_turns=2",
        "rft.epochs=1",
        "value.episodes=1",
        "value.max_epochs=6",
        "value.patience=1000",
    ]
)


@pytest.fixture
def staff(client):
    user = get_user_model().objects.create_user("root", password="pw", is_staff=True)
    client.force_login(user)
    for name in ("staff-cpu", "train"):
        django_rq.get_queue(name).empty()
    return user


@pytest.fixture
def worker(tmp_path, settings):
    """A real `rqworker staff-cpu` (not burst: it must outlive a stopped job to run the resumed one)."""
    settings.KS_TRAINING_DIR = tmp_path / "training"
    db = connection.settings_dict
    env = {
        **os.environ,
        "DATABASE_URL": f"postgres://{db['USER']}@{db['HOST']}:{db['PORT']}/{db['NAME']}",
        "KS_CACHE_DIR": str(tmp_path / "cache"),
        "KS_TRAINING_DIR": str(tmp_path / "training"),
        "HF_HUB_OFFLINE": "1",
        "KS_CPU_THREADS": "1",
        "KS_SANDBOX_MEMORY_MB": "4096",
    }
    log = (tmp_path / "worker.log").open("w")
    proc = subprocess.Popen(
        [sys.executable, "manage.py", "rqworker", "staff-cpu"],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    proc.log = tmp_path / "worker.log"
    yield proc
    os.killpg(proc.pid, signal.SIGTERM)  # a warm shutdown; an idle worker may wait out its dequeue first
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    # The worker's sessions end a moment after it does; the test database is dropped only once they have.
    wait_for(lambda: other_sessions() == 0, "the worker's database sessions to end", 30)


def other_sessions():
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )
        return cursor.fetchone()[0]


def wait_for(check, what, timeout=300):
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what() if callable(what) else what}"
        time.sleep(0.5)


def test_a_run_trains_is_stopped_resumed_and_serves_a_checkpoint(client, staff, worker):
    response = client.post("/staff/training/", {"preset": "toy.yaml", "overrides": TINY, "name": "toy"})
    run = TrainingRun.objects.get()
    assert response.status_code == 302 and response["Location"] == f"/staff/training/{run.pk}"
    assert run.device == "cpu" and run.overrides[0] == "stages=[rft, value]" and "run_dir: runs/toy" in run.config

    def value_steps():
        run.refresh_from_db()
        return run.current_stage == "value" and run.last_metrics["step"] >= 1

    wait_for(value_steps, "value pre-training to log two epochs")
    page = client.get(f"/staff/training/{run.pk}", HTTP_HX_REQUEST="true").content.decode()
    assert 'id="training-progress"' in page and 'hx-trigger="every 3s"' in page and "<h3>rft</h3>" in page

    assert client.post(f"/staff/training/{run.pk}/stop").status_code == 302
    run.refresh_from_db()
    assert run.status == "stopped" and run.error == "stopped by root"
    job = django_rq.get_queue("staff-cpu").fetch_job(run.job_id)
    wait_for(lambda: job.get_status(refresh=True) in ("stopped", "failed"), "the work horse to be stopped", 30)
    folder = Path(run.folder)
    stopped_at = max(r["step"] for r in read(folder) if r["stage"] == "value")
    assert stopped_at < 5 and (folder / "checkpoints" / "rft" / "step-0" / "actor").is_dir()

    assert client.post(f"/staff/training/{run.pk}/resume").status_code == 302
    run.refresh_from_db()
    assert run.status in ("queued", "running") and run.job_id != job.id
    wait_for(
        lambda: TrainingRun.objects.get(pk=run.pk).status not in ("queued", "running"),
        lambda: f"the resumed run; the worker said {worker.log.read_text()[-3000:]}",
    )
    run.refresh_from_db()
    assert run.status == "done", run.error + (folder / "train.log").read_text()[-3000:]
    log = (folder / "train.log").read_text()
    assert "rft: already done" in log and "value: resuming after step" in log
    assert sorted({r["step"] for r in read(folder) if r["stage"] == "value"}) == list(range(6))
    assert run.last_metrics["stage"] == "value" and run.last_metrics["step"] == 5

    page = client.get(f"/staff/training/{run.pk}").content.decode()
    for metric in ("value_loss", "explained_variance", "loss", "kept_fraction"):
        assert f'aria-label="{metric}"' in page, metric
    assert 'data-points="6"' in page and "value: resuming after step" in page
    assert "Serve this checkpoint" in page and "Resume" not in page and "Stop</button>" not in page
    plots = sorted(p.name for p in (folder / "plots").glob("*.png"))
    assert plots and f"/staff/training/{run.pk}/plots/{plots[0]}" in page
    image = client.get(f"/staff/training/{run.pk}/plots/{plots[0]}")
    assert image.status_code == 200 and image["Content-Type"] == "image/png"
    assert client.get(f"/staff/training/{run.pk}/plots/nope.png").status_code == 404
    check_recent_trajectories_open_in_the_viewer(client, run, page)

    # A value checkpoint holds only a critic: nothing to serve.
    refused = client.post(f"/staff/training/{run.pk}/serve", {"stage": "value", "step": 5}, follow=True)
    assert "holds no actor" in refused.content.decode() and not ServedCheckpoint.objects.exists()
    served_page = client.post(f"/staff/training/{run.pk}/serve", {"stage": "rft", "step": 0}, follow=True)
    served = ServedCheckpoint.objects.get()
    assert f"served as <code>checkpoint:{served.pk}</code>" in served_page.content.decode()
    assert (Path(served.path) / "model.safetensors").is_file() and (Path(served.path) / "tokenizer.json").is_file()
    check_served_checkpoint_is_a_policy_choice(client, staff, served)


def check_recent_trajectories_open_in_the_viewer(client, run, page):
    import re
    from urllib.parse import unquote

    # RFT's and value pre-training's episodes wrote their trajectories under episodes/STAGE/step-0/rank-0/.
    links = [unquote(link) for link in re.findall(rf'href="/staff/training/{run.pk}/episode\?path=([^"]+)"', page)]
    assert {link.split("/")[0] for link in links} == {"rft", "value"}, links
    assert all(link.split("/")[1:3] == ["step-0", "rank-0"] and link.endswith("/trajectory.json") for link in links)
    episode = client.get(f"/staff/training/{run.pk}/episode", {"path": links[0]}).content.decode()
    assert "Turn 1" in episode and f"Training run #{run.pk}: toy" in episode and "verdict:" in episode
    for bad in ("../submitted.yaml", "../../training/x/trajectory.json", "rft/nope/trajectory.json", ""):
        assert client.get(f"/staff/training/{run.pk}/episode", {"path": bad}).status_code == 404, bad


def read(folder):
    import json

    return [json.loads(line) for line in (folder / "metrics.jsonl").read_text().splitlines() if line.strip()]


def check_served_checkpoint_is_a_policy_choice(client, staff, served):
    from django.test import override_settings

    from agent.policies import make_policy
    from studio.serving import policy_for

    problem = Problem.objects.create(owner=staff, name="p", source="x", sha256="0" * 64, device="cpu")
    form = client.get(f"/problems/{problem.pk}").content.decode()
    assert f'value="checkpoint:{served.pk}"' in form and f"Checkpoint: {served}" in form
    django_rq.get_queue("cpu").empty()
    client.post(f"/problems/{problem.pk}/runs", {"policy": served.policy, "device": "cpu", "max_turns": 1})
    assert Run.objects.get().policy == served.policy
    django_rq.get_queue("cpu").empty()
    backend, options = policy_for(served.policy)
    assert (backend, options) == ("transformers", {"model": served.path})
    policy = make_policy(backend, **options, max_new_tokens=4)  # the exported folder really loads
    assert policy.tokenizer.chat_template
    with override_settings(KS_POLICY_ENDPOINT_SET=True):
        assert policy_for(served.policy)[0] == "openai"


def test_it_rejects_bad_yaml_and_unknown_keys_and_stores_nothing(client, staff):
    bad = client.post("/staff/training/", {"config": "stages: [rft\nmodel: {"})
    assert bad.status_code == 400 and "The config is not valid YAML" in bad.content.decode()
    unknown = client.post("/staff/training/", {"preset": "toy.yaml", "overrides": "ppo.cliip=0.1"})
    assert unknown.status_code == 400 and "unknown key(s) ppo.cliip" in unknown.content.decode()
    scalar = client.post("/staff/training/", {"config": "just words"})
    assert scalar.status_code == 400 and "must be a mapping" in scalar.content.decode()
    neither = client.post("/staff/training/", {"name": "x"})
    assert neither.status_code == 400 and "Choose one of the configs or paste" in neither.content.decode()
    both = client.post("/staff/training/", {"preset": "toy.yaml", "config": "seed: 1"})
    assert both.status_code == 400
    assert not TrainingRun.objects.exists() and django_rq.get_queue("staff-cpu").count == 0


def test_a_gpu_config_is_queued_on_the_train_queue_and_a_queued_run_stops_at_once(client, staff):
    client.post("/staff/training/", {"preset": "gpu.yaml", "stage": "ppo"})
    run = TrainingRun.objects.get()
    job = django_rq.get_queue("train").fetch_job(run.job_id)
    assert job is not None and run.device == "cuda" and run.stage == "ppo" and run.name == "gpu"
    client.post(f"/staff/training/{run.pk}/stop")
    run.refresh_from_db()
    assert run.status == "stopped" and job.get_status(refresh=True) == "canceled"
    client.post(f"/staff/training/{run.pk}/resume")
    run.refresh_from_db()
    assert run.status == "queued" and django_rq.get_queue("train").fetch_job(run.job_id).get_status() == "queued"
    django_rq.get_queue("train").empty()


def test_training_pages_are_refused_to_users_who_are_not_staff(client):
    user = get_user_model().objects.create_user("ada", password="pw")
    client.force_login(user)
    run = TrainingRun.objects.create(created_by=user, name="r", config="seed: 0")
    for url in (
        "/staff/training/",
        f"/staff/training/{run.pk}",
        f"/staff/training/{run.pk}/plots/a.png",
        f"/staff/training/{run.pk}/episode?path=rft/x/trajectory.json",
    ):
        assert client.get(url).status_code == 403, url
    for url in (
        "/staff/training/",
        f"/staff/training/{run.pk}/stop",
        f"/staff/training/{run.pk}/resume",
        f"/staff/training/{run.pk}/serve",
    ):
        assert client.post(url, {"preset": "toy.yaml"}).status_code == 403, url
    run.refresh_from_db()
    assert TrainingRun.objects.count() == 1 and run.status == "queued"


def test_a_run_trained_elsewhere_is_imported_with_its_charts_and_plots(client, staff, tmp_path, settings):
    """The H100 run of bench/results/rl-pipeline-h100 (config, metrics, log, plots) brought into the studio."""
    from django.core.management import call_command
    from django.core.management.base import CommandError

    settings.KS_TRAINING_DIR = tmp_path / "training"
    source = ROOT / "bench" / "results" / "rl-pipeline-h100"
    call_command("import_training_run", str(source), "--user", "root", "--name", "h100")
    run = TrainingRun.objects.get()
    assert run.name == "h100" and run.status == TrainingRun.Status.DONE and run.device == "cuda"
    assert Path(run.folder) == tmp_path / "training" / str(run.pk) and (Path(run.folder) / "metrics.jsonl").is_file()
    assert run.current_stage == "eval" and run.started_at < run.finished_at
    page = client.get(f"/staff/training/{run.pk}").content.decode()
    for metric in ("ratio_max", "entropy", "explained_variance", "kept"):
        assert f">{metric}<" in page or f"{metric}</" in page, metric
    assert "ppo-stability.png" in page
    plot = client.get(f"/staff/training/{run.pk}/plots/ppo-stability.png")
    assert plot.status_code == 200 and b"".join(plot.streaming_content).startswith(b"\x89PNG")

    # a run cut short before its last stage is listed as stopped (resumable); a folder that is no run is refused
    partial = tmp_path / "partial"
    partial.mkdir()
    (partial / "config.yaml").write_text((source / "config.yaml").read_text())
    (partial / "metrics.jsonl").write_text(
        "".join(
            line + "\n" for line in (source / "metrics.jsonl").read_text().splitlines() if '"stage": "ppo"' not in line
        )
    )
    call_command("import_training_run", str(partial), "--user", "root")
    stopped = TrainingRun.objects.get(name="partial")
    assert stopped.status == TrainingRun.Status.STOPPED and "resume" in stopped.error
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "config.yaml").write_text("tasks: {source: t.jsonl}\nppo: {stepz: 3}\n")
    with pytest.raises(CommandError, match=r"not a run config: unknown key\(s\) ppo.stepz"):
        call_command("import_training_run", str(broken), "--user", "root")
    with pytest.raises(CommandError, match="has no config.yaml"):
        call_command("import_training_run", str(tmp_path / "training"), "--user", "root")
    with pytest.raises(CommandError, match="no user 'nobody'"):
        call_command("import_training_run", str(source), "--user", "nobody")
    assert TrainingRun.objects.count() == 2
