"""Raw failure texts (RQ's, the reconciler's, the run job's) become a sentence a user can act on, the raw text kept."""

import pytest

from studio.failures import explain


@pytest.mark.parametrize(
    "raw, sentence",
    [
        (
            "its job failed: JobStatus.FAILED: Work-horse terminated unexpectedly; waitpid returned 9",
            "The worker's process was killed (SIGKILL), most often because it ran out of memory.",
        ),
        (
            "its job failed: rq.timeouts.JobTimeoutException: Task exceeded maximum timeout value (900 seconds)",
            "The job ran past its time limit and was stopped.",
        ),
        ("its worker gpu-0.host stopped answering", "The worker running this (gpu-0.host) stopped answering"),
        ("its job is gone from the queue (was Redis restarted?)", "The queue lost this job"),
        ("the package build failed: its job canceled", "The job was stopped before it finished."),
        ("its job JobStatus.CANCELED", "The job was stopped before it finished."),  # as stored before 2026-11-26
        ("no correct solution (max_turns)", "The agent found no correct kernel within its turns."),
        (
            "no correct solution (policy_error: the heuristic cannot plan aten.sort.stable (sorting))",
            "The agent stopped without a correct kernel: the heuristic cannot plan aten.sort.stable (sorting). Change what",
        ),
        ("no correct solution (policy_error: Connection refused)", "The policy's model server did not answer."),
        (
            "the run crashed: OSError: [Errno 28] No space left on device",
            "The job stopped on an internal error (OSError).",
        ),
    ],
)
def test_known_failures_read_as_sentences_with_the_raw_text_kept(raw, sentence):
    failure = explain(raw)
    assert failure.sentence.startswith(sentence) and failure.details == raw


def test_a_plain_reason_is_kept_as_it_is():
    failure = explain("cancelled by ada")
    assert failure.sentence == "Cancelled by ada." and failure.details == ""
    other = explain("no correct solution: the heuristic cannot plan torch.cumsum")
    assert other.sentence == "no correct solution: the heuristic cannot plan torch.cumsum." and other.details == ""


def test_nothing_to_explain():
    assert explain("") is None and explain(None) is None
