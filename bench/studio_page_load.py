"""Run page load: a run with 300 stored turns, opened in Chromium: navigation start to the load event, and to the
moment all 300 cards are in the DOM; the server's share (the HTML of the page) measured beside it.

    python -m bench.studio_page_load [--turns 300] [--loads 5]

Target (issue 4): <= 1 s.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

from bench._studio import CARD_STAMPS, percentile, writer_command


def measure(turns, loads):
    from playwright.sync_api import sync_playwright

    from studio.testing import LiveStudio, launch_chromium, log_in

    with LiveStudio() as studio, sync_playwright() as playwright, tempfile.TemporaryDirectory() as profile:
        command, env = writer_command(studio.database_url, "create", "--runs", 1, "--owner", studio.username)
        (run_id,) = json.loads(subprocess.run(command, env=env, capture_output=True, text=True, check=True).stdout)
        command, env = writer_command(
            studio.database_url, "stream", json.dumps([run_id]), "--rounds", turns, "--interval", 0
        )
        subprocess.run(command, env=env, input="go\n", capture_output=True, text=True, check=True)
        context = launch_chromium(playwright, profile)
        context.add_init_script(CARD_STAMPS)
        page = context.pages[0] if context.pages else context.new_page()
        log_in(page, studio)
        url = f"{studio.url}/runs/{run_id}"
        page.goto(url, wait_until="load")  # warm: static files cached as a returning user has them
        rows = []
        for _ in range(loads):
            page.goto(url, wait_until="load")
            rows.append(
                page.evaluate("""() => {
              const nav = performance.getEntriesByType("navigation")[0];
              const cards = window.__cards;
              return { load: nav.loadEventEnd, html: nav.responseEnd - nav.requestStart, count: cards.length,
                       cards: cards.length ? cards[cards.length - 1].t - performance.timeOrigin : null,
                       bytes: nav.transferSize };
            }""")
            )
        context.close()
    return rows


def main(argv):
    parser = argparse.ArgumentParser(prog="python -m bench.studio_page_load")
    parser.add_argument("--turns", type=int, default=300)
    parser.add_argument("--loads", type=int, default=5)
    args = parser.parse_args(argv)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "studio.settings")
    import django

    django.setup()
    from studio.testing import chromium_missing

    if chromium_missing():
        print(f"skipped: {chromium_missing()}")
        return
    rows = measure(args.turns, args.loads)
    assert all(r["count"] == args.turns for r in rows), [r["count"] for r in rows]
    print(f"run page with {args.turns} stored turns, {args.loads} loads in Chromium (static files cached)")
    print(f"{'':>22} {'median ms':>10} {'max ms':>8}")
    for key, name in (("html", "server (HTML)"), ("cards", f"all {args.turns} cards shown"), ("load", "load event")):
        values = [r[key] for r in rows]
        print(f"{name:>22} {percentile(values, 50):>10.0f} {max(values):>8.0f}")
    worst = max(max(r["load"], r["cards"]) for r in rows)
    print(f"page size {rows[-1]['bytes'] / 1024:.0f} KiB; target <= 1000 ms: {'met' if worst <= 1000 else 'MISSED'}")
    print(f"reproduce: python -m bench.studio_page_load --turns {args.turns} --loads {args.loads}")


if __name__ == "__main__":
    main(sys.argv[1:])
