"""The heuristic's one error: what it cannot plan, named so a user knows which operator or construct to change."""


class Unsupported(Exception):
    """The heuristic cannot write kernels for this problem; the message names the operator that stopped it."""
