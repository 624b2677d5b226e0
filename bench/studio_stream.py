"""Turn latency: from a turn stored (studio.actions.append_event in a writer process, as a worker does) to its card
in the DOM of a browser watching the run, with many runs streaming at once into one Chromium (a page per run).

    python -m bench.studio_stream [--runs 20] [--rounds 15] [--interval 1.0]

Target (issue 4): p95 <= 250 ms with 20 runs streaming at once on this machine.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import psycopg

from bench._studio import CARD_STAMPS, percentile, writer_command


def measure(runs, rounds, interval):
    from playwright.sync_api import sync_playwright

    from studio.testing import LiveStudio, launch_chromium, log_in

    with LiveStudio() as studio, sync_playwright() as playwright, tempfile.TemporaryDirectory() as profile:
        command, env = writer_command(studio.database_url, "create", "--runs", runs, "--owner", studio.username)
        ids = json.loads(subprocess.run(command, env=env, capture_output=True, text=True, check=True).stdout)
        context = launch_chromium(playwright, profile)
        context.add_init_script(CARD_STAMPS)
        login = context.pages[0] if context.pages else context.new_page()
        log_in(login, studio)
        pages = {}
        for run_id in ids:
            pages[run_id] = context.new_page()
            pages[run_id].goto(f"{studio.url}/runs/{run_id}", wait_until="load")
        time.sleep(2)  # every page's WebSocket has connected
        command, env = writer_command(
            studio.database_url, "stream", json.dumps(ids), "--rounds", rounds, "--interval", interval
        )
        writer = subprocess.Popen(command, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        writer.stdin.write("go\n")
        writer.stdin.flush()
        assert writer.stdout.readline().strip() == "done" and writer.wait() == 0
        time.sleep(2)  # the last cards land
        cards = {run_id: page.evaluate("window.__cards") for run_id, page in pages.items()}
        context.close()
        with psycopg.connect(studio.database_url.replace("postgres://", "postgresql://", 1)) as conn:
            stored = conn.execute(
                "SELECT run_id, (payload->>'index')::int, extract(epoch FROM created_at) * 1000 "
                "FROM studio_runevent WHERE kind = 'turn'"
            ).fetchall()
    seen = {(run_id, c["index"]): c["t"] for run_id, run_cards in cards.items() for c in run_cards}
    duplicates = sum(len(c) for c in cards.values()) - len(seen)
    latencies = [seen[(run_id, index)] - float(t) for run_id, index, t in stored if (run_id, index) in seen]
    return {
        "stored": len(stored),
        "shown": len(latencies),
        "missing": len(stored) - len(latencies),
        "duplicates": duplicates,
        "latencies": latencies,
    }


def main(argv):
    parser = argparse.ArgumentParser(prog="python -m bench.studio_stream")
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--interval", type=float, default=1.0, help="seconds between a run's turns")
    args = parser.parse_args(argv)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "studio.settings")
    import django

    django.setup()
    from studio.testing import chromium_missing

    if chromium_missing():
        print(f"skipped: {chromium_missing()}")
        return
    result = measure(args.runs, args.rounds, args.interval)
    ms = result["latencies"]
    print(f"{args.runs} runs streaming at once, {args.rounds} turns each, one turn per run every {args.interval} s")
    print(
        f"{'turns stored':>14} {'cards shown':>12} {'missing':>8} {'duplicated':>10} {'p50 ms':>8} {'p95 ms':>8} "
        f"{'p99 ms':>8} {'max ms':>8}"
    )
    print(
        f"{result['stored']:>14} {result['shown']:>12} {result['missing']:>8} {result['duplicates']:>10} "
        f"{percentile(ms, 50):>8.1f} {percentile(ms, 95):>8.1f} {percentile(ms, 99):>8.1f} {max(ms):>8.1f}"
    )
    verdict = "met" if percentile(ms, 95) <= 250 and not result["missing"] and not result["duplicates"] else "MISSED"
    print(f"target p95 <= 250 ms, none missing or duplicated: {verdict}")
    print(
        f"reproduce: python -m bench.studio_stream --runs {args.runs} --rounds {args.rounds} --interval {args.interval}"
    )


if __name__ == "__main__":
    main(sys.argv[1:])
