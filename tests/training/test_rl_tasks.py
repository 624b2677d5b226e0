"""The run's task sets: KernelBench rows and synthesized datasets load into files split once into training and
held-out sets, with names kept apart and filters that say what to change when they leave nothing."""

import json

import pytest

from sandbox.jsonl import append_jsonl
from training.rl.config import TasksConfig
from training.rl.tasks import TaskError, load
from training.synthesis.dataset import TaskRecord


def synthesized(index, name):
    return TaskRecord(
        task_id=f"d2ce98d8-{index:06d}",
        name=name,
        source=f"class Model:  # task {index}\n    pass\n",
        seeds=["F.gelu"],
        op_classes=["activation"],
        fusion_depth=1,
        inputs=[{"shape": [2, 8], "dtype": "float32"}],
        outputs={"shape": [2, 8], "dtype": "float32"},
        dtype="float32",
        device="cpu",
        eager_ms=12.0,
        compiled_ms=6.0,
        compile_s=3.0,
        fingerprint=f"graph:{index}",
        verdicts=[{"filter": "runs", "passed": True, "reason": ""}],
    )


def test_a_synthesized_dataset_loads_whole_with_tasks_of_one_name_kept_apart(tmp_path):
    source = tmp_path / "tasks.jsonl"
    for index, name in enumerate(["gelu_sum", "gelu_sum", "Conv3d_relu", "gelu_sum"], 1):
        append_jsonl(source, synthesized(index, name).to_json())
    train, held_out = load(TasksConfig(source=str(source), held_out=0.25), tmp_path / "tasks")
    names = sorted(t.name for t in train + held_out)
    assert names == ["Conv3d_relu", "gelu_sum", "gelu_sum_d2ce98d8_000002", "gelu_sum_d2ce98d8_000004"]
    assert len(held_out) == 1 and not {t.name for t in held_out} & {t.name for t in train}
    sources = {t.name: t.source for t in train + held_out}
    assert "# task 2" in sources["gelu_sum_d2ce98d8_000002"] and "# task 1" in sources["gelu_sum"]
    split = json.loads((tmp_path / "tasks" / "split.json").read_text())
    assert sorted(split["train"] + split["held_out"]) == names


def test_a_level_filter_on_a_dataset_without_levels_says_to_clear_it(tmp_path):
    source = tmp_path / "tasks.jsonl"
    append_jsonl(source, synthesized(1, "gelu_sum").to_json())
    with pytest.raises(TaskError, match=r"no levels .*tasks.levels=\[\]"):
        load(TasksConfig(source=str(source), levels=[1, 2]), tmp_path / "tasks")


def test_kernelbench_rows_are_filtered_by_level_and_a_row_without_code_is_named(tmp_path):
    source = tmp_path / "problems.jsonl"
    rows = [{"name": f"{i}_Op", "level": 1 + i % 2, "code": f"# problem {i}\n"} for i in range(6)]
    source.write_text("".join(json.dumps(r) + "\n" for r in rows))
    train, held_out = load(TasksConfig(source=str(source), levels=[2], held_out=0.0), tmp_path / "tasks")
    assert sorted(t.name for t in train) == ["1_Op", "3_Op", "5_Op"] and held_out == []
    source.write_text(json.dumps({"name": "x"}) + "\n")
    with pytest.raises(TaskError, match=r":1 needs a \"name\" and the problem's \"code\""):
        load(TasksConfig(source=str(source)), tmp_path / "other")
