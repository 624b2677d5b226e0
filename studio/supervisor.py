"""Keeps runstudio's children running: one that dies (web server, a worker, the reconciler) is started again
while the others go on, after a pause that grows while it keeps dying young; an essential process (embedded
PostgreSQL or Redis) that dies stops everything."""

import logging
import signal
import subprocess
import time
from dataclasses import dataclass

log = logging.getLogger(__name__)

# A child that ran this long before it died was working: it is started again after FIRST_DELAY_S. One that dies
# sooner waits twice as long as the previous time, up to MAX_DELAY_S: never a hot loop of failing starts.
STEADY_S = 30.0
FIRST_DELAY_S = 1.0
MAX_DELAY_S = 60.0
# From this many early deaths in a row on, each one is reported as an error: something needs a person.
REPORT_AFTER = 3


class EssentialProcessDied(Exception):
    """A process the children cannot run without (an embedded server) stopped."""


def restart_delay(early_deaths: int, first: float = FIRST_DELAY_S, cap: float = MAX_DELAY_S) -> float:
    """Seconds before a dead child starts again, after EARLY_DEATHS deaths in a row soon after starting."""
    return min(cap, first * 2**early_deaths)


def describe_exit(code: int) -> str:
    if code < 0:
        try:
            return f"signal {signal.Signals(-code).name}"
        except ValueError:
            return f"signal {-code}"
    return f"exit code {code}"


@dataclass
class Child:
    name: str
    command: list[str]
    process: subprocess.Popen | None = None
    started_at: float = 0.0
    early_deaths: int = 0
    restart_at: float | None = None


class Supervisor:
    """supervisor.run() keeps COMMANDS (name -> argv) running until stop() (from a signal handler) or until a
    process of ESSENTIAL (name -> Popen, started elsewhere) dies."""

    def __init__(
        self,
        commands: dict[str, list[str]],
        *,
        cwd=None,
        env=None,
        essential=None,
        steady_s=STEADY_S,
        first_delay_s=FIRST_DELAY_S,
        max_delay_s=MAX_DELAY_S,
        poll_s=0.5,
    ):
        self.children = {name: Child(name, list(command)) for name, command in commands.items()}
        self.essential = dict(essential or {})
        self.cwd, self.env = cwd, env
        self.steady_s, self.first_delay_s, self.max_delay_s, self.poll_s = steady_s, first_delay_s, max_delay_s, poll_s
        # Filled by stop(), emptied by run(): a signal handler must take no lock the interrupted code may hold.
        self._signals: list[int] = []
        self._forwarded = False

    def stop(self, signum: int = signal.SIGTERM) -> None:
        """Pass SIGNUM on to every child and end run() once all are gone. Safe in a signal handler: a second
        Ctrl-C is passed on again (RQ workers then abandon their running job)."""
        self._signals.append(signum)

    def run(self) -> None:
        for child in self.children.values():
            self._start(child)
        stopping = False
        try:
            while True:
                while self._signals:
                    stopping = True
                    self._forward(self._signals.pop(0))
                if stopping:
                    if all(c.process is None or c.process.poll() is not None for c in self.children.values()):
                        return
                else:
                    self._check_essential()
                    self._tend(time.monotonic())
                time.sleep(self.poll_s)
        finally:
            self._end_all()

    def _start(self, child: Child) -> None:
        # An own session: a Ctrl-C in the terminal reaches only runstudio, and each child gets it once, from us
        # (a second SIGINT to an RQ worker is a cold shutdown that kills its running job).
        child.process = subprocess.Popen(child.command, cwd=self.cwd, env=self.env, start_new_session=True)
        child.started_at, child.restart_at = time.monotonic(), None

    def _tend(self, now: float) -> None:
        for child in self.children.values():
            if child.restart_at is not None:
                if now >= child.restart_at:
                    self._start(child)
                    log.warning("%s started again (pid %d)", child.name, child.process.pid)
                continue
            code = child.process.poll()
            if code is None:
                continue
            lived = now - child.started_at
            child.early_deaths = child.early_deaths + 1 if lived < self.steady_s else 0
            delay = restart_delay(child.early_deaths, self.first_delay_s, self.max_delay_s)
            child.restart_at = now + delay
            if child.early_deaths >= REPORT_AFTER:
                log.error(
                    "%s keeps dying within %.0f s of starting (%d times in a row, last with %s); next try "
                    "in %.0f s: see its output above",
                    child.name,
                    self.steady_s,
                    child.early_deaths,
                    describe_exit(code),
                    delay,
                )
            else:
                log.warning(
                    "%s (pid %d) stopped with %s after %.0f s; starting it again in %.0f s; the others keep running",
                    child.name,
                    child.process.pid,
                    describe_exit(code),
                    lived,
                    delay,
                )

    def _check_essential(self) -> None:
        for name, process in self.essential.items():
            code = process.poll()
            if code is not None:
                log.error(
                    "%s stopped with %s: the studio cannot run without it; stopping everything",
                    name,
                    describe_exit(code),
                )
                self._forward(signal.SIGTERM)
                raise EssentialProcessDied(
                    f"{name} stopped with {describe_exit(code)}; start runstudio again "
                    "(its data is kept), and see its log if it stops again"
                )

    def _forward(self, signum: int) -> None:
        self._forwarded = True
        for child in self.children.values():
            child.restart_at = None
            if child.process is not None and child.process.poll() is None:
                child.process.send_signal(signum)

    def _end_all(self) -> None:
        """Wait for every child; if run() failed before any was told to stop, they are told now."""
        if not self._forwarded:
            self._forward(signal.SIGTERM)
        for child in self.children.values():
            if child.process is not None:
                child.process.wait()
