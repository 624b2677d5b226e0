"""Time from "Start a run" to the first turn card on the run page, CPU target, heuristic policy, warm studio (its
worker has run an episode before): the click, the run page's load, the first card, and the turn's own timings
(policy and tools seconds, as stored) side by side, so the share the jailed analysis takes is visible.

    python -m bench.studio_first_turn [--runs 3] [--pool N] [--compare]

--pool sets the studio workers' warm analysis pool (KS_WARM_POOL; 0: every analysis in a fresh jail); --compare runs
a second studio without it, the runs of both taken in turn, and prints the ratio of the medians. Each run says whether
its analysis was pooled. Target (issue 19): first turn visible <= 2 s after Start, median of the runs.
"""

import argparse
import os
import sys
import tempfile

from bench._studio import percentile

PROBLEM = """import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return torch.sigmoid(x) * 2.0 - 0.5


def get_inputs():
    return [torch.randn(64, 1024)]


def get_init_inputs():
    return []
"""


def _problem(database_url, owner):
    """A stored problem of OWNER (as an upload that passed validation leaves it), through the live studio's database."""
    import psycopg

    with psycopg.connect(database_url.replace("postgres://", "postgresql://")) as conn:
        user = conn.execute("SELECT id FROM auth_user WHERE username = %s", [owner]).fetchone()[0]
        return conn.execute(
            "INSERT INTO studio_problem (owner_id, name, source, sha256, spec, device, created_at) VALUES "
            "(%s, 'sigmoid_scale', %s, %s, '{}'::jsonb, 'cpu', now()) RETURNING id",
            [user, PROBLEM, "0" * 64],
        ).fetchone()[0]


def _first_turn(database_url, run_id):
    """The first turn's payload and the wall-clock stamps (ms since the epoch) of the run's way to it: stored by the
    web, picked up by a worker (RQ's started_at), running (the episode began), the first turn stored."""
    import psycopg
    from rq.job import Job

    from studio.queues import connection

    with psycopg.connect(database_url.replace("postgres://", "postgresql://")) as conn:
        run = conn.execute(
            "SELECT extract(epoch FROM created_at) * 1000, extract(epoch FROM started_at) * 1000, job_id "
            "FROM studio_run WHERE id = %s",
            [run_id],
        ).fetchone()
        turn = conn.execute(
            "SELECT payload, extract(epoch FROM created_at) * 1000 FROM studio_runevent "
            "WHERE run_id = %s AND kind = 'turn' ORDER BY seq LIMIT 1",
            [run_id],
        ).fetchone()
    job = Job.fetch(run[2], connection=connection())
    stamps = {
        "stored": float(run[0]),
        "picked_up": job.started_at.timestamp() * 1000 if job.started_at else None,
        "running": float(run[1]),
        "turn_stored": float(turn[1]),
    }
    return turn[0], stamps


FRESH = "the analysis runs in a fresh jail: "  # agent.tools' warning when the pool could not run it


class Session:
    """A live studio with KS_WARM_POOL=POOL, a signed-in Chromium page on it and a stored problem."""

    def __init__(self, stack, playwright, pool):
        from studio.testing import LiveStudio, launch_chromium, log_in

        self.pool = pool
        self.studio = stack.enter_context(LiveStudio(KS_WARM_POOL=str(pool)))
        self.problem = _problem(self.studio.database_url, self.studio.username)
        context = launch_chromium(playwright, stack.enter_context(tempfile.TemporaryDirectory()))
        stack.callback(context.close)
        context.set_default_timeout(300_000)
        self.page = context.pages[0] if context.pages else context.new_page()
        log_in(self.page, self.studio)

    def run(self, turns=2):
        """Start a run, wait for its first card, then for its end; the row of its timings."""
        page, studio = self.page, self.studio
        page.goto(f"{studio.url}/problems/{self.problem}", wait_until="load")
        page.select_option("#id_device", "cpu")
        page.fill("#id_max_turns", str(turns))
        fresh = studio.output().count(FRESH)
        start = page.evaluate("() => performance.timeOrigin + performance.now()")
        page.click("text=Start a run")
        page.wait_for_selector("#timeline li.card-turn")
        shown = page.evaluate("() => performance.timeOrigin + performance.now()")
        loaded = page.evaluate(
            "() => performance.timeOrigin + performance.getEntriesByType('navigation')[0].loadEventEnd"
        )
        run_id = int(page.url.rsplit("/", 1)[1])
        turn, stamps = _first_turn(studio.database_url, run_id)
        page.wait_for_function(
            "() => !['queued', 'running'].includes(document.getElementById('run-status').textContent)"
        )
        said = [line.split(FRESH, 1)[1] for line in studio.output().splitlines() if FRESH in line][fresh:]
        picked_up = stamps["picked_up"] or stamps["stored"]
        return {
            "first_turn_ms": shown - start,
            "page_ms": loaded - start,
            # Each step from the one before: the web stored the run; a worker picked its job up; the job began its
            # episode; the first turn was stored; its card was shown.
            "steps_ms": {
                "web": stamps["stored"] - start,
                "queue": picked_up - stamps["stored"],
                "job start": stamps["running"] - picked_up,
                "turn": stamps["turn_stored"] - stamps["running"],
                "stream": shown - stamps["turn_stored"],
            },
            "policy_s": turn.get("policy_s"),
            "tools_s": turn.get("tools_s"),
            "analysis": "pooled" if self.pool and not said else f"fresh jail ({said[0] if said else 'no pool'})",
        }


def measure(runs, pools):
    """{pool: rows}: RUNS runs on a live studio per KS_WARM_POOL of POOLS, taking turns so that the machine's load
    falls on each alike; each studio's first run only warms it (its worker has then run an episode)."""
    import contextlib

    from playwright.sync_api import sync_playwright

    rows = {pool: [] for pool in pools}
    with contextlib.ExitStack() as stack:
        playwright = stack.enter_context(sync_playwright())
        sessions = [Session(stack, playwright, pool) for pool in pools]
        for session in sessions:
            session.run()
        for _ in range(runs):
            for session in sessions:
                rows[session.pool].append(session.run())
    return rows


def main(argv):
    parser = argparse.ArgumentParser(prog="python -m bench.studio_first_turn")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--pool", type=int, default=1, help="warm analysis processes per worker (KS_WARM_POOL)")
    parser.add_argument("--compare", action="store_true", help="also a studio without the pool, runs in turn")
    args = parser.parse_args(argv)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "studio.settings")
    import django

    django.setup()
    from studio.testing import chromium_missing

    if chromium_missing():
        print(f"skipped: {chromium_missing()}")
        return
    pools = [args.pool, 0] if args.compare and args.pool else [args.pool]
    results = measure(args.runs, pools)
    medians = {}
    for pool, rows in results.items():
        print(f"Start -> first turn card, CPU target, heuristic, warm studio, KS_WARM_POOL={pool}, {args.runs} runs")
        for row in rows:
            print(
                f"  first turn {row['first_turn_ms']:7.0f} ms · run page loaded {row['page_ms']:5.0f} ms · "
                f"turn 1: policy {row['policy_s']:.2f} s, tools {row['tools_s']:.2f} s, analysis {row['analysis']}"
            )
            print("    " + " · ".join(f"{name} {ms:.0f} ms" for name, ms in row["steps_ms"].items()))
        first = [r["first_turn_ms"] for r in rows]
        medians[pool] = percentile(first, 50)
        print(f"  median {medians[pool]:.0f} ms, max {max(first):.0f} ms")
    if len(medians) == 2:
        print(f"without the pool / with it: {medians[0] / medians[args.pool]:.1f}x (medians, runs taken in turn)")
    median = medians[args.pool]
    print(f"target: median <= 2000 ms with KS_WARM_POOL={args.pool}: {'met' if median <= 2000 else 'MISSED'}")
    print(
        f"reproduce: python -m bench.studio_first_turn --runs {args.runs} --pool {args.pool}"
        + (" --compare" if args.compare else "")
    )


if __name__ == "__main__":
    main(sys.argv[1:])
