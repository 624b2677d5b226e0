"""The evaluation's report: DIR/metrics.json and DIR/metrics.md (per level and overall, each arm side by side),
speedups against PyTorch's defaults and against precision-matched (TF32) baselines in labelled columns, with the CUDA
Agent paper's published numbers as a labelled reference row."""

import json
from datetime import datetime, timezone

from sandbox.reward import meaning
from training.evaluation import metrics

# Published in the CUDA Agent paper (2026) for KernelBench levels 1-3; quoted, not measured by this project.
PAPER = {
    "label": "CUDA Agent (paper, published; not measured here)",
    "levels": {"1": {"fast_1_compiled": 1.00}, "2": {"fast_1_compiled": 1.00}, "3": {"fast_1_compiled": 0.92}},
    "overall": {"correct_rate": 0.988},
}
DASH = "—"
NOT_MEASURED = "not measured"
# (metrics key, label): every baseline a speedup is counted against, PyTorch's defaults first (the reward's basis).
BASELINES = (
    ("eager", "eager (default)"),
    ("compiled", "torch.compile (default)"),
    ("eager_tf32", "eager (TF32-matched)"),
    ("compiled_tf32", "torch.compile (TF32-matched)"),
)
PRECISIONS = (
    "Speedups are against baselines at PyTorch's defaults (*default*: full-FP32 matmuls, cuDNN convolutions in TF32 "
    "as PyTorch ships them; the reward's basis, as in the paper) and against precision-matched ones (*TF32-matched*: "
    "TF32 allowed for matmuls and convolutions alike, measured on CUDA), where what a kernel gains from precision "
    f'alone no longer counts. "{NOT_MEASURED}": the results carry no such baseline (verdicts from before the '
    "precision-matched baselines, or the CPU target)."
)


def build(folder):
    """metrics.json's content from the folder's stored results (every arm, every level run so far)."""
    results = folder.results.read().values()
    arms = sorted({r.arm for r in results})
    return {
        "generated_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "evaluation": folder.read_spec(),
        "conventions": metrics.__doc__.split("\n\n", 1)[1].strip(),
        "arms": {arm: metrics.compute(r for r in results if r.arm == arm) for arm in arms},
        "reference": PAPER,
    }


def _pct(value):
    return DASH if value is None else f"{100 * value:.1f}%"


def _x(value):
    return DASH if value is None else f"{value:.2f}x"


def _num(value, digits=2):
    return DASH if value is None else f"{value:.{digits}f}"


def _baseline(m, baseline, show):
    """SHOW(the group's metrics of BASELINE), or "not measured" where no result of the group carries that baseline."""
    b = (m or {}).get(baseline)
    return show(b) if b and b.get("measured") else NOT_MEASURED


def _fast_1(m, baseline):
    return _baseline(m, baseline, lambda b: _pct(b["fast_p"]["1.0"]))


def _geomeans(m, baseline):
    return _baseline(m, baseline, lambda b: f"{_x(b['geomean_correct'])} / {_x(b['geomean_all'])}")


def _mean_reward(m):
    """The mean reward with its schedule named ("1.85 (paper)"); one per schedule where verdicts used several."""
    rewards = m.get("rewards") or {}
    return " / ".join(f"{_num(r['mean'])} ({schedule})" for schedule, r in rewards.items()) or DASH


def _rows(data):
    yield from ((f"level {level}", m) for level, m in data["levels"].items())
    yield "overall", data["overall"]


def _headline(arm_data):
    lines = [
        "| level | problems | correct | fast_1 vs eager (default) | fast_1 vs compile (default) | geomean vs eager, "
        "default (correct / all) | geomean vs compile, default (correct / all) | geomean vs eager, TF32-matched "
        "(correct / all) | geomean vs compile, TF32-matched (correct / all) | mean reward | mean turns | mean wall |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for name, m in _rows(arm_data):
        lines.append(
            f"| {name} | {m['problems']} | {m['correct']} ({_pct(m['correct_rate'])}) | "
            f"{_fast_1(m, 'eager')} | {_fast_1(m, 'compiled')} | "
            + " | ".join(_geomeans(m, b) for b in ("eager", "compiled", "eager_tf32", "compiled_tf32"))
            + f" | {_mean_reward(m)} | {_num(m['mean_turns'], 1)} | {_num(m['mean_wall_s'], 0)} s |"
        )
    return lines


def _reference(data):
    """This run's headline numbers beside the paper's published ones, the latter labelled as such."""
    levels = sorted({lv for a in data["arms"].values() for lv in a["levels"]} | set(PAPER["levels"]))
    lines = [
        "| | " + " | ".join(f"level {lv}" for lv in levels) + " | overall |",
        "| --- |" + " ---: |" * (len(levels) + 1),
    ]

    def row(label, pick, groups, overall):
        return f"| {label} | " + " | ".join(_pct(pick(groups.get(lv))) for lv in levels) + f" | {_pct(pick(overall))} |"

    def measured(key):
        return lambda m: (
            None
            if not m or not m.get("problems")
            else (m["correct_rate"] if key == "correct_rate" else m["compiled"]["fast_p"]["1.0"])
        )

    for arm, arm_data in data["arms"].items():
        for key, what in (("fast_1_compiled", "faster than torch.compile"), ("correct_rate", "correct")):
            lines.append(row(f"this run (`{arm}`): {what}", measured(key), arm_data["levels"], arm_data["overall"]))
    for key, what in (("fast_1_compiled", "faster than torch.compile"), ("correct_rate", "correct")):
        lines.append(
            row(f"*{PAPER['label']}*: {what}", lambda m: (m or {}).get(key), PAPER["levels"], PAPER["overall"])
        )
    return lines


def _fast_p(arm_data):
    ps = metrics.P_VALUES
    lines = [
        "| level | baseline | " + " | ".join(f"fast_{p:g}" for p in ps) + " |",
        "| --- | --- |" + " ---: |" * len(ps),
    ]
    for name, m in _rows(arm_data):
        for baseline, label in BASELINES:
            cells = [_baseline(m, baseline, lambda b, p=p: _pct(b["fast_p"][str(p)])) for p in ps]
            lines.append(f"| {name} | {label} | " + " | ".join(cells) + " |")
    return lines


def _rewards(arm_data):
    """One table per reward schedule the verdicts used, its levels named by what they mean."""
    lines = []
    schedules = sorted({schedule for _, m in _rows(arm_data) for schedule in m.get("rewards", {})})
    for schedule in schedules:
        values = sorted({int(k) for _, m in _rows(arm_data) for k in m["rewards"].get(schedule, {}).get("counts", {})})
        lines += [
            f"Rewards under the `{schedule}` schedule:",
            "",
            "| level | problems | "
            + " | ".join(f"{v} ({meaning(schedule, v)})" for v in values)
            + " | mean | statuses | errors |",
            "| --- | ---: |" + " ---: |" * len(values) + " ---: | --- | ---: |",
        ]
        for name, m in _rows(arm_data):
            r = m["rewards"].get(schedule)
            if not r:
                continue
            statuses = ", ".join(f"{k} {v}" for k, v in m["statuses"].items())
            lines.append(
                f"| {name} | {r['problems']} | "
                + " | ".join(str(r["counts"].get(str(v), 0)) for v in values)
                + f" | {_num(r['mean'])} | {statuses} | {m['errors']} |"
            )
        lines.append("")
    return lines[:-1]


COMPARED = (
    ("correct rate", lambda m: _pct(m["correct_rate"])),
    ("fast_1 vs eager (default)", lambda m: _fast_1(m, "eager")),
    ("fast_1 vs torch.compile (default)", lambda m: _fast_1(m, "compiled")),
    ("geomean vs eager, default (correct)", lambda m: _baseline(m, "eager", lambda b: _x(b["geomean_correct"]))),
    (
        "geomean vs torch.compile, default (correct)",
        lambda m: _baseline(m, "compiled", lambda b: _x(b["geomean_correct"])),
    ),
    (
        "geomean vs eager, TF32-matched (correct)",
        lambda m: _baseline(m, "eager_tf32", lambda b: _x(b["geomean_correct"])),
    ),
    (
        "geomean vs torch.compile, TF32-matched (correct)",
        lambda m: _baseline(m, "compiled_tf32", lambda b: _x(b["geomean_correct"])),
    ),
    ("mean reward", _mean_reward),
)


def _comparison(data):
    arms = list(data["arms"])
    lines = ["| level | metric | " + " | ".join(f"`{a}`" for a in arms) + " |", "| --- | --- |" + " ---: |" * len(arms)]
    names = sorted({lv for a in arms for lv in data["arms"][a]["levels"]}) + ["overall"]
    for level in names:
        label = "overall" if level == "overall" else f"level {level}"
        per_arm = [
            data["arms"][a]["overall"] if level == "overall" else data["arms"][a]["levels"].get(level) for a in arms
        ]
        for metric, show in COMPARED:
            lines.append(
                f"| {label} | {metric} | "
                + " | ".join(show(m) if m and m.get("problems") else DASH for m in per_arm)
                + " |"
            )
    return lines


def markdown(data):
    spec = data["evaluation"]
    model = (spec.get("policy_options") or {}).get("model")
    lines = [
        f"# KernelBench evaluation: policy `{spec.get('policy')}`"
        + (f" (model `{model}`)" if model else "")
        + f" on {spec.get('device')}",
        "",
        f"run {spec.get('run_id')}, started {spec.get('created_at')}, report {data['generated_at']}; "
        f"at most {spec.get('max_turns')} turns per episode.",
        "",
    ]
    lines += [PRECISIONS, ""]
    if len(data["arms"]) > 1:
        lines += ["## Sandbox settings side by side", ""] + _comparison(data) + [""]
    for arm, arm_data in data["arms"].items():
        lines += [f"## Sandbox setting `{arm}`", ""] + _headline(arm_data) + [""]
        lines += (
            ["fast_p: share of all problems that are correct and more than p times faster than the baseline.", ""]
            + _fast_p(arm_data)
            + [""]
            + _rewards(arm_data)
            + [""]
        )
    lines += (
        [
            "## Reference",
            "",
            f"The rows in italics are the {PAPER['label']}: the paper reports the share "
            f"faster than torch.compile per level and the correct rate overall; a dash is a number it does not "
            f"publish (or this run did not measure).",
            "",
        ]
        + _reference(data)
        + [""]
    )
    lines += ["## Conventions", "", data["conventions"], ""]
    return "\n".join(lines)


def write(folder):
    """Write DIR/metrics.json and DIR/metrics.md from the stored results; returns the data."""
    data = build(folder)
    (folder.path / "metrics.json").write_text(json.dumps(data, indent=2))
    (folder.path / "metrics.md").write_text(markdown(data))
    return data
