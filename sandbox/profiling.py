"""Profiles: a per-kernel table from torch.profiler, and achieved bandwidth/throughput from ncu where present."""

import csv
import io
import shutil
from collections import defaultdict

import torch

NCU_METRICS = (
    "gpu__time_duration.sum",
    "dram__throughput.avg.pct_of_peak_sustained_elapsed",
    "sm__throughput.avg.pct_of_peak_sustained_elapsed",
)


def kernel_table(fn, device, reps=5, top=15):
    """Rows {name, calls, total_ms, mean_us, share_pct} of the kernels (CPU: operators) behind fn(), heaviest first."""
    from torch.autograd import DeviceType
    from torch.profiler import ProfilerActivity, profile

    with torch.no_grad():
        fn()
        if device == "cuda":
            torch.cuda.synchronize()
        activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device == "cuda" else [])
        with profile(activities=activities) as prof:
            for _ in range(reps):
                fn()
            if device == "cuda":
                torch.cuda.synchronize()
    totals, calls = defaultdict(float), defaultdict(int)
    for evt in prof.events():
        if device == "cuda":
            if evt.device_type != DeviceType.CUDA:
                continue
            us = evt.time_range.elapsed_us()
        else:
            # CPU target: top-level operators only, so nested calls are not counted twice.
            if evt.cpu_parent is not None or evt.device_type != DeviceType.CPU:
                continue
            us = evt.cpu_time_total
        totals[evt.name] += us
        calls[evt.name] += 1
    grand = sum(totals.values()) or 1.0
    rows = [
        {
            "name": name[:160],
            "calls": calls[name] // reps or calls[name],
            "total_ms": totals[name] / 1000 / reps,
            "mean_us": totals[name] / calls[name],
            "share_pct": 100.0 * totals[name] / grand,
        }
        for name in totals
    ]
    rows.sort(key=lambda r: -r["total_ms"])
    return rows[:top]


def format_table(rows):
    if not rows:
        return "(no kernels recorded)"
    lines = [f"{'share':>6}  {'ms/call':>9}  {'calls':>5}  name"]
    for r in rows:
        lines.append(f"{r['share_pct']:5.1f}%  {r['total_ms']:9.4f}  {r['calls']:5d}  {r['name']}")
    return "\n".join(lines)


def format_ncu(rows):
    if not rows:
        return "(no kernels profiled)"
    lines = [f"{'us':>9}  {'DRAM %':>6}  {'SM %':>5}  name"]
    for r in rows[:10]:
        lines.append(f"{r['duration_us']:9.2f}  {r['dram_pct']:6.1f}  {r['sm_pct']:5.1f}  {r['name']}")
    return "\n".join(lines)


def ncu_available():
    return shutil.which("ncu") is not None


def ncu_metrics(argv, jail, timeout=300, launches=30):
    """Run ARGV under ncu in JAIL; ([{name, duration_us, dram_pct, sm_pct}], error text) averaged per kernel."""
    cmd = [
        "ncu",
        "--csv",
        "--print-units",
        "base",
        "--metrics",
        ",".join(NCU_METRICS),
        "--launch-count",
        str(launches),
        "--target-processes",
        "all",
    ] + list(argv)
    exit = jail.run(cmd, timeout)
    text = exit.output
    start = text.find('"ID"')
    if start < 0:
        return [], f"ncu {exit.describe()}: {text[-2000:]}"
    rows = defaultdict(lambda: defaultdict(list))
    for row in csv.DictReader(io.StringIO(text[start:])):
        try:
            rows[row["Kernel Name"]][row["Metric Name"]].append(float(row["Metric Value"].replace(",", "")))
        except (KeyError, ValueError, AttributeError):
            continue
    mean = lambda xs: sum(xs) / len(xs) if xs else 0.0  # noqa: E731
    table = [
        {
            "name": name[:160],
            "duration_us": mean(m[NCU_METRICS[0]]) / 1000.0,
            "dram_pct": mean(m[NCU_METRICS[1]]),
            "sm_pct": mean(m[NCU_METRICS[2]]),
        }
        for name, m in rows.items()
    ]
    table.sort(key=lambda r: -r["duration_us"])
    return table, ""
