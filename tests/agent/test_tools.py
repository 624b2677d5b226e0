"""The tools: schemas, argument checks, file editing, search, the jailed shell and the sandbox stages."""

import pytest

from agent.tools import SCHEMAS, TOOL_NAMES, Tools, check_arguments
from agent.trajectory import ToolCall
from agent.workspace import Workspace


@pytest.fixture
def tools(tmp_path, relu_problem, fast_eval):
    ws = Workspace.create(tmp_path / "ws", relu_problem, "cpu")
    return Tools(ws, relu_problem, fast_eval, bash_timeout_s=30, observation_chars=2000)


def run(tools, name, **arguments):
    call = ToolCall(name, arguments)
    tools.run(call)
    return call.observation


def test_schemas_are_in_the_openai_tool_format():
    assert TOOL_NAMES == [
        "bash",
        "read_file",
        "write_file",
        "edit_file",
        "search",
        "compile",
        "verify",
        "profile",
        "submit",
    ]
    for schema in SCHEMAS:
        assert schema["type"] == "function"
        params = schema["function"]["parameters"]
        assert params["type"] == "object" and set(params["required"]) <= set(params["properties"])
        assert schema["function"]["description"]


def test_arguments_are_checked_against_the_schema():
    assert check_arguments("read_file", {"path": "a"}) == ""
    assert "there is no tool 'rm'" in check_arguments("rm", {})
    assert "read_file needs path" in check_arguments("read_file", {})
    assert "start_line must be a integer" in check_arguments("read_file", {"path": "a", "start_line": "3"})
    assert "has no argument 'force'" in check_arguments("compile", {"force": True})


def test_edit_file_replaces_an_exact_unique_string(tools):
    run(tools, "write_file", path="kernels/k.cpp", content="int a = 1;\nint b = 1;\n")
    assert run(tools, "edit_file", path="kernels/k.cpp", old_string="int a = 1;", new_string="int a = 2;").startswith(
        "edited"
    )
    assert "occurs 2 times" in run(tools, "edit_file", path="kernels/k.cpp", old_string="= ", new_string="=")
    assert "not found" in run(tools, "edit_file", path="kernels/k.cpp", old_string="int c", new_string="x")
    assert run(tools, "edit_file", path="kernels/k.cpp", old_string=" = ", new_string="=", replace_all=True).startswith(
        "edited kernels/k.cpp: replaced 2"
    )
    assert (tools.ws.root / "kernels/k.cpp").read_text() == "int a=2;\nint b=1;\n"


def test_read_file_gives_line_ranges_and_cuts_long_files_with_a_note(tools):
    run(tools, "write_file", path="big.txt", content="".join(f"line {i}\n" for i in range(1, 2001)))
    whole = run(tools, "read_file", path="big.txt")
    assert "characters cut" in whole and "read a line range" in whole and len(whole) < 2500
    assert (
        run(tools, "read_file", path="big.txt", start_line=10, end_line=11)
        == "big.txt lines 10-11 of 2000\nline 10\nline 11\n"
    )


def test_search_finds_matches_in_the_workspace_and_the_reference(tools):
    found = run(tools, "search", pattern=r"STABLE_TORCH_LIBRARY\(")
    assert "binding.cpp:" in found and "reference/examples/cuda_rowsum/binding.cpp:" in found
    assert run(tools, "search", pattern="empty_like", path="reference/torch_stable").startswith(
        "reference/torch_stable"
    )
    in_reference = run(tools, "search", pattern=r"STABLE_TORCH_LIBRARY\(", path="reference/").splitlines()
    assert in_reference and all(line.startswith("reference/") for line in in_reference)
    assert "invalid regular expression" in run(tools, "search", pattern="(")


def test_bash_runs_jailed_in_a_copy_and_copies_changes_back(tools):
    out = run(
        tools, "bash", command="echo made > new.txt && rm kernels/copy.cpp && ls && touch /usr/evil; echo exit=$?"
    )
    assert out.startswith("exit code 0") and "model_new.py" in out
    assert "exit=1" in out  # the rest of the filesystem is read-only
    assert (tools.ws.root / "new.txt").read_text() == "made\n"
    assert not (tools.ws.root / "kernels/copy.cpp").exists()
    assert "new.txt" in out and "kernels/copy.cpp (deleted)" in out


def test_bash_times_out_and_truncates_its_output(tools):
    assert "timed out" in run(tools, "bash", command="sleep 30", timeout=1)
    flood = run(tools, "bash", command="seq 1 100000")
    assert "characters cut" in flood and flood.rstrip().endswith("100000")


def test_compile_reports_the_compiler_errors(tools):
    assert "compiled in" in run(tools, "compile") or "already built" in run(tools, "compile")
    run(tools, "edit_file", path="kernels/copy.cpp", old_string="y[i] = x[i];", new_string="y[i] = x[i] +;")
    out = run(tools, "compile")
    assert out.startswith("compile failed") and "error" in out and "copy.cpp" in out


def test_profile_returns_the_verdict_and_the_kernel_tables(tools, relu_solution):
    for rel, text in relu_solution.items():
        run(tools, "write_file", path=rel, content=text)
    call = ToolCall("profile", {})
    result = tools.run(call)
    assert result.verdict.correct and result.files == tools.ws.solution_files()
    assert call.observation.startswith("verify: ok, reward")
    assert "reference kernels:" in call.observation and "aten::relu" in call.observation
    assert "candidate kernels:" in call.observation and "::relu" in call.observation.split("candidate kernels:")[1]


def test_the_cpu_reference_example_is_a_correct_solution(tmp_path, fast_eval):
    """The examples in reference/ are what the model copies from: they must stay correct (the CUDA ones need a
    GPU: their place is tests/gpu)."""
    from sandbox import evaluate
    from agent.workspace import EXAMPLES

    example = EXAMPLES / "cpu_add_relu"
    problem = tmp_path / "problem.py"
    problem.write_text((example / "problem.py").read_text().replace("4096, 1024", "128, 256"))
    verdict = evaluate(problem, example, fast_eval)
    assert verdict.status == "ok", verdict.log[-2000:]


def test_a_correct_verdict_without_a_speedup_is_described_not_a_crash():
    from agent.tools import describe_verdict
    from sandbox import Verdict

    v = Verdict(
        status="ok",
        correct=True,
        reward=1,
        runtime_ms=0.0,
        eager_ms=0.0,
        max_abs_error=0.0,
        max_rel_error=0.0,
        trials=[{"ok": True}],
    )
    text = describe_verdict(v)
    assert "runtime 0.0000 ms" in text and "no speedup could be computed" in text


@pytest.mark.parametrize(
    "schedule, reward, goal",
    [
        ("paper", 1, "next milestone (reward 2: take more than 5% off eager's time)"),
        ("paper", 2, "next milestone (reward 3: take more than 5% off torch.compile's time too)"),
        ("paper", 3, "top reward reached"),
        ("milestone", 0, "next milestone (reward 1: be faster than eager)"),
        ("milestone", 2, "next milestone (reward 3: beat both baselines by at least 5%)"),
        ("milestone", 3, "top reward reached"),
    ],
)
def test_the_next_goal_follows_the_verdicts_reward_schedule(schedule, reward, goal):
    from agent.tools import describe_verdict
    from sandbox import Verdict

    v = Verdict(
        status="ok",
        correct=True,
        reward=reward,
        reward_schedule=schedule,
        runtime_ms=1.0,
        eager_ms=1.2,
        speedup_vs_eager=1.2,
        max_abs_error=0.0,
        max_rel_error=0.0,
        trials=[{"ok": True}],
    )
    assert goal in describe_verdict(v)
