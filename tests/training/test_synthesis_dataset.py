"""The dataset files: versioned records that round-trip, runs that resume past a line cut by a crash, a summary of
what each filter removed and of the kept set, and runs that refuse to continue under other settings."""

import json

import pytest

from sandbox.jsonl import append_jsonl
from training.synthesis import dataset
from training.synthesis.dataset import Attempt, DatasetError, RunConfig, TaskRecord, summarize
from training.synthesis.runner import Run


def task(index, classes=("activation",), depth=1, eager_ms=2.0):
    return TaskRecord(
        task_id=f"r-{index:06d}",
        name=f"t{index}",
        source="class Model: ...",
        seeds=["F.gelu"] * depth,
        op_classes=list(classes),
        fusion_depth=depth,
        inputs=[{"shape": [2, 8], "dtype": "float32"}],
        outputs={"shape": [2, 8], "dtype": "float32"},
        dtype="float32",
        device="cpu",
        eager_ms=eager_ms,
        compiled_ms=eager_ms / 2,
        compile_s=3.0,
        fingerprint=f"graph:{index}",
        verdicts=[{"filter": "runs", "passed": True, "reason": ""}],
    )


def test_records_round_trip_through_json():
    record = task(3)
    assert TaskRecord.from_json(json.loads(json.dumps(record.to_json()))) == record
    config = RunConfig(device="cuda", window_ms=(1.0, 100.0), classes=("mlp",))
    assert RunConfig.from_json(json.loads(json.dumps(config.to_json()))) == config
    with pytest.raises(DatasetError, match="newer than this code"):
        TaskRecord.from_json({**record.to_json(), "version": 99})


def test_a_resumed_run_drops_a_line_cut_by_a_crash_and_appends_after_whole_lines(tmp_path):
    out = tmp_path / "ops.jsonl"
    run = Run(out, RunConfig(device="cpu"))
    run.record(Attempt(0, "x", [], [], 1, "program", False, [], "runs"))
    attempts = dataset.paths(out)["attempts"]
    with open(attempts, "a") as fh:
        fh.write('{"index": 1, "cut')
    resumed = Run(out, RunConfig(device="cpu"))
    assert [a.index for a in resumed.attempts] == [0] and resumed.next_index == 1
    resumed.record(Attempt(1, "y", [], [], 1, "program", False, [], "runs"))
    assert [a.index for a in Run(out, RunConfig(device="cpu")).attempts] == [0, 1]


def test_the_summary_counts_removals_and_describes_the_kept_set():
    kept = [task(0, ("convolution", "activation"), 2, 3.0), task(1, ("activation",), 1, 40.0)]
    attempts = [
        Attempt(0, "t0", [], kept[0].op_classes, 2, "program", True, [], exec_s=4.0, pipeline_s=0.5),
        Attempt(1, "t1", [], kept[1].op_classes, 1, "program", True, [], exec_s=4.0, pipeline_s=0.5),
        Attempt(2, "x", [], [], 3, "program", False, [], "compiles", exec_s=2.0, pipeline_s=0.5),
        Attempt(3, "y", [], [], 1, "program", False, [], "not_duplicate", exec_s=0.0, pipeline_s=0.5),
    ]
    summary = summarize(attempts, kept, wall_s=12.0)
    assert summary["attempts"] == 4 and summary["kept"] == 2 and summary["kept_share"] == 0.5
    assert summary["removed_by"] == {"compiles": 1, "not_duplicate": 1}
    dist = summary["distribution"]
    assert dist["op_classes"] == {"activation": 2, "convolution": 1}
    assert dist["fusion_depth"] == {"1": 1, "2": 1}
    assert sum(b["count"] for b in dist["eager_ms"]) == 2 and dist["eager_ms_values"] == [3.0, 40.0]
    assert summary["time"] == {"exec_s": 10.0, "pipeline_s": 2.0, "wall_s": 12.0, "exec_share": 0.8333}


def test_a_run_refuses_to_continue_under_other_settings(tmp_path):
    out = tmp_path / "ops.jsonl"
    first = Run(out, RunConfig(device="cpu", seed=1))
    again = Run(out, RunConfig(device="cpu", seed=1, timeout_s=5.0))  # the timeout may change
    assert again.run_id == first.run_id
    with pytest.raises(DatasetError, match=r"started with other settings \(seed differ\)"):
        Run(out, RunConfig(device="cpu", seed=2))


def test_a_run_continues_after_the_last_recorded_attempt_and_trusts_the_tasks_file(tmp_path):
    out = tmp_path / "ops.jsonl"
    run = Run(out, RunConfig(device="cpu"))
    record = task(4)
    record.task_id = f"{run.run_id}-000004"
    run.record(Attempt(3, "x", [], [], 1, "program", False, [], "runs"))
    # A kept task whose attempt line was lost in a crash: still kept, and the next index follows it.
    append_jsonl(out, record.to_json())
    resumed = Run(out, RunConfig(device="cpu"))
    assert [t.task_id for t in resumed.tasks] == [record.task_id]
    assert resumed.next_index == 5 and sorted(a.index for a in resumed.attempts) == [3, 4]
    assert resumed.initial_claims()[record.fingerprint] == record.task_id


def test_an_existing_file_that_is_not_a_run_is_left_alone(tmp_path):
    out = tmp_path / "mine.jsonl"
    out.write_text('{"something": "else"}\n')
    with pytest.raises(DatasetError, match="is not a synthesis run"):
        Run(out, RunConfig())
    assert out.read_text() == '{"something": "else"}\n'
