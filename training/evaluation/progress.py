"""Progress with an ETA: a tqdm bar on a terminal, a line per finished episode in a log (or without tqdm)."""

import sys
import time


def _clock(seconds):
    seconds = int(seconds)
    return (
        f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"
        if seconds >= 3600
        else f"{seconds // 60}:{seconds % 60:02d}"
    )


class Progress:
    def __init__(self, total, done=0, quiet=False, stream=None):
        self.total, self.done, self.quiet = total, done, quiet
        self.stream = stream or sys.stderr
        self.start, self.ran, self.correct = time.monotonic(), 0, 0
        self.bar = None
        if not quiet and self.stream.isatty():
            try:
                from tqdm import tqdm
            except ImportError:
                tqdm = None  # a GPU host's bare python: lines instead
            if tqdm:
                self.bar = tqdm(total=total, initial=done, unit="problem", file=self.stream, dynamic_ncols=True)

    def update(self, result):
        self.done += 1
        self.ran += 1
        self.correct += result.correct
        if self.bar is not None:
            self.bar.set_postfix_str(f"{self.correct}/{self.ran} correct, last {result.key}", refresh=False)
            self.bar.update(1)
            return
        if self.quiet:
            return
        elapsed = time.monotonic() - self.start
        eta = elapsed / self.ran * (self.total - self.done)
        v = result.verdict or {}
        outcome = (
            result.error.split("\n")[0][:120]
            if result.error
            else (
                f"{v.get('status')}, reward {v.get('reward')}"
                + (f", {v['speedup_vs_eager']:.2f}x eager" if v.get("speedup_vs_eager") and result.correct else "")
                + (
                    f", {v['speedup_vs_compiled']:.2f}x compile"
                    if v.get("speedup_vs_compiled") and result.correct
                    else ""
                )
            )
        )
        print(
            f"[{self.done}/{self.total}] {result.arm} {result.key}: {outcome}; {result.turns} turns, "
            f"{result.wall_s:.0f} s (elapsed {_clock(elapsed)}, ETA {_clock(eta)})",
            file=self.stream,
            flush=True,
        )

    def note(self, text):
        if self.bar is not None:
            self.bar.write(text, file=self.stream)
        elif not self.quiet:
            print(text, file=self.stream, flush=True)

    def close(self):
        if self.bar is not None:
            self.bar.close()
