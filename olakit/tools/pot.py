"""Program of Thoughts' harness (Chen et al., TMLR 2023; wenhuchen/Program-of-Thoughts @850399c, tool.py and the
run_*.py scripts), as olakit's executor runs it: the names a program finds, how ``ans`` becomes a prediction, and a
replay of PoT's recorded programs (../shared/data/external/pot) to check the executor against what PoT recorded.

PoT runs each program with ``exec`` inside a function of its tool.py: the program's top-level names go in a dict
of their own (``scopes="split"``: a function the program defines sees tool.py's names, not the program's), it finds
tool.py's imports (``math``, ``np``, ``statistics``, sympy's ``Symbol``, ``Eq``, ``solve``, ``simplify``) and its
``solve_it``, and a 5 s ``func_timeout`` stops it. ``cvxpy`` (``cp``) is left out: no recorded program uses it.

How ``ans`` becomes the prediction (each a presenter, run in the worker on the real object):
- ``text``: PoT's AQuA few-shot form (tool.simplify_ans with a string result): a sympy relation as its text; a numpy
  value (or an array's first) as a float rounded to 2 places; an empty or false value as no answer; a list or tuple
  of sympy numbers rounded to 2 places (its one element when it has one); a sympy number rounded to 2 places; then
  ``str``;
- ``number``: PoT's GSM8K few-shot form (tool.floatify_ans): a dict's first value, a list's first element, then
  ``float`` where it converts, else the text; a boolean stays one;
- ``text_number``: its AQuA zero-shot form, ``number`` of ``text``, as a string;
- ``text_number_value``: its GSM8K zero-shot form as recorded, ``number`` of ``text`` (run_gsm8k_zs.py as published
  passes ``text`` its non-string form, which gives a tuple's first element where the records hold the tuple's text).
The AQuA runs then map the value to a letter with a second model call (``prompt_for_choice``), which cannot be
replayed: ``replay`` compares the executed value with the recorded one.
"""

from __future__ import annotations

import json
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from olakit.tools.sandbox import Limits

PREAMBLE = """
import math
import statistics
import numpy as np
from math import isclose
from sympy import Eq, Symbol, simplify
from sympy.solvers import solve


def solve_it(equation, variable):
    found = solve(equation, variable, dict=True)
    if not found:
        return {v: None for v in variable} if isinstance(variable, list) else {variable: None}
    return found[0]
"""
"""The names PoT's tool.py gives a program (its own ``solve_it``: sympy's first solution as a dict, or None for each
variable when there is none)."""

LIMITS = {"cpu_s": 5.0, "wall_s": 10.0, "output_chars": 1_000_000}
"""PoT's 5 s per program, as CPU time (its func_timeout counted wall time in a thread: a busy machine stops fewer
programs here), and room for what a program prints (PoT printed it to its terminal, with no limit)."""


def _rounded(x) -> float:
    return round(float(x), 2)


def _text_value(ans, as_text: bool = True):
    kind = str(type(ans))
    if "relational" in kind:
        return str(ans)
    if "numpy" in kind:
        value = _rounded(ans) if getattr(ans, "shape", ()) == () else _rounded(ans[0])
        return str(value) if as_text else value
    try:
        empty = not ans
    except Exception:  # noqa: BLE001  (a value with no truth, as PoT's own check would raise: no answer)
        return None
    if empty:
        return None
    if isinstance(ans, (list, tuple)):
        if "sympy" in str(type(ans[0])):
            try:
                ans = [_rounded(x) for x in ans]
            except Exception:  # noqa: BLE001
                ans = [str(x) for x in ans]
        if len(ans) == 1:
            ans = ans[0]
    elif "sympy" in kind:
        try:
            ans = _rounded(ans)
        except Exception:  # noqa: BLE001
            ans = str(ans)
    return str(ans) if as_text else ans


def _number_value(ans):
    if ans is None:
        return None
    if isinstance(ans, dict):
        ans = list(ans.values())[0]
    elif isinstance(ans, bool):
        return ans
    elif isinstance(ans, (list, tuple)):
        if not ans:
            return None
        ans = ans[0]
    try:
        return float(ans)
    except Exception:  # noqa: BLE001
        return str(ans)


def text(ans):
    return _text_value(ans)


def number(ans):
    return _number_value(ans)


def text_number(ans):
    return str(_number_value(_text_value(ans)))


def text_number_value(ans):
    return _number_value(_text_value(ans))


RUNS = {
    # file name prefix -> (the presenter its script made predictions with, the field it recorded them in)
    "aqua_s0": ("text", "generated_prediction"),
    "aqua_sc": ("text", "generated_prediction"),
    "aqua_zs": ("text_number", "generated_prediction"),
    "gsm8K_s0": ("number", "executed"),
    "gsm8K_zs": ("text_number_value", "executed"),
}


def _kind(path: Path) -> tuple[str, str]:
    for prefix, kind in RUNS.items():
        if path.name.startswith(prefix):
            return kind
    raise ValueError(f"{path}: not one of PoT's program runs ({', '.join(RUNS)})")


def same(a, b) -> bool:
    """Two predictions alike as PoT wrote them: equal, or both numbers within 1e-9 relatively."""
    if a == b:
        return True
    try:
        fa, fb = float(a), float(b)
    except (TypeError, ValueError):
        return False
    return abs(fa - fb) <= 1e-9 * max(1.0, abs(fa), abs(fb))


def replay(path: str | Path, sandbox, limit: int | None = None):
    """Each recorded question of a PoT output file run again: its program(s) executed by ``sandbox`` under PoT's
    harness, the prediction made as PoT made it (several programs: the commonest value that is an answer), beside
    the recorded one. Columns: ``i``, ``recorded``, ``executed``, ``same``, ``statuses`` (of its programs), ``error``
    (the first failing program's), ``gold``, ``wall_s``; the sandbox's workers take a question each at once."""
    import pandas as pd

    path = Path(path)
    presenter, field = _kind(path)
    limits = Limits(**LIMITS)
    records = [r for r in map(json.loads, path.read_text(encoding="utf-8").splitlines()) if "question" in r]

    def one(i: int) -> dict:
        rec = records[i]
        programs = rec["generated"] if isinstance(rec["generated"], list) else [rec["generated"]]
        values, statuses, error, wall = Counter(), Counter(), "", 0.0
        for program in programs:
            run = sandbox.run(
                program, preamble=PREAMBLE, scopes="split", presenter=f"olakit.tools.pot:{presenter}", limits=limits
            )
            statuses[run.status] += 1
            wall += run.wall_s
            error = error or run.error
            if run.ok and run.ans is not None:
                values[json.dumps(run.ans)] += 1
        executed = json.loads(values.most_common(1)[0][0]) if values else None
        recorded = rec.get(field)
        if field == "generated_prediction":
            executed = str(executed)  # PoT wrote str(prediction): 'None' when no program gave one
        return {
            "i": i, "recorded": recorded, "executed": executed, "same": same(recorded, executed),
            "statuses": dict(statuses), "error": error, "gold": rec.get("answer"), "wall_s": round(wall, 4),
        }  # fmt: skip

    with ThreadPoolExecutor(getattr(sandbox, "workers", 1)) as pool:  # one question per worker at a time
        rows = list(pool.map(one, range(len(records[:limit]))))
    return pd.DataFrame(rows)
