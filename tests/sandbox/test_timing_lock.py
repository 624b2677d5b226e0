"""The host's timing lock: an evaluation measures baselines and its solution only while it holds the lock of its
device (the jailed reference takes it through a read-only descriptor), so concurrent evaluations never time at
once; a lock held elsewhere makes it wait, not fail."""

import threading
import time

from sandbox import timing_lock

HOLD_S = 6.0
LOCK_WAIT_S = 600
PROBLEM = """
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x, y):
        return torch.relu(x + y) * 2.0


def get_inputs():
    return [torch.randn(128, 512), torch.randn(128, 512)]


def get_init_inputs():
    return []
"""


def hold(lock, seconds, taken):
    with lock("cpu"):
        taken.set()
        time.sleep(seconds)


def evaluated_beside(lock, run_eval, problem, solution):
    """The verdict of PROBLEM and SOLUTION evaluated while another thread holds LOCK (exclusive or shared) for
    HOLD_S, and the seconds its stages before the trials took."""
    timing_lock.ensure("cpu")
    # What an evaluation does before its stages' clock starts (probing the host's isolation, once per process) must
    # not eat into the hold: only the stages are compared with it.
    from sandbox.isolation import isolation_level

    isolation_level()
    taken = threading.Event()
    holder = threading.Thread(target=hold, args=(lock, HOLD_S, taken))
    holder.start()
    # The lock is the host's: under parallel test workers another file's evaluation may be timing under it now, and
    # the holder waits its turn like any evaluation would (minutes at most on a 2-core CI machine).
    assert taken.wait(LOCK_WAIT_S), f"no turn at the timing lock in {LOCK_WAIT_S} s"
    verdict = run_eval(problem, solution)
    holder.join()
    assert verdict.status == "ok" and verdict.correct, verdict.log
    stages = verdict.timing["stages_s"]
    return verdict, stages["build"] + stages["start workers"] + stages["validate and baselines"]


def test_baselines_are_measured_only_under_the_devices_timing_lock_and_the_wait_is_not_timed(run_eval, files, honest):
    # A problem of its own (a comment in it), so that its baselines are measured now rather than found cached.
    problem = files.problem(PROBLEM + f"# {time.time_ns()}\n", "locked.py")
    verdict, before_trials = evaluated_beside(timing_lock.exclusive, run_eval, problem, honest)
    # The baselines could not be measured before the lock was let go: their stage ends after it.
    assert before_trials >= HOLD_S - 0.5, verdict.timing["stages_s"]
    assert verdict.eager_ms < 100 and verdict.runtime_ms < 100, verdict.timing
    # One protocol, chosen with the baselines and handed to the candidate (the CPU's clock here).
    assert verdict.timing["protocol"] == verdict.timing["eager"]["protocol"] == "cpu-clock"
    assert verdict.timing["candidate"]["protocol"] == "cpu-clock"


def test_another_evaluations_untimed_kernels_hold_off_the_baselines(run_eval, files, honest):
    """Trials, loads and validations of other evaluations hold the lock shared: a timing waits until they are done
    (on the H100, another evaluation's trials beside a 1 us baseline measured it at 38 us)."""
    problem = files.problem(PROBLEM + f"# {time.time_ns()} beside trials\n", "beside.py")
    verdict, before_trials = evaluated_beside(timing_lock.shared, run_eval, problem, honest)
    assert before_trials >= HOLD_S - 0.5, verdict.timing["stages_s"]


def test_a_waiting_timing_goes_before_new_shared_holders_but_not_before_ungated_ones(tmp_path, monkeypatch):
    monkeypatch.setenv("KS_CACHE_DIR", str(tmp_path))
    timing_lock.ensure("cpu")
    events, release = [], threading.Event()
    first = threading.Event()

    def holder():
        with timing_lock.shared("cpu"):
            first.set()
            release.wait(10)
            events.append("first shared done")

    def timing():
        with timing_lock.exclusive("cpu"):
            events.append("timing")
            time.sleep(0.3)
            events.append("timing done")

    def later(gate):
        with timing_lock.shared("cpu", gate=gate):
            events.append(f"shared gate={gate}")

    threads = [threading.Thread(target=holder)]
    threads[0].start()
    assert first.wait(5)
    threads.append(threading.Thread(target=timing))
    threads[-1].start()
    time.sleep(0.3)  # the timing now waits for the first holder, its gate held
    for gate in (True, False):
        threads.append(threading.Thread(target=later, args=(gate,)))
        threads[-1].start()
    time.sleep(0.3)
    assert events == ["shared gate=False"], events  # the ungated one got in beside the first holder; the gated waits
    release.set()
    for thread in threads:
        thread.join(10)
    assert events == [
        "shared gate=False",
        "first shared done",
        "timing",
        "timing done",
        "shared gate=True",
    ], events


def test_concurrent_evaluations_of_one_problem_share_one_measurement_of_its_baselines(run_eval, files, honest):
    """Two evaluations of a problem with nothing cached, started together: one measures the baselines, the other
    waits for its cache entry instead of measuring its own (fresh torch.compile builds of a 1 us problem differ by
    up to 40% on the H100, which gave one solution two rewards)."""
    problem = files.problem(PROBLEM + f"# shared {time.time_ns()}\n", "shared.py")
    verdicts = [None, None]

    def one(i):
        verdicts[i] = run_eval(problem, honest)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert all(v.status == "ok" and v.correct for v in verdicts), [v.log for v in verdicts]
    assert sorted(v.timing["baselines"] for v in verdicts) == ["cached", "measured"]
    assert verdicts[0].timing["eager"] == verdicts[1].timing["eager"]
    assert verdicts[0].eager_ms == verdicts[1].eager_ms


def test_a_waiter_measures_on_its_own_once_its_wait_runs_out(tmp_path, monkeypatch):
    monkeypatch.setenv("KS_CACHE_DIR", str(tmp_path))
    taken, release = threading.Event(), threading.Event()

    def measure():
        with timing_lock.measuring_once("problem", "cpu", 30):
            taken.set()
            release.wait(30)

    holder = threading.Thread(target=measure)
    holder.start()
    assert taken.wait(5)
    t0 = time.monotonic()
    with timing_lock.measuring_once("problem", "cpu", 0.5):
        waited = time.monotonic() - t0
    with timing_lock.measuring_once("another problem", "cpu", 30):
        other = time.monotonic() - t0 - waited
    release.set()
    holder.join()
    assert 0.5 <= waited < 5, waited
    assert other < 0.5, other  # another problem's baselines never wait


def test_torch_compiles_first_call_which_autotunes_runs_under_the_timing_lock():
    """The compiled baseline's first call times candidate kernels (inductor's autotuning): beside another
    evaluation's timing it would pick slower ones and disturb that timing, so it holds the lock too."""
    import fcntl

    import torch

    from sandbox.workers import reference

    path = timing_lock.ensure("cpu")
    seen = []

    @torch._dynamo.disable
    def probe(x):  # run eagerly inside the compiled call: is the lock free for another holder?
        with open(path) as fh:
            try:
                fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
                fcntl.flock(fh, fcntl.LOCK_UN)
                seen.append("free")
            except BlockingIOError:
                seen.append("held")
        return x

    class Probe(torch.nn.Module):
        def forward(self, x):
            return probe(x)

    result = {}
    assert reference._compiled(Probe(), [[torch.ones(4)]], "cpu", result, "", False) is not None, result
    assert seen and set(seen) == {"held"}, seen


def test_without_a_lock_file_it_times_unlocked_and_says_so(caplog, tmp_path, monkeypatch):
    monkeypatch.setenv("KS_CACHE_DIR", str(tmp_path / "none-yet"))
    entered = False
    with timing_lock.exclusive("cpu"):
        entered = True
    assert entered and "timing without the cpu timing lock" in caplog.text


# -- timing cores: builds beside a timing do not share its cores (issue 17) ----------------------------------------
def test_a_host_of_several_cores_keeps_its_last_eighth_for_timing(monkeypatch):
    monkeypatch.setattr(timing_lock, "_STARTED_ON", frozenset(range(16)))
    assert timing_lock.timing_cores() == {14, 15}
    assert timing_lock.other_cores() == set(range(14))
    monkeypatch.setattr(timing_lock, "_STARTED_ON", frozenset(range(4)))
    assert timing_lock.timing_cores() == {3} and timing_lock.other_cores() == {0, 1, 2}
    # Too few cores to spare one: no split, everything everywhere.
    monkeypatch.setattr(timing_lock, "_STARTED_ON", frozenset(range(2)))
    assert timing_lock.timing_cores() == set() and timing_lock.other_cores() == {0, 1}


def test_pinning_moves_only_the_calling_thread_and_is_undone():
    import os

    seen = {}

    def pin():
        before = os.sched_getaffinity(0)
        first = min(before)
        with timing_lock.pinned({first}):
            seen["inside"] = os.sched_getaffinity(0)
            seen["main thread"] = os.sched_getaffinity(main)
        seen["after"] = os.sched_getaffinity(0)
        seen["before"] = before

    main = threading.get_native_id()
    worker = threading.Thread(target=pin)
    worker.start()
    worker.join()
    assert seen["inside"] == {min(seen["before"])}
    assert seen["after"] == seen["before"] and seen["main thread"] == os.sched_getaffinity(0)
