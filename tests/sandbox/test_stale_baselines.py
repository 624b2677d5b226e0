"""Cached baselines checked by a short probe before they are trusted: an entry measured under load (slower than the
probe) is measured again and replaced, one quieter than the probe is kept."""

import json
import time

import pytest

from sandbox import evaluate, settings
from sandbox.harness import _baseline_key
from sandbox.problem import Problem
from sandbox.verdict import Verdict
from sandbox.workers.reference import cache_entry


@pytest.fixture(scope="module")
def measured(module_files, sources, fast_config):
    """(problem, workspace, the baselines its first evaluation measured and cached): a problem of its own in the
    run's cache, the native add_relu kernel built once."""
    problem = module_files.problem(sources["ELEMENTWISE"] + f"\n# stale baselines {time.time_ns()}\n", "stale.py")
    workspace = module_files.workspace(sources["STABLE_WORKSPACE"])
    first = evaluate(problem, workspace, fast_config)
    assert first.status == "ok" and first.timing["baselines"] == "measured", first.log[-2000:]
    entry = _entry(problem, fast_config)
    assert entry["eager"]["median_ms"] == first.eager_ms
    # What explains the entry to a person reading the cache: when, under what load, how noisy.
    assert set(entry["conditions"]) == {"measured_at", "loadavg", "eager_spread_pct"}
    assert entry["conditions"]["eager_spread_pct"] == entry["eager"]["spread_pct"]
    return problem, workspace, entry, fast_config


def _path(problem, config):
    name, _ = cache_entry(_baseline_key(Problem.read(problem), config), "cpu")
    return settings.cache_dir() / "baselines" / f"{name}.json"


def _entry(problem, config):
    return json.loads(_path(problem, config).read_text())


def _doctor(problem, entry, factor, config):
    """Rewrite the cache entry with its eager median (and the figures around it) FACTOR times what was measured."""
    eager = {**entry["eager"], **{k: entry["eager"][k] * factor for k in ("median_ms", "min_ms", "max_ms")}}
    _path(problem, config).write_text(json.dumps({**entry, "eager": eager}))
    return eager["median_ms"]


def test_a_cached_baseline_much_slower_than_a_probe_is_measured_again_and_replaced(measured):
    problem, workspace, entry, config = measured
    loaded = _doctor(problem, entry, 50.0, config)  # as if measured beside a test suite
    verdict = evaluate(problem, workspace, config)
    assert verdict.status == "ok" and verdict.correct, verdict.log[-2000:]
    note = verdict.timing["baselines"]
    assert note.startswith(f"re-measured: the cached eager median {loaded:.4g} ms was slower than a probe's"), note
    assert verdict.timing["eager_probe"]["median_ms"] * settings.STALE_BASELINE_RATIO < loaded
    assert verdict.eager_ms < loaded / 5 and verdict.speedup_vs_eager < 10, verdict.summary()
    replaced = _entry(problem, config)
    assert replaced["eager"]["median_ms"] == verdict.eager_ms
    assert replaced["conditions"]["replaced"] == note.removeprefix("re-measured: ")
    assert Verdict.loads(verdict.dumps()) == verdict


def test_a_cached_baseline_quieter_than_the_probe_is_kept(measured):
    problem, workspace, entry, config = measured
    quiet = _doctor(problem, entry, 0.5, config)  # as if the machine were busier now than when it was measured
    stored = _path(problem, config).read_bytes()
    verdict = evaluate(problem, workspace, config)
    assert verdict.status == "ok" and verdict.correct, verdict.log[-2000:]
    assert verdict.timing["baselines"] == "cached" and verdict.eager_ms == quiet
    assert verdict.timing["eager_probe"]["median_ms"] > 0
    assert _path(problem, config).read_bytes() == stored
