"""Typed errors of the sandbox, each with a message that says what to do."""


class SandboxError(Exception):
    """Base class of every error the sandbox raises on purpose."""


class MisuseError(SandboxError):
    """The caller asked for something impossible (missing file, invalid problem); the CLI exits 2."""


class InvalidProblem(MisuseError):
    """The problem file is not a usable KernelBench problem; the message says which rule it breaks."""


class InvalidSolution(MisuseError):
    """The solution path is neither a Python file nor a native workspace folder."""


class BuildError(SandboxError):
    """Compiling a native workspace failed; `log` holds the compiler's output."""

    def __init__(self, message, log=""):
        super().__init__(message)
        self.log = log


class IsolationError(SandboxError):
    """Isolation was required (KS_SANDBOX_REQUIRE_ISOLATION=True) but this host cannot provide it."""


class PackagingError(SandboxError):
    """A solution cannot be turned into a package (sources made at run time, untyped bindings); the message
    says what to change."""
