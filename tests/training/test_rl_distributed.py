"""The learner under several processes: minibatch counts every rank agrees on, statistics pooled over ranks (the
logged step covers every rank's episodes, the guards decide alike everywhere), checked by hand and with two real
processes over torch.distributed (gloo on the CPU, as `accelerate launch` runs them)."""

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

from training.rl.distributed import minibatches
from training.rl.metrics import merge_process_stats

TESTS = Path(__file__).resolve().parents[1]


def test_a_rank_with_fewer_items_wraps_around_and_steps_as_often_as_the_busiest():
    assert list(minibatches([4, 2, 0, 1, 3], 3, 2)) == [[4, 2], [0, 1], [3]]
    assert list(minibatches([4, 2, 0], 3, 2)) == [[4, 2], [0], [2, 0]]
    assert list(minibatches([7], 2, 4)) == [[7], [7]]


def test_episodes_are_pooled_and_update_statistics_reduced_over_ranks():
    rank0 = (
        {"entropy": 1.0, "ratio_min": 0.8, "ratio_max": 1.5, "policy_tokens": 10},
        [{"verdict": {"reward": 3.0, "correct": True, "speedup_vs_eager": 2.0}, "turns": 2, "response_tokens": 4}],
    )
    rank1 = (
        {"entropy": 2.0, "ratio_min": 0.6, "ratio_max": 1.2, "policy_tokens": 30},
        [
            {"verdict": {"reward": -1.0, "correct": False}, "turns": 6, "response_tokens": 8},
            {"verdict": {"reward": 1.0, "correct": True, "speedup_vs_eager": 1.1}, "turns": 4, "response_tokens": 6},
        ],
    )
    merged = merge_process_stats([rank0, rank1])
    assert merged["entropy"] == 1.5 and merged["ratio_min"] == 0.6 and merged["ratio_max"] == 1.5
    assert merged["policy_tokens"] == 40
    assert merged["episodes"] == 3 and merged["correct_rate"] == 2 / 3 and merged["reward_mean"] == 1.0
    assert merged["reward_frac_-1"] == merged["reward_frac_1"] == merged["reward_frac_3"] == 1 / 3
    assert merged["turns_mean"] == 4.0 and merged["speedup_min"] == 1.1 and merged["speedup_max"] == 2.0


def test_two_processes_with_uneven_batches_finish_the_update_in_step_and_log_the_same_pooled_statistics(tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    procs = []
    for rank in range(2):
        env = {
            **os.environ,
            "RANK": str(rank),
            "LOCAL_RANK": str(rank),
            "WORLD_SIZE": "2",
            "MASTER_ADDR": "127.0.0.1",
            "MASTER_PORT": str(port),
            "OMP_NUM_THREADS": "1",
        }
        procs.append(
            subprocess.Popen(
                [sys.executable, str(TESTS / "training" / "distributed_probe.py"), str(TESTS)],
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
        )
    outputs = []
    try:
        for proc in procs:
            out, err = proc.communicate(timeout=240)  # a rank waiting on another that has finished never returns
            assert proc.returncode == 0, err[-3000:]
            outputs.append(json.loads(out.strip().splitlines()[-1]))
    finally:
        for proc in procs:
            proc.kill()
    first, second = outputs
    assert (first["rank"], second["rank"], first["world"]) == (0, 1, 2)
    assert first["policy_tokens_here"] == 24 and second["policy_tokens_here"] == 80  # two tokens a sample
    assert first["merged"] == second["merged"]
    merged = first["merged"]
    assert merged["policy_tokens"] == 104 and merged["rollout_failures"] == 1
    assert merged["episodes"] == 3 and merged["reward_mean"] == 1.0 and merged["correct_rate"] == 2 / 3
    assert merged["turns_mean"] == 10 / 3 and merged["response_tokens_mean"] == 20 / 3
    assert merged["tool_call_rate"] == 2 / 10  # rank 0's two turns parsed into tool calls, rank 1's eight did not
    assert first["weights"] == second["weights"]  # DDP kept the replicas identical through uneven batches
    assert first["mean_rank"] == second["mean_rank"] == 0.5
