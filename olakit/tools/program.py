"""Program-of-thought answers: the program in a model's reply, run in the sandbox, its ``ans`` read as the answer.

    program_of("Here:\\n```python\\nans = 6 * 7\\n```")      # 'ans = 6 * 7'
    program_answer(execution, question)                      # ('42', 'program:number:plain') or (None, ...)

The program is the last fenced code block of the reply (```python or ```), else the whole reply when it parses as
Python. It runs with PoT's names at hand (math, np, statistics, sympy's Symbol, Eq, solve, simplify, and solve_it;
olakit.tools.pot.PREAMBLE), in one namespace (a module's: ``scopes="one"``, where PoT's harness split them: its
programs are replayed with its own harness in olakit.tools.pot).
Its ``ans`` is read as the question's kind reads an answer (olakit.answering.read.read_answer: a number, yes/no, a label
or an option's text). On a multiple-choice question, ``program_choice`` says how a value becomes an option:
``model`` (PoT's way: a second call names the closest option, ``choice_request``; a program with no value answers
the first option, as PoT's harness answered ``A``) or ``closest`` (olakit's: the option whose own number is closest,
``choice:closest_number``, relatively, ties to the first option; no number in any option: no answer).
The rule of every reading is kept as ``program:<rule>``, or ``program:<status>`` when the program failed.
"""

from __future__ import annotations

import ast
import re

from olakit.answering.read import read_answer, read_choice, read_number
from olakit.llm import Request
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


PROGRAM_CHOICE = """Find the option closest to the prediction, and reply with its letter only.

Question: {question}
Options: {options}
Prediction: {prediction}
Closest option:"""
"""The second call of ``program_choice="model"``: PoT's way of mapping a program's value to an option (its
prompt_for_choice, in olakit's words and without its worked examples)."""


CHOICE_TOKENS = 8
"""Token limit of that call (an option's label), as the run sends it and the plan prices it."""


def choice_request(question, value) -> Request:
    """The call that maps ``value`` to one of ``question``'s options (program_choice="model")."""
    options = " ".join(f"{label}){text}" for label, text in question.options.items())
    text = PROGRAM_CHOICE.format(question=question.text, options=options, prediction=value)
    return Request.make(text, temperature=0, max_tokens=CHOICE_TOKENS, stop=["\n"])


def chosen_option(reply_text: str | None, question) -> str | None:
    """The option a choice call's reply names (a label, ``(C)``, ``C)``, or an option's text)."""
    return read_choice((reply_text or "").strip(), list(question.options), list(question.options.values())).value


def program_answer(execution, question) -> tuple[str | None, str]:
    """(the answer ``execution``'s ``ans`` gives ``question``, the rule that read it), by the closest option for a
    number on a multiple-choice question (program_choice="closest")."""
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
