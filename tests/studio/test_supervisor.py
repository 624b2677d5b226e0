"""studio.supervisor with real child processes: dead children come back, failing ones slow down, an essential
process takes everything down, a stop reaches every child."""

import logging
import signal
import subprocess
import sys
import threading
import time

import pytest

from studio.supervisor import EssentialProcessDied, Supervisor, restart_delay

SLEEPER = [sys.executable, "-c", "import time; time.sleep(600)"]
FAILER = [sys.executable, "-c", "import sys; sys.exit(3)"]


def wait_for(condition, timeout=30, what="the condition"):
    deadline = time.monotonic() + timeout
    while not (value := condition()):
        if time.monotonic() > deadline:
            pytest.fail(f"{what} did not happen within {timeout} s")
        time.sleep(0.05)
    return value


class Running:
    """`with Running(supervisor) as thread:` supervisor.run() in a thread, stopped and joined at the end."""

    def __init__(self, supervisor):
        self.supervisor, self.error = supervisor, None
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        try:
            self.supervisor.run()
        except Exception as exc:  # noqa: BLE001 (handed to the test)
            self.error = exc

    def __enter__(self):
        self.thread.start()
        wait_for(lambda: all(c.process for c in self.supervisor.children.values()), what="the first starts")
        return self

    def __exit__(self, *exc):
        self.supervisor.stop(signal.SIGTERM)
        self.thread.join(30)
        assert not self.thread.is_alive(), "run() did not return after stop()"


def test_restart_delays_double_while_a_child_dies_young_and_are_capped():
    assert [restart_delay(n) for n in range(8)] == [1, 2, 4, 8, 16, 32, 60, 60]
    assert restart_delay(0, first=0.1) == 0.1


def test_a_dead_child_is_started_again_while_the_others_keep_running():
    supervisor = Supervisor({"steady": SLEEPER, "victim": SLEEPER}, first_delay_s=0.1, poll_s=0.05)
    with Running(supervisor):
        steady, victim = supervisor.children["steady"].process, supervisor.children["victim"].process
        victim.kill()
        again = wait_for(lambda: (p := supervisor.children["victim"].process) is not victim and p, what="the restart")
        assert again.poll() is None and steady.poll() is None
        assert supervisor.children["steady"].process is steady
    # stop() passed SIGTERM on and waited for both.
    assert again.returncode == -signal.SIGTERM and steady.returncode == -signal.SIGTERM


def test_a_child_that_keeps_dying_young_is_retried_ever_slower_and_reported(caplog):
    supervisor = Supervisor({"broken": FAILER}, first_delay_s=0.1, max_delay_s=0.4, poll_s=0.02)
    with caplog.at_level(logging.WARNING, logger="studio.supervisor"), Running(supervisor):
        wait_for(lambda: sum("started again" in r.getMessage() for r in caplog.records) >= 5, what="5 restarts")
    starts = [r.created for r in caplog.records if "started again" in r.getMessage()]
    gaps = [later - earlier for earlier, later in zip(starts, starts[1:])]
    # Each wait is at least the back-off for that many early deaths in a row: 0.4 s, then 0.4 s (capped), ...
    assert all(gap >= 0.4 - 0.02 for gap in gaps[1:]), gaps
    reports = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert (
        reports
        and "broken keeps dying within 30 s of starting (3 times in a row, last with exit code 3)"
        in reports[0].getMessage()
    )


def test_an_essential_process_that_dies_stops_every_child_and_says_which():
    server = subprocess.Popen(SLEEPER)
    supervisor = Supervisor({"worker": SLEEPER}, essential={"embedded redis": server}, poll_s=0.05)
    running = Running(supervisor)
    with running:
        worker = supervisor.children["worker"].process
        server.kill()
        running.thread.join(30)
    assert isinstance(running.error, EssentialProcessDied)
    assert str(running.error).startswith("embedded redis stopped with signal SIGKILL")
    assert worker.returncode == -signal.SIGTERM
