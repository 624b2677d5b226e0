"""Time from "Start a run" to the first turn card on the run page, CPU target, heuristic policy, warm studio (its
worker has run an episode before): the click, the run page's load, the first card, and the turn's own timings
(policy and tools seconds, as stored) side by side, so the share the jailed analysis takes is visible.

    python -m bench.studio_first_turn [--runs 3] [--pool N]

--pool sets the studio workers' warm analysis pool (KS_WARM_POOL; 0: every analysis in a fresh jail); each run says
whether its analysis was pooled. Target (issue 19): first turn visible <= 2 s after Start, median of the runs.
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


def measure(runs, pool, turns=2):
    from playwright.sync_api import sync_playwright

    from studio.testing import LiveStudio, launch_chromium, log_in

    rows = []
    with (
        LiveStudio(KS_WARM_POOL=str(pool)) as studio,
        sync_playwright() as playwright,
        tempfile.TemporaryDirectory() as profile,
    ):
        problem = _problem(studio.database_url, studio.username)
        context = launch_chromium(playwright, profile)
        context.set_default_timeout(300_000)
        page = context.pages[0] if context.pages else context.new_page()
        log_in(page, studio)
        for attempt in range(runs + 1):  # the first warms the worker (imports, the sandbox's caches)
            page.goto(f"{studio.url}/problems/{problem}", wait_until="load")
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
            analysis = "pooled" if pool and not said else f"fresh jail ({said[0] if said else 'no pool'})"
            if attempt:
                rows.append(
                    {
                        "first_turn_ms": shown - start,
                        "page_ms": loaded - start,
                        # Each step from the one before: the web stored the run; a worker picked its job up; the
                        # job began its episode; the first turn was stored; its card was shown.
                        "steps_ms": {
                            "web": stamps["stored"] - start,
                            "queue": (stamps["picked_up"] or stamps["stored"]) - stamps["stored"],
                            "job start": stamps["running"] - (stamps["picked_up"] or stamps["stored"]),
                            "turn": stamps["turn_stored"] - stamps["running"],
                            "stream": shown - stamps["turn_stored"],
                        },
                        "policy_s": turn.get("policy_s"),
                        "tools_s": turn.get("tools_s"),
                        "analysis": analysis,
                    }
                )
        context.close()
    return rows


def main(argv):
    parser = argparse.ArgumentParser(prog="python -m bench.studio_first_turn")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--pool", type=int, default=1, help="warm analysis processes per worker (KS_WARM_POOL)")
    args = parser.parse_args(argv)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "studio.settings")
    import django

    django.setup()
    from studio.testing import chromium_missing

    if chromium_missing():
        print(f"skipped: {chromium_missing()}")
        return
    rows = measure(args.runs, args.pool)
    print(f"Start -> first turn card, CPU target, heuristic, warm studio, KS_WARM_POOL={args.pool}, {args.runs} runs")
    for row in rows:
        print(
            f"  first turn {row['first_turn_ms']:7.0f} ms · run page loaded {row['page_ms']:5.0f} ms · "
            f"turn 1: policy {row['policy_s']:.2f} s, tools {row['tools_s']:.2f} s, analysis {row['analysis']}"
        )
        print("    " + " · ".join(f"{name} {ms:.0f} ms" for name, ms in row["steps_ms"].items()))
    first = [r["first_turn_ms"] for r in rows]
    median = percentile(first, 50)
    print(
        f"median {median:.0f} ms, max {max(first):.0f} ms; target: median <= 2000 ms: "
        f"{'met' if median <= 2000 else 'MISSED'}"
    )
    print(f"reproduce: python -m bench.studio_first_turn --runs {args.runs} --pool {args.pool}")


if __name__ == "__main__":
    main(sys.argv[1:])
