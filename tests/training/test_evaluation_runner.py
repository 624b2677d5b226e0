"""The in-process scheduler of evaluations: episodes that ran out of GPU memory beside others run again alone."""

import importlib
import json
from pathlib import Path

from training.evaluation import runner
from training.evaluation.folder import EvalFolder
from training.evaluation.jobs import EpisodeRequest
from training.evaluation.problems import BenchProblem
from training.evaluation.progress import Progress

PROBLEM = "import torch\nclass Model(torch.nn.Module):\n    def forward(self, x):\n        return x\n"


def requests(names, folder):
    return [
        EpisodeRequest(
            arm="strict",
            problem=BenchProblem(level=1, problem_id=i, name=name, code=PROBLEM).to_json(),
            policy="stand-in",
            policy_options={"folder": str(folder)},
        )
        for i, name in enumerate(names, 1)
    ]


def test_an_episode_out_of_gpu_memory_beside_others_runs_again_alone_and_only_its_alone_result_is_stored(
    tmp_path, monkeypatch
):
    # The job runs in spawned processes, which import it by name from the parent's sys.path.
    monkeypatch.syspath_prepend(str(Path(__file__).parent))
    memory_contention_job = importlib.import_module("memory_contention_job")
    folder = EvalFolder(tmp_path / "out").open({"policy": "stand-in"}, resume=False)
    work = runner.Runner(folder, Progress(4, quiet=True))
    names = ["small1", "big1", "small2", "big2"]
    runner.run_local(requests(names, tmp_path), work, workers=3, job=memory_contention_job.run)

    stored = [json.loads(line) for line in (tmp_path / "out" / "results.jsonl").read_text().splitlines()]
    assert sorted(r["name"] for r in stored) == sorted(names)  # each stored once
    assert all(r["verdict"]["correct"] for r in stored)
    runs = (tmp_path / "log").read_text().splitlines()
    # Both big episodes first ran beside others and ran out of memory, then once more each, alone.
    assert [line for line in runs if line.startswith("big")].count("big1 beside=0") == 1
    assert [line for line in runs if line.startswith("big")].count("big2 beside=0") == 1
    assert runs[-2:] == ["big1 beside=0", "big2 beside=0"] or runs[-2:] == ["big2 beside=0", "big1 beside=0"]
    assert work.not_started == 0


def test_out_of_memory_is_read_from_the_error_or_the_verdict_log_and_never_from_a_correct_result():
    oom = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 7.00 GiB."
    assert runner.out_of_gpu_memory({"result": {"error": f"InvalidProblem: importing the problem failed: {oom}"}})
    assert runner.out_of_gpu_memory({"result": {"verdict": {"correct": False, "log": oom}}})
    assert not runner.out_of_gpu_memory({"result": {"verdict": {"correct": True, "log": oom}}})
    assert not runner.out_of_gpu_memory({"result": {"verdict": {"correct": False, "log": "max_abs_error 3.1"}}})
    assert not runner.out_of_gpu_memory({"result": {"error": "", "verdict": None}})


def test_a_re_timing_out_of_gpu_memory_runs_again_alone_though_its_stored_verdict_is_correct():
    # A re-timing whose evaluation broke keeps the stored (correct) verdict and puts the reason beside it.
    oom = (
        "InvalidProblem: importing the problem failed: OutOfMemoryError: CUDA out of memory. Tried to allocate 7.00 GiB"
    )
    kept = {"correct": True, "log": ""}
    assert runner.out_of_gpu_memory({"result": {"verdict": kept, "extra": {"retime_error": oom}}})
    assert not runner.out_of_gpu_memory({"result": {"verdict": kept, "extra": {"retime_error": "SyntaxError: x"}}})
    assert not runner.out_of_gpu_memory({"result": {"verdict": kept, "extra": {"retimed": {"protocol": 2}}}})


def test_each_request_carries_one_episode_record_with_its_arm_settings_on_the_evaluation_device(tmp_path):
    from training.evaluation.jobs import episodes_of

    spec = {
        "device": "cpu",
        "max_turns": 5,
        "wall_clock_s": None,
        "context_tokens": 8192,
        "response_tokens": 64,
        "arms": {"strict": {"device": "cpu", "strict": True}, "relaxed": {"device": "cpu", "strict": False}},
    }
    folder = EvalFolder(tmp_path / "out").open({"policy": "heuristic"}, resume=False)
    problem = BenchProblem(level=1, problem_id=1, name="1_Copy", code=PROBLEM)
    pending, done = runner.pending_requests(folder, [problem], episodes_of(spec), "heuristic", {})
    assert done == 0 and sorted(r.arm for r in pending) == ["relaxed", "strict"]
    for request in pending:
        again = EpisodeRequest.from_json(json.loads(json.dumps(request.to_json())))
        assert again == request and again.episode.max_turns == 5 and again.episode.eval.device == "cpu"
        assert again.episode.eval.strict == (request.arm == "strict")
