"""The agent's tools: OpenAI-format schemas and their implementations over a workspace and the sandbox.

Every tool returns a compact text observation; none raises for anything the model did wrong (a bad path, a
failed build, a wrong kernel): the observation says what happened and what to do.
"""

import hashlib
import json
import logging
import os
import re
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import sandbox
from sandbox import warm_pool
from sandbox.errors import BuildError, InvalidSolution
from sandbox.isolation import Jail

from agent import warm_analysis
from agent.context import truncate
from agent.workspace import MAX_FILE_BYTES, PathOutsideWorkspace, write_files

log = logging.getLogger(__name__)


def _tool(name, description, properties=None, required=()):
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {"type": "object", "properties": properties or {}, "required": list(required)},
        },
    }


_PATH = {"type": "string", "description": "relative to the workspace (e.g. kernels/k.cu), or under reference/"}
SCHEMAS = [
    _tool(
        "bash",
        "Run a shell command in a jailed copy of the workspace (no network, time-limited; file "
        "changes are copied back). Output is truncated.",
        {
            "command": {"type": "string"},
            "timeout": {"type": "integer", "description": "seconds (default 120, at most 600)"},
        },
        ["command"],
    ),
    _tool(
        "read_file",
        "Read a file (or list a folder). Long files are cut: ask for a line range.",
        {
            "path": _PATH,
            "start_line": {"type": "integer", "description": "first line, from 1"},
            "end_line": {"type": "integer", "description": "last line, inclusive"},
        },
        ["path"],
    ),
    _tool(
        "write_file",
        "Create or overwrite a file in the workspace with CONTENT.",
        {"path": _PATH, "content": {"type": "string"}},
        ["path", "content"],
    ),
    _tool(
        "edit_file",
        "Replace OLD_STRING with NEW_STRING in a file. OLD_STRING must match exactly (whitespace "
        "included) and be unique unless replace_all is true.",
        {
            "path": _PATH,
            "old_string": {"type": "string"},
            "new_string": {"type": "string"},
            "replace_all": {"type": "boolean"},
        },
        ["path", "old_string", "new_string"],
    ),
    _tool(
        "search",
        "Search file contents with a regular expression (Python syntax) over the workspace and the "
        "read-only reference/ folder (examples, torch stable-ABI headers).",
        {
            "pattern": {"type": "string"},
            "path": {"type": "string", "description": "a file or folder to search in (default: everything)"},
            "ignore_case": {"type": "boolean"},
        },
        ["pattern"],
    ),
    _tool("compile", "Build binding.cpp and kernels/ as the sandbox does; returns the compiler's errors if any."),
    _tool(
        "verify",
        "Evaluate the solution in the sandbox: build, correctness on fresh random inputs, timing "
        "against PyTorch eager and torch.compile, and the reward.",
    ),
    _tool("profile", "Verify, and also return the per-kernel time tables of the reference and of your solution."),
    _tool(
        "submit",
        "Finish the episode. The current files are verified first if they changed; the best "
        "verified solution of the episode is the result.",
        {"summary": {"type": "string", "description": "what you did, in a sentence or two"}},
    ),
]
TOOL_NAMES = [s["function"]["name"] for s in SCHEMAS]
_TYPES = {"string": str, "integer": int, "boolean": bool, "number": (int, float)}
_SKIP_DIRS = {"__pycache__", "build", ".ks-build", ".git"}
MAX_SEARCH_HITS = 100


@dataclass
class Result:
    observation: str
    verdict: object = None  # a sandbox Verdict
    files: dict | None = None  # the solution files the verdict is about
    done: bool = False


def check_arguments(name, arguments):
    """Why ARGUMENTS do not fit NAME's schema, or '' when they do."""
    if name not in TOOL_NAMES:
        return f"there is no tool {name!r}: the tools are {', '.join(TOOL_NAMES)}"
    params = SCHEMAS[TOOL_NAMES.index(name)]["function"]["parameters"]
    props = params["properties"]
    missing = [k for k in params["required"] if k not in arguments]
    if missing:
        return f"{name} needs {', '.join(missing)} (it takes {', '.join(props) or 'no arguments'})"
    for key, value in arguments.items():
        if key not in props:
            return f"{name} has no argument {key!r} (it takes {', '.join(props) or 'no arguments'})"
        kind = props[key]["type"]
        if not isinstance(value, _TYPES[kind]) or (kind == "integer" and isinstance(value, bool)):
            return f"{name}: {key} must be a {kind}, not {type(value).__name__}"
    return ""


def files_digest(files):
    return hashlib.sha256(json.dumps(files, sort_keys=True).encode()).hexdigest()


class Tools:
    """The tools of one episode, bound to its workspace, its (pristine) problem file and evaluation config."""

    def __init__(self, workspace, problem, config, bash_timeout_s=120.0, observation_chars=12000):
        self.ws = workspace
        self.problem = Path(problem)
        self.config = config
        self.bash_timeout_s = bash_timeout_s
        self.observation_chars = observation_chars
        self.verified = set()  # digests of the file sets already evaluated

    def run(self, call):
        """Run CALL (a ToolCall), filling its observation, verdict and seconds; returns the Result."""
        t0 = time.monotonic()
        problem = call.error or check_arguments(call.name, call.arguments)
        if problem:
            call.error = problem
            result = Result(f"error: {problem}. Nothing was run; call the tool again with valid arguments.")
        else:
            try:
                result = getattr(self, f"tool_{call.name}")(**call.arguments)
            except (PathOutsideWorkspace, PermissionError, IsADirectoryError, NotADirectoryError, UnicodeError) as exc:
                result = Result(f"error: {exc}")
        result.observation = truncate(result.observation, self.observation_chars)
        call.observation = result.observation
        call.verdict = result.verdict.to_json() if result.verdict is not None else None
        call.seconds = round(time.monotonic() - t0, 3)
        return result

    # -- files ------------------------------------------------------------------------------------------------
    def tool_read_file(self, path, start_line=None, end_line=None):
        if Path(path).parts[:1] == ("reference",) and len(Path(path).parts) == 1:
            return Result("reference/ (read-only):\n" + "\n".join(f"{name}/" for name in sorted(self.ws.references)))
        real = self.ws.resolve(path)
        if real.is_dir():
            entries = sorted(p for p in real.iterdir() if p.name not in _SKIP_DIRS)
            listing = "\n".join(
                f"{p.name}/" if p.is_dir() else f"{p.name}  ({p.stat().st_size} bytes)" for p in entries
            )
            return Result(f"{path}/:\n{listing or '(empty)'}")
        if not real.is_file():
            return Result(f"error: {path} does not exist")
        lines = real.read_text(errors="replace").splitlines(keepends=True)
        if start_line is None and end_line is None:
            text = "".join(lines)
            header = f"{path} ({len(lines)} lines)"
        else:
            first, last = max(1, start_line or 1), min(len(lines), end_line or len(lines))
            text = "".join(lines[first - 1 : last])
            header = f"{path} lines {first}-{last} of {len(lines)}"
        return Result(f"{header}\n{truncate(text, self.observation_chars - 200, 'read a line range')}")

    def tool_write_file(self, path, content):
        real = self.ws.resolve(path, write=True)
        if len(content.encode()) > MAX_FILE_BYTES:
            return Result(f"error: {path} would be larger than {MAX_FILE_BYTES >> 20} MB")
        if real.is_dir():
            return Result(f"error: {path} is a folder")
        real.parent.mkdir(parents=True, exist_ok=True)
        real.write_text(content)
        return Result(f"wrote {path} ({len(content.splitlines())} lines)")

    def tool_edit_file(self, path, old_string, new_string, replace_all=False):
        real = self.ws.resolve(path, write=True)
        if not real.is_file():
            return Result(f"error: {path} does not exist")
        text = real.read_text(errors="replace")
        count = text.count(old_string) if old_string else 0
        if count == 0:
            return Result(
                f"error: old_string was not found in {path}; read the file and copy the text exactly "
                f"(whitespace included)"
            )
        if count > 1 and not replace_all:
            return Result(
                f"error: old_string occurs {count} times in {path}; add surrounding lines to make it "
                f"unique, or set replace_all"
            )
        real.write_text(text.replace(old_string, new_string, -1 if replace_all else 1))
        return Result(f"edited {path}: replaced {count if replace_all else 1} occurrence(s)")

    def tool_search(self, pattern, path=None, ignore_case=False):
        try:
            regex = re.compile(pattern, re.IGNORECASE if ignore_case else 0)
        except re.error as exc:
            return Result(f"error: invalid regular expression: {exc}")
        if path in (None, "", "."):
            roots = [self.ws.root] + list(self.ws.references.values())
        elif Path(path).parts == ("reference",):
            roots = list(self.ws.references.values())
        else:
            roots = [self.ws.resolve(path)]
        hits, total = [], 0
        for root in roots:
            for file in sorted(root.rglob("*")) if root.is_dir() else [root]:
                if not file.is_file() or _SKIP_DIRS & set(file.parts) or file.stat().st_size > MAX_FILE_BYTES:
                    continue
                try:
                    text = file.read_text()
                except (UnicodeDecodeError, OSError):
                    continue
                for number, line in enumerate(text.splitlines(), 1):
                    if regex.search(line):
                        total += 1
                        if len(hits) < MAX_SEARCH_HITS:
                            hits.append(f"{self.ws.relative(file)}:{number}: {line.strip()[:200]}")
        if not hits:
            return Result(f"no match for {pattern!r}")
        if total > len(hits):
            hits.append(f"[{total - len(hits)} more matches not shown: narrow the pattern or the path]")
        return Result("\n".join(hits))

    # -- shell ------------------------------------------------------------------------------------------------
    def tool_bash(self, command, timeout=None):
        timeout = max(1.0, min(float(timeout or self.bash_timeout_s), 600.0))
        warm = self._warm_bash(command, timeout)
        if warm is not None:
            exit, changed = warm
        else:
            with Jail("bash", self.ws.device, uid_slot=2) as jail:
                copy = jail.give(self.ws.root, "workspace")
                exit = jail.run(["bash", "-c", "cd workspace || exit 1\n" + command], timeout)
                changed = sync_back(copy, self.ws.root)
        killed = exit.timed_out or exit.memory_exceeded or exit.signal
        status = exit.describe() if killed else f"exit code {exit.returncode}"
        note = f"\n[files changed: {', '.join(changed[:20])}{' ...' if len(changed) > 20 else ''}]" if changed else ""
        return Result(f"{status}\n{truncate(exit.output, self.observation_chars - 300, 'filter the output')}{note}")

    def _warm_bash(self, command, timeout):
        """(exit, files changed) of COMMAND run by the worker's warm pool, when it is the heuristic's analysis and a
        pool serves this worker; None when it runs in bash as any other command (the pool says why in the log)."""
        args = warm_analysis.arguments(command)
        if args is None or not warm_pool.socket_path():
            return None
        try:
            with warm_pool.run(self.ws.device, self.ws.root, "workspace", "workspace", args, timeout) as (exit, copy):
                return exit, sync_back(copy, self.ws.root)
        except warm_pool.Unavailable as exc:
            log.warning("%s: the analysis runs in a fresh jail: %s", self.ws.root, exc)
            return None

    # -- sandbox stages ---------------------------------------------------------------------------------------
    def tool_compile(self):
        from sandbox.native import build_workspace

        files = self.ws.solution_files()
        syntax = python_syntax_error(files)
        with tempfile.TemporaryDirectory(prefix="ks-agent-") as tmp, Jail("build", self.ws.device, uid_slot=3) as jail:
            write_files(tmp, files)
            try:
                result = build_workspace(tmp, self.ws.device, jail=jail, timeout=self.config.timeout_s)
            except BuildError as exc:
                return Result(f"compile failed:\n{exc}\n--- end of the compiler output ---\n{exc.log[-3000:]}{syntax}")
        how = "already built (cached)" if result.cached else f"compiled in {result.seconds:.1f} s"
        return Result(
            f"{how}: binding.cpp and {sum(k.startswith('kernels/') for k in files)} kernel file(s)"
            f"{syntax or '. model_new.py parses; verify runs it.'}"
        )

    def tool_verify(self):
        return self._evaluate(profile=False)

    def tool_profile(self):
        return self._evaluate(profile=True)

    def tool_submit(self, summary=""):
        files = self.ws.solution_files()
        if files_digest(files) in self.verified:
            return Result("submitted", done=True)
        result = self._evaluate(profile=False)
        result.observation = f"submitted; the files had changed since the last verification:\n{result.observation}"
        result.done = True
        return result

    def _evaluate(self, profile):
        files = self.ws.solution_files()
        with tempfile.TemporaryDirectory(prefix="ks-agent-") as tmp:
            write_files(tmp, files)
            try:
                verdict = sandbox.evaluate(self.problem, tmp, self.config, profile=profile)
            except InvalidSolution as exc:
                verdict = sandbox.Verdict(status="load_error", log=str(exc), device=self.config.device)
        self.verified.add(files_digest(files))
        return Result(describe_verdict(verdict, profile), verdict=verdict, files=files)


def python_syntax_error(files):
    try:
        compile(files.get("model_new.py", ""), "model_new.py", "exec")
    except SyntaxError as exc:
        return f"\nmodel_new.py has a syntax error, line {exc.lineno}: {exc.msg}"
    return ""


def sync_back(copy, root):
    """Mirror the jailed copy's regular files back into the workspace; returns the relative paths changed."""
    changed, seen = [], set()
    for dirpath, dirnames, filenames in os.walk(copy):
        dirnames[:] = [d for d in dirnames if d not in _SKIP_DIRS and not os.path.islink(os.path.join(dirpath, d))]
        for name in filenames:
            source = Path(dirpath, name)
            rel = source.relative_to(copy)
            seen.add(rel)
            if source.is_symlink() or not source.is_file() or source.stat().st_size > MAX_FILE_BYTES:
                continue
            target = Path(root, rel)
            if target.is_symlink() or target.is_dir():
                continue
            data = source.read_bytes()
            if not target.is_file() or target.read_bytes() != data:
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(data)
                changed.append(str(rel))
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d not in _SKIP_DIRS and not os.path.islink(os.path.join(dirpath, d))]
        for name in filenames:
            target = Path(dirpath, name)
            rel = target.relative_to(root)
            if rel not in seen and not target.is_symlink():
                target.unlink()
                changed.append(f"{rel} (deleted)")
    return changed


def describe_verdict(v, profile=False):
    """A sandbox verdict as the few lines a model acts on."""
    lines = [f"verify: {v.status}, reward {v.reward}"]
    if v.correct:
        passed = sum(1 for t in v.trials if t.get("ok"))
        lines.append(
            f"correct on {passed} trials (max abs error {v.max_abs_error:.2e}, max rel error {v.max_rel_error:.2e})"
        )
        judged = next((t for t in v.trials if t.get("judged_by")), None)
        if judged:
            lines.append(f"{judged['trial']} judged against {judged['judged_by']}")
        spread = v.timing.get("candidate", {}).get("spread_pct")
        lines.append(f"runtime {v.runtime_ms:.4f} ms" + (f" (spread {spread:.0f}%)" if spread is not None else ""))
        if v.eager_ms is not None and v.speedup_vs_eager is not None:
            lines.append(f"eager {v.eager_ms:.4f} ms: speedup {v.speedup_vs_eager:.2f}x")
        elif v.eager_ms is not None:  # a time of 0 on either side: no ratio to give
            lines.append(f"eager {v.eager_ms:.4f} ms: no speedup could be computed")
        if v.compiled_ms is not None and v.speedup_vs_compiled is not None:
            lines.append(f"torch.compile {v.compiled_ms:.4f} ms: speedup {v.speedup_vs_compiled:.2f}x")
        lines.append(_next_milestone(v))
    else:
        for trial in v.trials:
            if not trial.get("ok"):
                lines.append(
                    f"{trial['trial']}: max abs error {trial['max_abs_error']:.3g}, "
                    f"max rel error {trial['max_rel_error']:.3g}"
                )
        if v.violations:
            lines.append("violations: " + "; ".join(v.violations))
        if v.status == "compile_error":
            from sandbox.native.build import summarize_errors

            lines.append(summarize_errors(v.log) or v.log[-3000:])
        elif v.log:
            lines.append(v.log[-4000:])
    if profile and v.profile:
        from sandbox.profiling import format_table

        for who in ("reference", "candidate"):
            if who in v.profile:
                lines.append(f"\n{who} kernels:\n{format_table(v.profile[who])}")
    return "\n".join(line for line in lines if line)


def _next_milestone(v):
    from sandbox.reward import next_goal

    goal = next_goal(v.reward_schedule, v.reward)
    return f"next milestone ({goal})" if goal else "top reward reached; further speedups are still welcome"
