"""The tools library: the calculator against fractions computed here, the sandbox's limits and refusals as a
model's worst programs meet them, PoT's recorded programs run again, and tools as data."""

from __future__ import annotations

import json
import re
from fractions import Fraction
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from olakit.data.loaders import resolve_data_dir
from olakit.errors import DataError
from olakit.tools import load_tools, read_tool
from olakit.tools.calculator import calculate, evaluate
from olakit.tools.errors import ToolError
from olakit.tools.sandbox import Limits, Sandbox


def _pot() -> Path:
    try:
        return resolve_data_dir() / "external" / "pot"
    except DataError:
        return Path("no-data")


POT = _pot()


# -- the calculator ---------------------------------------------------------------------------------------------


def read_answer(text: str) -> Fraction:
    """The calculator's answer read back, by its documented forms: 'p/q (decimal)', or a decimal or integer."""
    m = re.fullmatch(r"(-?\d+)/(\d+) \(.*\)", text)
    return Fraction(int(m[1]), int(m[2])) if m else Fraction(text)


@st.composite
def expressions(draw, depth=3):
    """An expression's text and its exact value, built together (the value by Fraction, never by the calculator)."""
    if depth == 0 or draw(st.booleans()):
        if draw(st.booleans()):
            n = draw(st.integers(0, 10**6))
            return str(n), Fraction(n)
        whole, places = draw(st.integers(0, 9999)), draw(st.integers(1, 6))
        frac = draw(st.integers(0, 10**places - 1))
        written = f"{whole}.{str(frac).rjust(places, '0')}"
        return written, Fraction(written)
    (a, va), (b, vb) = draw(expressions(depth=depth - 1)), draw(expressions(depth=depth - 1))
    op = draw(st.sampled_from("+-*/"))
    if op == "/" and vb == 0:
        op = "+"
    value = {"+": va + vb, "-": va - vb, "*": va * vb, "/": va / vb if vb else None}[op]
    if draw(st.booleans()):
        return f"-({a} {op} {b})", -value
    return f"({a} {op} {b})", value


@settings(max_examples=300, deadline=None)
@given(expressions())
def test_the_calculator_is_exact_over_integers_fractions_and_decimals(case):
    text, value = case
    assert evaluate(text) == value
    assert read_answer(calculate(text)) == value


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 10**9), st.sampled_from(["$", "€", ""]), st.integers(0, 100))
def test_the_calculators_stated_rules_read_money_thousands_and_percents(amount, currency, pct):
    grouped = f"{amount:,}"
    assert read_answer(calculate(f"{currency}{grouped} * {pct}%")) == Fraction(amount * pct, 100)
    assert read_answer(calculate(f"{grouped} + 1 =")) == amount + 1


def test_the_calculators_forms_and_refusals():
    cases = {
        "0.1 + 0.2": "0.3", "2/3": "2/3 (0.666666666667)", "2^10": "1024", "7 % 3": "1", "10% * 250": "25",
        "3 × 4 ÷ 6": "2", "sqrt(9/4)": "1.5", "sqrt(2)": "1.41421356237", "-5 // 2": "-3", "2**-2": "0.25",
        "factorial(20)": "2432902008176640000", "round(2/3, 3)": "0.667", "24 - 6 = 18": None,
    }  # fmt: skip
    for text, shown in cases.items():
        if shown is not None:
            assert calculate(text) == shown, text
    for bad, says in {
        "1/0": "division by zero", "2**100000": "exponent past", "x + 1": "'x' is not defined",
        "__import__('os').system('ls')": "not available|not defined", "(1).__class__": "not available",
        "'a' * 3": "is not a number", "": "no expression", "(-8)**(1/3)": "no real value",
        "24 - 6 = 18": "is not an expression", "[1, 2]": "not available", "1 if 1 else 2": "not available",
    }.items():  # fmt: skip
        with pytest.raises(ToolError, match=says):
            calculate(bad)


def test_every_calculator_function_and_limit_by_hand():
    """Each function's value and each refusal, worked by hand (mutation testing found them untested)."""
    values = {
        "log(8, 2)": "3", "log10(1000)": "3", "log2(1024)": "10", "exp(0)": "1", "sin(0)": "0", "cos(0)": "1",
        "tan(0)": "0", "degrees(pi)": "180", "radians(180)": "3.14159265359", "factorial(5)": "120",
        "comb(5, 2)": "10", "perm(5, 2)": "20", "gcd(12, 18)": "6", "lcm(4, 6)": "12", "floor(2.7)": "2",
        "ceil(2.1)": "3", "floor(-2.5)": "-3", "round(2.5)": "2", "round(3.5)": "4", "round(1.2345, 2)": "1.23",
        "sqrt(2.25)": "1.5", "sqrt(8)": "2.82842712475", "abs(-3/4)": "0.75", "min(3, 1/2)": "0.5",
        "max(3, 7/2)": "3.5", "7 // 2": "3", "7.5 // 2": "3", "-7 % 3": "2", "0^0": "1", "2^10000 // 2^9999": "2",
        "1.5 ^ 0.5": "1.22474487139", "1/1024": "0.0009765625", "1 / 2^200": None, "2 ^ -1": "0.5",
        "1_000 + 1": "1001", "1e400 / 1e399": "10", "log(1)": "0", "log(e)": "1", "sqrt(0)": "0", "sqrt(9)": "3",
    }  # fmt: skip
    for text, shown in values.items():
        got = calculate(text)
        if shown is None:  # a finite decimal too long to show: the fraction and 12 digits
            assert got.startswith("1/1606938044258990275541962092341162602522202993782792835301376 (6.22301527786e-61)")
        else:
            assert got == shown, (text, got)
    refusals = {
        "log(-1)": "log takes a positive number", "log(5, 1)": "a positive base other than 1", "log(0)": "positive",
        "factorial(2.5)": "factorial takes whole numbers from 0 to 10000", "factorial(10001)": "from 0 to 10000",
        "factorial(-1)": "from 0 to 10000", "comb(3.5, 1)": "comb takes whole numbers", "gcd(1.5, 3)":
        "gcd takes whole numbers", "lcm(2, 0.5)": "lcm takes whole numbers", "sqrt(-1)":
        "the square root of a negative number", "5 % 0": "modulo by zero", "5 // 0": "division by zero",
        "0 ^ -1": "0 to a negative power", "2 ^ 10001": "an exponent past 10000", "(10^5) ^ 2500":
        "a number past 4000 digits", "1e5000": "a number past 4000 digits", "exp(1000)": "exp: math range error",
        "round(1/3, 0.5)": "round's places must be a whole number", "1.5 ^ 10000.5": "the power is too large",
        "x" * 2001: "at most 2000 characters", "factorial(2000)": "a number past 4000 digits",
    }  # fmt: skip
    for text, says in refusals.items():
        with pytest.raises(ToolError, match=r"^calculator: .*" + re.escape(says)):
            calculate(text)


def test_program_answers_name_their_rule():
    from olakit.tools.program import choice_request, chosen_option, program_answer
    from olakit.tools.program import closest_option as closest_option_of
    from olakit.tools.sandbox import Execution
    from olakit.types import Question

    number = Question("q", "d", "How many?", {}, "18", kind="number")
    choice = Question("c", "d", "Which?", {"A": "12", "B": "$25"}, "B")
    assert program_answer(Execution(status="timeout", error="t"), number) == (None, "program:timeout")
    assert program_answer(Execution(status="ok", ans=None), number) == (None, "program:no_ans")
    assert program_answer(Execution(status="ok", ans="18.0"), number) == ("18", "program:number:plain")
    assert program_answer(Execution(status="ok", ans="lots"), number) == (None, "program:none")
    assert program_answer(Execution(status="ok", ans="B"), choice) == ("B", "program:choice:label")
    assert program_answer(Execution(status="ok", ans="24.9"), choice) == ("B", "program:choice:closest_number")
    assert program_answer(Execution(status="ok", ans="many"), choice) == (None, "program:none")
    request = choice_request(choice, "24.9")
    assert request.message_dicts()[0]["content"] == (
        "Find the option closest to the prediction, and reply with its letter only.\n\nQuestion: Which?\n"
        "Options: A)12 B)$25\nPrediction: 24.9\nClosest option:"
    )
    assert request.call_params() == {"temperature": 0, "max_tokens": 8, "stop": ["\n"]}
    assert [chosen_option(t, choice) for t in (" B", "(A)", "$25", "C", None)] == ["B", "A", "B", None, None]
    assert closest_option_of("11", {"A": "none", "B": "10", "C": "30"}) == "B"  # an option without a number skipped


def test_a_reply_without_a_program_and_one_that_needs_pots_names(box):
    from olakit.tools.program import run_program

    none = run_program(box, "I think the answer is 7.")
    assert (none.status, none.error) == ("error", "no program in the reply (a ```python block, or Python alone)")
    solved = run_program(box, "```python\nx = Symbol('x')\nans = solve_it(2 * x - 6, x)[x]\n```")
    assert (solved.status, solved.ans) == ("ok", "3")  # PoT's names at hand: sympy's Symbol and its solve_it


# -- the sandbox ------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def box():
    with Sandbox(limits=Limits(cpu_s=2, wall_s=4, memory_mb=256, output_chars=2000), workers=2) as sandbox:
        yield sandbox


WORST = {
    # a model's worst programs: each ends with a clear status and message, never a hung or crashed run
    "a socket": ("import socket\ns = socket.socket()\ns.connect(('127.0.0.1', 9))", "blocked", "network"),
    "a URL": ("import urllib.request\nurllib.request.urlopen('http://127.0.0.1:9')", "blocked", "network"),
    "a write outside": ("open('/tmp/olakit-escape.txt', 'w').write('x')", "blocked", "only the program's folder"),
    "a write upward": ("open('../olakit-escape.txt', 'w').write('x')", "blocked", "only the program's folder"),
    "a removal outside": ("import os\nos.remove('/etc/hostname')", "blocked", "os.remove"),
    "an infinite loop": ("while True:\n    pass", "timeout", "CPU-time limit"),
    "a sleep": ("import time\ntime.sleep(60)", "timeout", "wall-clock limit"),
    "a fork bomb": ("import os\nwhile True:\n    os.fork()", "blocked", "os.fork"),
    "a subprocess": ("import subprocess\nsubprocess.run(['true'])", "blocked", "subprocess"),
    "ctypes": ("import ctypes\nctypes.CDLL(None)", "blocked", "ctypes"),
    "a memory hog": ("x = bytearray(4 * 1024**3)", "memory", "memory limit"),
    "a growing list": ("x = []\nwhile True:\n    x.append(' ' * 10**6)", "memory", "memory limit"),
    "a huge output": ("while True:\n    print('x' * 1000)", "output", "output limit"),
    "a syntax error": ("ans = (", "error", "SyntaxError"),
    "an exit": ("import sys\nsys.exit(3)", "error", "SystemExit: 3"),
    # issue 52, finding 3: an early exit was recorded as "memory" ("out of memory?")
    "an early exit": ("import os\nos._exit(7)", "error", "exit status 7"),
}


@pytest.mark.parametrize("name", WORST)
def test_the_sandbox_ends_a_models_worst_programs_with_a_clear_observation(box, name):
    program, status, says = WORST[name]
    # the limit under test is reached first however busy the machine: a loaded one gives the loop less than its CPU
    # time within the box's 4 s of wall clock (the wall-clock limit would end it first), and a fresh-clone run once
    # spent the growing list's 2 CPU s before its 256 MB (status timeout, the program's own time 0.0 s)
    first = {"CPU-time limit": Limits(cpu_s=2, wall_s=120, memory_mb=256, output_chars=2000),
             "memory limit": Limits(cpu_s=60, wall_s=120, memory_mb=256, output_chars=2000)}.get(says)  # fmt: skip
    run = box.run(program, limits=first)
    assert run.status == status, (name, run)
    assert says in run.error and run.observation().startswith(f"{status}: ")
    assert not Path("/tmp/olakit-escape.txt").exists()


def test_the_sandbox_gives_ans_and_print_reuses_its_workers_and_keeps_nothing_between_programs(box, monkeypatch):
    run = box.run("import sympy\nx = sympy.Symbol('x')\nprint('solving')\nans = sympy.solve(2 * x - 4, x)")
    assert (run.status, run.ans, run.stdout) == ("ok", "[2]", "solving\n")
    assert run.observation() == "solving\nans = [2]"
    pids = set()
    for _ in range(6):
        pids.add(box.run("import os\nans = os.getppid()").ans)  # the worker each program was forked from
    assert len(pids) <= 2  # two workers, reused
    box.run("import math\nmath.LEAK = 1\nopen('kept.txt', 'w').write('x')\nans = 1")
    after = box.run("import math, os\nans = [hasattr(math, 'LEAK'), os.listdir('.')]")
    assert after.ans == "[False, []]"  # a fresh fork and a fresh folder each time
    assert box.run("x = 1").note == "the program set no ans"


def test_the_sandbox_sees_no_secret_and_no_olakit_setting(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret")
    monkeypatch.setenv("OLAKIT_API_KEY", "sk-other")
    monkeypatch.setenv("MY_SERVICE_TOKEN", "t")
    monkeypatch.setenv("OLAKIT_BASE_URL", "http://x")
    with Sandbox(workers=1) as sandbox:
        seen = sandbox.run("import os\nans = sorted(os.environ)").ans
        assert "network-namespace" in sandbox.isolation or "audit-hook" in sandbox.isolation
    for name in ("OPENAI_API_KEY", "OLAKIT_API_KEY", "MY_SERVICE_TOKEN", "OLAKIT_BASE_URL"):
        assert name not in seen


def test_the_sandbox_refuses_bad_limits_and_scopes():
    with pytest.raises(DataError, match="cpu_s must be above 0"):
        Limits(cpu_s=0)
    with pytest.raises(DataError, match="memory_mb must be 0"):
        Limits(memory_mb=-1)
    with Sandbox() as sandbox, pytest.raises(DataError, match="scopes must be"):
        sandbox.run("ans = 1", scopes="global")


def test_split_scopes_are_pots_exec_inside_a_function(box):
    """In PoT's harness a function the program defines cannot see the program's own top-level names."""
    program = "k = 3\ndef f():\n    return k\nans = f()"
    assert box.run(program).ans == "3"
    split = box.run(program, scopes="split")
    assert split.status == "error" and "NameError" in split.error


# -- PoT's recorded programs ------------------------------------------------------------------------------------


def test_pots_presenters_make_its_predictions(box):
    from olakit.tools.pot import PREAMBLE

    cases = [  # program, presenter, PoT's prediction worked by hand from its tool.py
        ("ans = np.float64(2.345)", "text", "2.35"),  # numpy: rounded to 2 places
        ("ans = [Symbol('x') * 0 + 3]", "text", "3.0"),  # a list of one sympy number: it, rounded
        ("ans = Eq(Symbol('x'), 2)", "text", "Eq(x, 2)"),  # a relation: its text
        ("ans = solve_it(Symbol('y') * 2 - 5, Symbol('y'))[Symbol('y')]", "text", "2.5"),
        ("ans = 0", "text", None),  # a false value: no answer
        ("ans = (160, 300)", "number", 160.0),
        ("ans = {'a': 7}", "number", 7.0),
        ("ans = True", "number", True),
        ("ans = 'x7'", "number", "x7"),
        ("ans = (160, 300)", "text_number_value", "(160, 300)"),
        ("ans = 1 / 3", "text_number", "0.3333333333333333"),
    ]
    for program, presenter, expected in cases:
        run = box.run(program, preamble=PREAMBLE, scopes="split", presenter=f"olakit.tools.pot:{presenter}")
        assert run.ok and run.ans == expected, (program, presenter, run)


@pytest.mark.skipif(not POT.is_dir(), reason="PoT's recorded outputs are in ../shared/data/external/pot")
def test_pots_recorded_programs_give_their_recorded_answers(box):
    from olakit.tools.pot import replay

    gsm = replay(POT / "outputs" / "gsm8K_s0_e-1_11_17_10_20.jsonl", box, limit=80)
    assert gsm["same"].all(), gsm[~gsm["same"]]
    aqua = replay(POT / "outputs" / "aqua_s0_e-1_11_06_18_38.jsonl", box, limit=50)
    # question 47's program uses an x it never defines: PoT recorded 30000.0 (x solved for as a sympy Symbol),
    # so the harness it was recorded with (Nov 6, before tool.py's first commit) had an x; the published one has none
    assert aqua.loc[~aqua["same"], "i"].tolist() == [47]
    assert "NameError: name 'x' is not defined" in aqua.loc[47, "error"]


# -- tools as data ----------------------------------------------------------------------------------------------


def test_tools_are_data_and_a_user_adds_one_from_a_folder(tmp_path, monkeypatch):
    built_in = load_tools()
    assert {"calculator", "python"} <= set(built_in)
    assert built_in["calculator"]("40,000 * 3%") == "1200"
    assert built_in["python"]("print(2)\nans = 3") == "2\nans = 3"
    (tmp_path / "shout.py").write_text("def shout(text):\n    return text.upper()\n")
    (tmp_path / "shout.json").write_text(json.dumps(
        {"name": "shout", "description": "Says it loudly.", "input": "a text", "function": "shout.py:shout"}
    ))  # fmt: skip
    monkeypatch.setenv("OLAKIT_TOOLS_DIR", str(tmp_path))
    tools = load_tools()
    assert tools["shout"]("hi") == "HI" and tools["shout"].shown() == "shout[a text]: Says it loudly."
    bad = {
        "no name": ({"description": "d", "input": "i", "function": "m:f"}, "non-empty string 'name'"),
        "a bad name": ({"name": "two words", "description": "d", "input": "i", "function": "m:f"}, "one word"),
        "no function": ({"name": "t", "description": "d", "input": "i", "function": "nofunction"}, "module:func"),
        "a stray field": ({"name": "t", "description": "d", "input": "i", "function": "m:f", "x": 1}, "unknown"),
    }
    for case, (obj, says) in bad.items():
        path = tmp_path / "bad" / f"{case}.json"
        path.parent.mkdir(exist_ok=True)
        path.write_text(json.dumps(obj))
        with pytest.raises(DataError, match=says):
            read_tool(path)
    missing = read_tool(
        _write(tmp_path / "m.json", {"name": "m", "description": "d", "input": "i", "function": "no:f"})
    )
    with pytest.raises(DataError, match="tool 'm': function 'no:f': cannot import it"):
        missing("x")


def _write(path: Path, obj) -> Path:
    path.write_text(json.dumps(obj))
    return path


# -- the tool loop ----------------------------------------------------------------------------------------------


def counting_tool(tmp_path: Path) -> tuple[dict, Path]:
    """A user's tool that logs each real call to a file (so a cached result is seen not to call it)."""
    (tmp_path / "tally.py").write_text(
        "from pathlib import Path\n\n\ndef tally(text):\n"
        f"    with open({str(tmp_path / 'calls.log')!r}, 'a') as f:\n        f.write(text + '\\n')\n"
        "    return str(len(text))\n"
    )
    (tmp_path / "tally.json").write_text(json.dumps(
        {"name": "tally", "description": "Counts characters.", "input": "a text", "function": "tally.py:tally"}
    ))  # fmt: skip
    return read_tool(tmp_path / "tally.json"), tmp_path / "calls.log"


def test_the_text_protocol_runs_each_action_records_it_and_stops_at_the_cap(tmp_path):
    from olakit.llm import Request
    from olakit.llm.answerer import Counted, ScriptedModel
    from olakit.tools.loop import ANSWER_NOW, ToolCache, max_calls, run_loops

    tally, log = counting_tool(tmp_path)
    tools = [load_tools()["calculator"], tally]
    script = {  # the model's turn by the number of its earlier turns
        0: "Thought: first the product.\nAction: calculator[17 * 23]",
        1: "Action: tally[abcd]",
        2: "Action: calculator[1/0]",
        3: "Action: nothing[here]",
        4: "Action: calculator 2+2",  # malformed
        5: "Answer: 391",
    }

    def reply(prompt, request):
        assert request.get("stop", [None])[0] == "Observation:" or request["messages"][-1]["content"] == ANSWER_NOW
        return script[sum(m["role"] == "assistant" for m in request["messages"])]

    model = Counted(ScriptedModel(reply))
    cache = ToolCache(tmp_path / "tool-cache")
    (loop,) = run_loops(model, [Request.make("What is 17 * 23?", max_tokens=40)], tools, protocol="text",
                        max_steps=6, cache=cache)  # fmt: skip
    assert (loop.text, loop.stopped, loop.calls) == ("Answer: 391", "answered", 6)
    assert [(t["step"], t["tool"], t["status"]) for t in loop.trace] == [
        (1, "calculator", "ok"), (2, "tally", "ok"), (3, "calculator", "error"), (4, "nothing", "unknown tool"),
        (5, "", "malformed")]  # fmt: skip
    assert [t["output"] for t in loop.trace[:3]] == ["391", "4", "calculator: division by zero"]
    assert "calculator[one arithmetic expression" in loop.messages[0]["content"]  # the tools listed
    assert loop.messages[2] == {"role": "user", "content": "Observation: 391"}
    assert model.counts["paid"] == 6 and max_calls(6) == 7
    # the step cap: two rounds of tools, then the model is told to answer; a call it asks past the cap is not run
    capped = Counted(ScriptedModel(lambda p, r: "Action: tally[again]"))
    (loop,) = run_loops(capped, [Request.make("Count.", max_tokens=40)], tools, protocol="text", max_steps=2,
                        cache=cache)  # fmt: skip
    assert (loop.stopped, loop.calls, capped.counts["paid"]) == ("step cap", 3, 3)
    assert [t["status"] for t in loop.trace] == ["ok", "ok", "step cap"]
    assert [t["cached"] for t in loop.trace[:2]] == [False, True]  # the same input: the kept result
    assert log.read_text().splitlines() == ["abcd", "again"]  # the tool itself ran once per distinct input


def test_the_openai_protocol_through_the_real_client_and_a_server(tmp_path):
    """The OpenAI tools API end to end: the tools sent as functions, the model's tool_calls run and answered with
    tool messages, a malformed call and an unknown tool reported to it; the replies (tool calls included) are
    cached, so a rerun makes no request."""
    from olakit.llm import Endpoint, Request
    from olakit.llm.client import LLM
    from olakit.llm.loopback import Loopback
    from olakit.tools.loop import ToolCache, run_loops

    seen = []

    def reply(prompt, request):
        seen.append(request)
        turns = sum(m["role"] == "assistant" for m in request["messages"])
        if turns == 0:
            return {"tool_calls": [
                {"name": "calculator", "arguments": {"input": "(12.5 + 3/4) * 8"}},
                {"name": "python", "arguments": "{not json"},
                {"name": "search", "arguments": {"input": "x"}},
            ]}  # fmt: skip
        if turns == 1:
            return {"content": "Checking.", "tool_calls": [{"name": "python", "arguments": {"input": "ans = 106 - 0"}}]}
        return "Answer: 106"

    tools = list(load_tools().values())
    with Loopback(reply=reply) as srv:
        for run in (1, 2):
            before = srv.requests
            llm = LLM(Endpoint(base_url=srv.base_url, model="fake"), cache_dir=tmp_path / "cache", progress=False)
            (loop,) = run_loops(llm, [Request.make("What is (12.5 + 3/4) * 8?", max_tokens=40)], tools,
                                protocol="openai", max_steps=4, cache=ToolCache(tmp_path / "tools"))  # fmt: skip
            llm.close()
            assert (loop.text, loop.stopped, loop.calls) == ("Answer: 106", "answered", 3)
            assert [(t["tool"], t["status"], t["output"][:12]) for t in loop.trace] == [
                ("calculator", "ok", "106"), ("python", "malformed", "malformed ca"),
                ("search", "unknown tool", "unknown tool"), ("python", "ok", "ans = 106")]  # fmt: skip
            assert srv.requests - before == (3 if run == 1 else 0)  # the second run: every reply from the cache
    first = seen[0]
    assert [t["function"]["name"] for t in first["tools"]] == ["calculator", "facts", "notes", "python"]
    assert first["tools"][0]["function"]["parameters"]["required"] == ["input"]
    second = seen[1]["messages"]
    assert second[1]["tool_calls"][0]["function"] == {
        "name": "calculator",
        "arguments": '{"input": "(12.5 + 3/4) * 8"}',
    }
    assert [(m["role"], m["tool_call_id"]) for m in second[2:]] == [
        ("tool", "call_0"),
        ("tool", "call_1"),
        ("tool", "call_2"),
    ]


def test_a_models_worst_programs_in_the_loop_end_as_observations(tmp_path):
    from olakit.llm import Request
    from olakit.llm.answerer import ScriptedModel
    from olakit.tools.loop import run_loops

    programs = {
        "Open a socket.": ("import socket\nsocket.create_connection(('127.0.0.1', 9))", "blocked"),
        "Write outside.": ("open('/tmp/olakit-loop-escape', 'w').write('x')", "blocked"),
        "Loop forever.": ("while True:\n    pass", "timeout"),
    }

    def reply(prompt, request):
        if any(m["role"] == "tool" for m in request["messages"]):
            return "Answer: none"
        return {"tool_calls": [{"name": "python", "arguments": {"input": programs[prompt][0]}}]}

    loops = run_loops(ScriptedModel(reply), [Request.make(q) for q in programs], [load_tools()["python"]],
                      protocol="openai", max_steps=1)  # fmt: skip
    for loop, (_, status) in zip(loops, programs.values()):
        assert loop.text == "Answer: none" and loop.trace[0]["status"] == status, loop.trace
        assert loop.trace[0]["output"].startswith(f"{status}: ")
    assert not Path("/tmp/olakit-loop-escape").exists()


# -- OlaGPT's templates with tools, and PoT --------------------------------------------------------------------


def _frame(result):
    import pandas as pd

    from olakit.data.records import to_frame

    return result.records if isinstance(result.records, pd.DataFrame) else to_frame(result.records)


def scripted_olagpt(protocol: str):
    """A model for OlaGPT runs: question types, a PoT program, and a tool call before the answer (by protocol)."""

    def reply(prompt, request):
        messages = request["messages"]
        if "Write a Python program" in prompt:
            return "Here it is:\n```python\nfrom fractions import Fraction\nans = 16 - 3 - 4\nans = ans * 2\n```"
        if not any(m["role"] == "assistant" for m in messages) and ("Action:" in messages[0]["content"] or
                                                                      request.get("tools")):  # fmt: skip
            if protocol == "openai":
                return {"tool_calls": [{"name": "calculator", "arguments": {"input": "(16 - 3 - 4) * 2"}}]}
            return "I will compute.\nAction: calculator[(16 - 3 - 4) * 2]"
        if any(m["role"] in ("tool", "assistant") for m in messages):
            return "The answer is 18."
        if "type" in prompt.lower() and "question" in prompt.lower() and len(prompt) < 2000 and "Answer" not in prompt:
            return "arithmetic"
        return "The answer is 17."

    return reply


@pytest.mark.parametrize("protocol", ["text", "openai"])
def test_an_olagpt_run_with_tools_and_pot_on_a_numeric_dataset(protocol, tmp_path, monkeypatch):
    """GSM8K's first two questions (gold 18 and 3), ST with the calculator, turbo without tools, PoT's program: ST
    answers 18 after its tool call (2 calls each, both paid in its record), turbo 17, PoT's ans 18 read as a
    number; the plan counts the loop's ceiling."""
    from olakit.llm.answerer import Counted, ScriptedModel
    from olakit.olagpt.budget import planned_calls
    from olakit.olagpt.config import OlaGPTConfig
    from olakit.olagpt.run import run

    monkeypatch.setenv("OLAKIT_CACHE_DIR", str(tmp_path / "cache"))
    cfg = OlaGPTConfig(dataset="gsm8k/test.jsonl", n_questions=2, templates=["turbo", "ST", "PoT"],
                       strategies=["zero-shot"], tools="all", tool_names=["calculator"], tool_templates=["ST"],
                       tool_protocol=protocol, tool_steps=2)  # fmt: skip
    stages = {s.name: (s.calls, s.exact) for s in planned_calls(cfg)}
    assert stages["answers"] == (2 * 2, True) and stages["answers with tools"] == (2 * 3, False)
    model = Counted(ScriptedModel(scripted_olagpt(protocol)))
    df = _frame(run(cfg, model)).set_index(["question_id", "template"])
    first = df.loc["0"]
    assert (first.loc["ST", "extracted"], first.loc["turbo", "extracted"], first.loc["PoT", "extracted"]) == (
        "18", "17", "18")  # fmt: skip
    assert first.loc["PoT", "read_rule"] == "program:number:plain"
    assert bool(first.loc["ST", "correct"]) and bool(first.loc["PoT", "correct"]) and not first.loc["turbo", "correct"]
    trace = json.loads(first.loc["ST", "trace"])
    assert (trace["tools"], trace["calls"], trace["stopped"], trace["protocol"]) == (["calculator"], 2, "answered",
                                                                                      protocol)  # fmt: skip
    (step,) = trace["steps"]
    assert (step["tool"], step["input"], step["output"], step["status"]) == ("calculator", "(16 - 3 - 4) * 2", "18",
                                                                             "ok")  # fmt: skip
    assert [r["text"] for r in trace["replies"]][-1] == "The answer is 18."
    # the record counts both calls' tokens (the scripted model counts words): the first reply's and the answer's
    first_turn = trace["replies"][0]["text"]
    assert first.loc["ST", "completion_tokens"] == len(first_turn.split()) + len("The answer is 18.".split())
    program = json.loads(first.loc["PoT", "trace"])
    assert program["program"].startswith("from fractions import Fraction") and program["ans"] == "18"
    assert not df.loc[("1", "PoT"), "correct"]  # gold 3: the same program gives 18
    assert json.loads(df.loc[("0", "turbo"), "trace"] or "{}") == {}


def test_pot_answers_a_multiple_choice_question_as_pot_did_or_by_the_closest_option_and_tools_are_retrieved(
    tmp_path, monkeypatch
):
    from olakit.llm.answerer import Counted, ScriptedModel
    from olakit.olagpt.budget import planned_calls
    from olakit.olagpt.config import OlaGPTConfig
    from olakit.olagpt.run import run
    from olakit.tools.program import closest_option, program_of

    assert closest_option("24.9", {"A": "12", "B": "$25", "C": "30 km"}) == "B"
    assert closest_option("x", {"A": "12"}) is None and closest_option("3", {"A": "none"}) is None
    assert program_of("no code here") == "" and program_of("ans = 1") == "ans = 1"
    assert program_of("a\n```python\nans = 1\n```\nthen\n```\nans = 2\n```") == "ans = 2"
    monkeypatch.setenv("OLAKIT_CACHE_DIR", str(tmp_path / "cache"))
    offered, asked, limits = [], [], set()

    def reply(prompt, request):
        if "Write a Python program" in prompt:  # AQuA test-0: no value; test-1 (gold E: 78.21): 78.21
            return "```python\nans = None\n```" if "tower" in prompt else "```python\nans = 100 * 0.78 + 0.21\n```"
        if prompt.startswith("Find the option closest to the prediction"):
            asked.append(prompt)
            limits.add(request.get("max_tokens"))
            return "E"
        if "Action:" in request["messages"][0]["content"]:
            offered.append(request["messages"][0]["content"].split("\n\n")[0])
            return "Answer: E"
        return "Answer: A"

    cfg = OlaGPTConfig(n_questions=2, templates=["ST", "PoT"], strategies=["zero-shot"], tools="retrieved",
                       tools_k=1)  # fmt: skip
    stage = {s.name: s for s in planned_calls(cfg)}["program options"]
    assert stage.calls == 2  # at most one per program
    model = Counted(ScriptedModel(reply))
    df = _frame(run(cfg, model)).set_index(["question_id", "template"])
    assert limits == {stage.max_tokens}  # priced at the limit the call carried
    # PoT's way (the default): the value mapped by a second call; no value: the first option, as PoT answered A
    assert (df.loc[("test-1", "PoT"), "extracted"], df.loc[("test-1", "PoT"), "read_rule"]) == (
        "E", "program:choice:model")  # fmt: skip
    assert (df.loc[("test-0", "PoT"), "extracted"], df.loc[("test-0", "PoT"), "read_rule"]) == (
        "A", "program:choice:no_value_first_option")  # fmt: skip
    assert len(asked) == 1 and "Prediction: 78.21" in asked[0] and "E)" in asked[0]
    assert json.loads(df.loc[("test-1", "PoT"), "trace"])["option_reply"] == "E"
    assert len(offered) == 2 and all(o.count("\n- ") == 1 for o in offered)  # one tool listed each time
    # olakit's way: the closest number, no call
    closest = _frame(run(cfg.replace(program_choice="closest"), ScriptedModel(reply))).set_index(
        ["question_id", "template"])  # fmt: skip
    assert (closest.loc[("test-1", "PoT"), "extracted"], closest.loc[("test-1", "PoT"), "read_rule"]) == (
        "E", "program:choice:closest_number")  # fmt: skip
    assert closest.loc[("test-0", "PoT"), "extracted"] is None and len(asked) == 1
    assert OlaGPTConfig(preset="olakit").program_choice == "closest"
    with pytest.raises(DataError, match=r"tool_names: unknown tools \['abacus'\]"):
        run(cfg.replace(tool_names=["abacus"], tools="all"), ScriptedModel(reply))


def test_the_controller_lists_each_templates_tools_when_it_chooses():
    from olakit.llm.answerer import ScriptedModel
    from olakit.olagpt.config import OlaGPTConfig
    from olakit.olagpt.run import run

    prompts = []

    def reply(prompt, request):
        if "Which 1 of them suit" in prompt:
            prompts.append(prompt)
            return "ST"
        return "Answer: A"

    cfg = OlaGPTConfig(n_questions=1, templates=["turbo", "ST"], strategies=["zero-shot"], choose_k=1,
                       tools="all", tool_names=["calculator"], tool_templates=["ST"])  # fmt: skip
    run(cfg, ScriptedModel(reply))
    assert "- ST: Let's think step by step. (with tools: calculator)" in prompts[0]
    assert "- turbo: (answer directly, no template)\n" in prompts[0]  # no tools: listed as without
    run(cfg.replace(tools="none"), ScriptedModel(reply))
    assert "with tools" not in prompts[1]


# -- the analysis of tool use -------------------------------------------------------------------------------------


def _records(rows):
    import pandas as pd

    base = {"notes_strategy": "zero-shot", "n_notes": 0, "sample": 0, "gold": "A"}
    return pd.DataFrame([{**base, **r} for r in rows])


def _loop(*statuses, stopped="answered", cached=()):
    steps = [{"step": i + 1, "tool": "calculator", "status": s, "cached": i in cached} for i, s in enumerate(statuses)]
    return json.dumps({"tools": ["calculator"], "protocol": "text", "calls": len(statuses) + 1, "stopped": stopped,
                       "steps": steps})  # fmt: skip


def test_tool_use_counts_calls_by_status_per_template():
    from olakit.analysis.tools import tool_use

    df = _records([
        {"question_id": "1", "template": "ST", "trace": _loop("ok", "error", cached=(0,))},
        {"question_id": "2", "template": "ST", "trace": _loop()},
        {"question_id": "3", "template": "ST", "trace": _loop("ok", "ok", "step cap", stopped="step cap")},
        {"question_id": "1", "template": "PoT", "trace": json.dumps({"program": "ans = 1", "status": "timeout"})},
        {"question_id": "2", "template": "PoT", "trace": json.dumps({"program": "ans = 1", "status": "ok"})},
        {"question_id": "1", "template": "turbo", "trace": ""},
    ])  # fmt: skip
    table = tool_use(df).set_index("template")
    assert list(table.index) == ["ST", "PoT"]  # turbo used no tool
    st = table.loc["ST"]
    # by hand: 3 answers, 2 called a tool, model calls 3 + 1 + 4, tool calls 2 + 0 + 3
    assert (st.answers, st.called_a_tool, st.model_calls, st.tool_calls) == (3, 2, 8, 5)
    assert (st.ok, st.error, st["step cap"], st.stopped_at_cap, st.cached_results) == (3, 1, 1, 1, 1)
    pot = table.loc["PoT"]
    assert (pot.answers, pot.tool_calls, pot.ok, pot.timeout) == (2, 2, 1, 1)


def test_tool_changes_and_effect_pair_the_same_cells_of_two_runs():
    from math import comb

    from olakit.analysis.tools import tool_changes, tool_effect

    golds = "AAAAAAAAAA"
    without = _records([{"question_id": str(i), "template": "ST", "extracted": "B" if i < 7 else "A",
                         "correct": i >= 7, "trace": ""} for i in range(10)]
                       + [{"question_id": "10", "template": "ST", "extracted": float("nan"), "correct": False,
                           "trace": ""}])  # fmt: skip
    with_tools = _records([{"question_id": str(i), "template": "ST", "extracted": "A" if i < 6 or i == 9 else "C",
                            "correct": i < 6 or i == 9, "trace": _loop("ok")} for i in range(10)]
                          + [{"question_id": "10", "template": "ST", "extracted": None, "correct": False,
                              "trace": _loop("error")}])  # fmt: skip
    changed = tool_changes(with_tools, without)
    # by hand: 0-5 B -> A (fixed), 6 B -> C, 7 and 8 A -> C (broken), 9 A -> A, 10 unparsed both (NaN, None)
    assert changed["question_id"].tolist() == ["0", "1", "2", "3", "4", "5", "6", "7", "8"]
    assert changed["tools_called"].unique().tolist() == ["calculator"] and set(changed["gold"]) == set(golds)
    (row,) = tool_effect(with_tools, without).to_dict("records")
    assert (row["questions"], row["accuracy_with"], row["accuracy_without"]) == (11, 7 / 11, 3 / 11)
    assert (row["right_only_with"], row["right_only_without"]) == (6, 2)
    expected = 2 * sum(comb(8, i) for i in range(3)) / 2**8  # the exact binomial of 8 discordant pairs, 2 one way
    assert row["p_mcnemar"] == pytest.approx(expected) and row["p_mcnemar_holm"] == pytest.approx(expected)


def test_tool_views_over_programs_second_samples_and_three_cells_by_hand():
    """Three cells in the records' order (ST, DT, PoT), second samples in both runs (all wrong with tools, all right
    without: paired, they would change every count), a program's answer, and traces that are no tool loop (plain
    text; steps with no tools list, as a review history has)."""
    from olakit.analysis.tools import tool_changes, tool_effect, tool_use

    program = json.dumps({"program": "ans = 3", "status": "ok"})
    ids = [str(i) for i in range(8)]
    with_tools = _records(
        [{"question_id": q, "template": "ST", "extracted": "A", "correct": True, "trace": _loop("ok")} for q in ids]
        + [{"question_id": q, "template": "DT", "extracted": "A" if q != "0" else "B", "correct": q != "0",
            "trace": _loop("ok")} for q in ids]
        + [{"question_id": "0", "template": "PoT", "extracted": "C", "correct": False, "trace": program}]
        + [{"question_id": q, "template": "ST", "sample": 1, "extracted": "C", "correct": False, "trace": ""}
           for q in ids]
        + [{"question_id": "0", "template": "turbo", "extracted": "A", "correct": True, "trace": "no tools here"},
           {"question_id": "0", "template": "review", "extracted": "A", "correct": True,
            "trace": json.dumps({"steps": ["a step"], "stages": []})}]
    )  # fmt: skip
    without = _records(
        [{"question_id": q, "template": "ST", "extracted": "B" if int(q) < 6 else "A", "correct": int(q) >= 6,
          "trace": ""} for q in ids]
        + [{"question_id": q, "template": "DT", "extracted": "A", "correct": True, "trace": ""} for q in ids]
        + [{"question_id": "0", "template": "PoT", "extracted": "A", "correct": True, "trace": ""}]
        + [{"question_id": q, "template": "ST", "sample": 1, "extracted": "A", "correct": True, "trace": ""}
           for q in ids]
    )  # fmt: skip

    use = tool_use(with_tools).set_index("template")
    assert list(use.index) == ["ST", "DT", "PoT"]  # turbo's text and review's steps are no tool loop
    assert use.loc["PoT", ["answers", "model_calls", "tool_calls", "ok"]].tolist() == [1, 1, 1, 1]  # one call each

    changed = tool_changes(with_tools, without)
    # ST: q0-q5 B -> A; DT: q0 A -> B; PoT: q0 A -> C, by its program
    assert changed[["template", "question_id", "tools_called"]].values.tolist() == [
        *[["ST", q, "calculator"] for q in ids[:6]],
        ["DT", "0", "calculator"],
        ["PoT", "0", "program"],
    ]

    effect = tool_effect(with_tools, without)
    assert effect[["template", "questions", "right_only_with", "right_only_without"]].values.tolist() == [
        ["ST", 8, 6, 0], ["DT", 8, 0, 1], ["PoT", 1, 0, 1]]  # fmt: skip
    # ST: 6 discordant, all one way: p = 2 / 2^6; DT and PoT: 1 discordant, p = 1. Holm over the three: 3 x 0.03125,
    # then max(0.09375, 2 x 1) and max(.., 1 x 1), capped at 1
    assert effect["p_mcnemar"].tolist() == [0.03125, 1.0, 1.0]
    assert effect["p_mcnemar_holm"].tolist() == [0.09375, 1.0, 1.0]
    assert effect["accuracy_with"].tolist() == [1.0, 7 / 8, 0.0]
    assert effect["accuracy_without"].tolist() == [2 / 8, 1.0, 1.0]


def test_the_facts_and_notes_libraries_as_tools_and_a_tools_settings(tmp_path):
    tools = load_tools()
    facts = tools["facts"]("population of Albany Georgia")
    assert facts.startswith("[1] Albany, Georgia:") and facts.count("\n") == 2  # its k = 3 paragraphs
    notes = tools["notes"]("A train passes a man running in the same direction")
    assert notes.startswith("[1] Question: A train") and "\nAnswer: " in notes and notes.count("[2] Question:") == 1
    (tmp_path / "echo.py").write_text("def echo(text, times=1, sep=' '):\n    return sep.join([text] * times)\n")
    spec = {"name": "echo", "description": "d", "input": "i", "function": "echo.py:echo", "settings": {"times": 3}}
    assert read_tool(_write(tmp_path / "echo.json", spec))("hi") == "hi hi hi"
    bad = read_tool(_write(tmp_path / "bad.json", {**spec, "settings": {"loud": True}}))
    with pytest.raises(DataError, match=r"tool 'echo': its settings \{'loud': True\} do not fit"):
        bad("hi")
    with pytest.raises(DataError, match="'settings' is an object of the function's keyword arguments"):
        read_tool(_write(tmp_path / "nested.json", {**spec, "settings": {"times": [1, 2]}}))
    from olakit.tools.loop import ToolCache

    base = read_tool(_write(tmp_path / "echo.json", spec))
    other = read_tool(_write(tmp_path / "echo2.json", {**spec, "settings": {"times": 2}}))
    assert ToolCache.key(base, "x") != ToolCache.key(other, "x")  # other settings: another cached result


def test_each_sample_keeps_its_own_conversation_in_the_loop():
    """SC's samples of one prompt differ only by their sample index: each turn of a loop keeps it, so each sample is
    its own call and its own cache entry (the loop once rebuilt its requests without it: one answer for all)."""
    from olakit.llm import Request
    from olakit.llm.answerer import ScriptedModel
    from olakit.tools.loop import run_loops

    model = ScriptedModel(lambda p, r: "Action: calculator[1 + 1]" if p.startswith("You can") else "Answer: 2")
    samples = [Request.make("What is 1 + 1?", sample=s, temperature=0.7) for s in range(3)]
    loops = run_loops(model, samples, [load_tools()["calculator"]], protocol="text", max_steps=1)
    assert model.calls == 6 and [lp.calls for lp in loops] == [2, 2, 2]  # 3 samples x 2 turns, none shared
