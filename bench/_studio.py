"""What the studio benchmarks share: a writer process that stores turns through studio.actions.append_event
against a live studio's database (as a worker does), realistic turn payloads, and Chromium pages that stamp
when each turn card appears in the DOM.

    python -m bench._studio create --runs N        # (DATABASE_URL of the live studio) prints the run ids, JSON
    python -m bench._studio stream IDS --rounds R --interval S   # waits for a line on stdin, then streams
"""

import argparse
import json
import os
import sys
import time

# Every card the page inserts into #timeline is stamped on the wall clock (ms since the epoch, sub-ms).
CARD_STAMPS = """
window.__cards = [];
// Observed from the document's creation: the stored cards run.js renders before DOMContentLoaded count too.
new MutationObserver((mutations) => {
  const t = performance.timeOrigin + performance.now();
  for (const m of mutations) for (const node of m.addedNodes) {
    if (node.classList && node.classList.contains("card-turn")) {
      window.__cards.push({ index: Number(node.querySelector("h3").textContent.split(" ")[1]), t });
    }
  }
}).observe(document, { childList: true, subtree: true });
"""


def turn_payload(index, observation_chars=1500):
    """A turn as the worker stores it (compact_turn's shape), with a verify call and its verdict."""
    log = "[2/4] g++ -O3 -std=c++17 -fPIC -march=native -fopenmp -c src/kernels/fused.cpp -o obj/fused.o\n" * 40
    return {
        "index": index,
        "thought": f"Turn {index}: fuse the elementwise chain into one kernel and verify it.",
        "tool_calls": [
            {
                "name": "verify",
                "arguments": {},
                "error": None,
                "seconds": 3.2,
                "observation": f"verify: ok, reward 1\n{log}"[:observation_chars],
                "verdict": {
                    "status": "ok",
                    "correct": True,
                    "reward": 1,
                    "runtime_ms": 0.0123,
                    "eager_ms": 0.0200,
                    "compiled_ms": 0.0150,
                    "speedup_vs_eager": 1.63,
                    "speedup_vs_compiled": 1.22,
                    "max_abs_error": 1e-7,
                    "violations": [],
                    "trials": [{"ok": True}] * 5,
                },
            }
        ],
        "policy_s": 0.4,
        "tools_s": 3.2,
        "prompt_tokens": None,
        "completion_tokens": None,
    }


def writer_command(database_url, *args):
    env = {
        **os.environ,
        "DATABASE_URL": database_url,
        "DJANGO_SETTINGS_MODULE": "studio.settings",
        "KS_LOG_LEVEL": "WARNING",
    }
    return [sys.executable, "-m", "bench._studio", *map(str, args)], env


def _create(runs, owner):
    from django.contrib.auth import get_user_model

    from studio.models import Problem, Run

    user = get_user_model().objects.get(username=owner)
    problem = Problem.objects.create(owner=user, name="bench", source="# bench", sha256="0" * 64)
    ids = [Run.objects.create(owner=user, problem=problem, status="running").pk for _ in range(runs)]
    print(json.dumps(ids), flush=True)


def _stream(ids, rounds, interval):
    from studio.actions import append_event

    sys.stdin.readline()  # the pages are connected
    start = time.monotonic()
    for r in range(1, rounds + 1):
        for run_id in ids:
            append_event(run_id, "turn", turn_payload(r))
        # Paced like real runs: every run gets a turn per interval, the rounds do not pile up.
        time.sleep(max(0.0, start + r * interval - time.monotonic()))
    print("done", flush=True)


def main(argv):
    parser = argparse.ArgumentParser(prog="python -m bench._studio")
    sub = parser.add_subparsers(dest="command", required=True)
    create = sub.add_parser("create")
    create.add_argument("--runs", type=int, required=True)
    create.add_argument("--owner", required=True)
    stream = sub.add_parser("stream")
    stream.add_argument("ids")
    stream.add_argument("--rounds", type=int, required=True)
    stream.add_argument("--interval", type=float, required=True)
    args = parser.parse_args(argv)
    import django

    django.setup()
    if args.command == "create":
        _create(args.runs, args.owner)
    else:
        _stream(json.loads(args.ids), args.rounds, args.interval)


def percentile(values, q):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))]


if __name__ == "__main__":
    main(sys.argv[1:])
