"""Program-of-thought answers: the program in a model's reply, run in the sandbox, its ``ans`` read as the answer.

    program_of("Here:\\n```python\\nans = 6 * 7\\n```")      # 'ans = 6 * 7'
    program_answer(execution, question)                      # ('42', 'program:number:plain') or (None, ...)

The program is the last fenced code block of the reply (```python or ```), else the whole reply when it parses as
Python. It runs with PoT's names at hand (math, np, statistics, sympy's Symbol, Eq, solve, simplify, and solve_it;
olakit.tools.pot.PREAMBLE), in one namespace (a module's: ``scopes="one"``, where PoT's harness split them: its
programs are replayed with its own harness in olakit.tools.pot).
Its ``ans`` is read as the question's kind reads an answer (olakit.answers.read_answer: a number, yes/no, a label
or an option's text). A multiple-choice question whose ``ans`` is a number takes the option whose own number is
closest (``choice:closest_number``, relatively; ties go to the first option): olakit's choice, where PoT asked the
model again to name the closest option (its ``prompt_for_choice``). No number in any option: no answer.
The rule of every reading is kept as ``program:<rule>``, or ``program:<status>`` when the program failed.
"""

from __future__ import annotations

import ast
import re

from olakit.answers import read_answer, read_number
from olakit.tools.pot import PREAMBLE
from olakit.tools.sandbox import Execution

FENCE = re.compile(r"```[ \t]*(?:python|py|Python)?[ \t]*\n(.*?)```", re.S)


def program_of(text: str) -> str:
    """The program in a reply: its last fenced block, else the reply itself when it is Python, else ''."""
    blocks = FENCE.findall(text or "")
    if blocks:
        return blocks[-1].strip("\n")
    try:
        ast.parse(text or "")
    except SyntaxError:
        return ""
    return (text or "").strip()


def run_program(sandbox, text: str):
    """The reply's program run in ``sandbox`` with PoT's names; an Execution (status ``error`` and a message when
    the reply holds no program)."""
    program = program_of(text)
    if not program:
        return Execution(status="error", error="no program in the reply (a ```python block, or Python alone)")
    return sandbox.run(program, preamble=PREAMBLE)


def closest_option(value: str, options: dict[str, str]) -> str | None:
    """The label whose option's number is closest to ``value`` (relative difference), or None."""
    target = read_number(value).value
    if target is None:
        return None
    x = float(target)
    best, best_gap = None, None
    for label, text in options.items():
        n = read_number(text).value
        if n is None:
            continue
        gap = abs(float(n) - x) / max(1.0, abs(x))
        if best_gap is None or gap < best_gap:
            best, best_gap = label, gap
    return best


def program_answer(execution, question) -> tuple[str | None, str]:
    """(the answer ``execution``'s ``ans`` gives ``question``, the rule that read it)."""
    if not execution.ok:
        return None, f"program:{execution.status}"
    if execution.ans is None:
        return None, "program:no_ans"
    value = str(execution.ans)
    reading = read_answer(value, question)
    if reading.value is not None:
        return reading.value, f"program:{reading.rule}"
    if question.kind == "choice":
        label = closest_option(value, dict(question.options))
        if label is not None:
            return label, "program:choice:closest_number"
    return None, "program:none"
