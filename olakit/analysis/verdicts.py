"""The verdicts of a registered family (olakit.registration) over any run's paired tests (OlaGPT cells, GEEK rows,
compared conditions): each pair's role (confirmatory: Holm over the family alone; exploratory: every other pair),
each registered comparison decided or not at the family's level, and after the run, the comparisons examined later.
Pure pandas over records and tests; reading and writing a run's folder is olakit.plan's.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from olakit.analysis.exact import BEYOND, n_needed
from olakit.analysis.inference import cell_outcomes, holm, paired_tests
from olakit.names import COMPARED, IMPORTED, NON_TEMPLATES, REGEX_VOTE, VERIFIED_SUFFIX, voting_templates
from olakit.registration import BEST, Registered, halves, parse_comparison
from olakit.settings import ANALYSIS, Analysis


def outcomes_of(records: pd.DataFrame, analysis: Analysis = ANALYSIS) -> pd.DataFrame:
    """Correctness per question (rows) and cell (columns) of any run's records, as its paired tests name the cells:
    an OlaGPT run's ``METHOD | STRATEGY`` cells with its votes (inference.cell_outcomes), a GEEK run's rows."""
    if "row" in records.columns:
        return records.pivot_table(index="question_id", columns="row", values="correct", aggfunc="first", sort=False)
    if len(records) and records["notes_strategy"].isin([COMPARED, IMPORTED]).all():  # conditions by name
        first = records[records["sample"] == 0]
        return first.pivot_table(index="question_id", columns="template", values="correct", aggfunc="first",
                                 sort=False)  # fmt: skip
    return cell_outcomes(records, voting_templates(records["template"]), analysis)


def registered_tables(
    records: pd.DataFrame, templates: Sequence[str], registration: Registered, analysis: Analysis = ANALYSIS
) -> dict[str, pd.DataFrame]:
    """After a registered OlaGPT run: its ``paired_tests`` (inference.paired_tests over its cells) with roles, and
    the ``registered`` table (mark_roles)."""
    tests = paired_tests(cell_outcomes(records, templates, analysis), analysis=analysis)
    return mark_roles(tests, registration, analysis)


def mark_roles(tests: pd.DataFrame, registration: Registered, analysis: Analysis = ANALYSIS) -> dict[str, pd.DataFrame]:
    """Any run's paired tests (OlaGPT cells, GEEK rows, compared conditions: columns a, b, n, a_only, b_only, diff
    with its CI, p_mcnemar) marked by the registration: ``paired_tests`` with its ``role`` (confirmatory for the
    registered comparisons, exploratory for the rest) and ``p_holm_family`` (Holm over the registered family alone),
    and ``registered``: one row per registered comparison, decided or not at the family's level (its own alpha, else
    the analysis settings'), the
    difference with its CI, the corrected p, and for an undecided one the questions the observed rates would need at
    the registered power; a comparison whose cells the run lacks is "not run", its p taken as 1 in the
    correction."""
    tests = tests.copy()
    family = [(text, *_sides(text, tests)) for text in registration.comparisons]
    found = [_pair(tests, a, b) for _, a, b in family]
    corrected = holm([f["p_mcnemar"] if f else 1.0 for f in found])
    tests["role"] = "exploratory"
    tests["p_holm_family"] = np.nan
    rows, m, alpha = [], len(family), registration.level(analysis)
    for (text, a, b), f, p_holm in zip(family, found, corrected):
        row = {"comparison": text, "a": a, "b": b, "role": "confirmatory"}
        if f is None:
            rows.append(row | {"decided": False, "verdict": "not run: the run lacks a cell of it"})
            continue
        i = f.pop("index")
        tests.loc[i, ["role", "p_holm_family"]] = ["confirmatory", p_holm]
        decided = bool(p_holm < alpha)
        row |= f | {"p_holm_family": p_holm, "decided": decided}
        if decided:
            row["verdict"] = f"decided: {'a' if f['a_only'] > f['b_only'] else 'b'} is better (Holm p = {p_holm:.3g})"
        else:
            p10, p01 = f["a_only"] / f["n"], f["b_only"] / f["n"]
            level = alpha / m
            need = n_needed(p10, p01, level, registration.settings.power, BEYOND, settle=False) if p10 != p01 else None
            row["n_needed"] = need
            row["verdict"] = f"undecided (Holm p = {p_holm:.3g}); the observed rates would need " + (
                f"about {need:,} questions" if need else f"more than {BEYOND:,} questions"
            )
        row["verdict"] += _took(text, a, b)
        rows.append(row)
    return {"paired_tests": tests, "registered": pd.DataFrame(rows)}


def _sides(text: str, tests: pd.DataFrame) -> tuple[str, str]:
    """A registered comparison's two cells as ``tests`` names them (comparison_cells, ``best`` by the accuracies
    the tests report)."""
    if tests.empty:
        return parse_comparison(text)
    accuracy = dict(zip(tests["b"], tests["acc_b"])) | dict(zip(tests["a"], tests["acc_a"]))
    return comparison_cells(text, accuracy.keys(), accuracy)


def _took(text: str, a: str, b: str) -> str:
    """What a comparison naming ``best`` took, for its verdict ("" otherwise)."""
    took = [
        c
        for side, c in zip(halves(text), (a, b))
        if side.partition(":")[0].strip() == BEST and c.split(" | ")[0] != BEST
    ]
    return f" (best: {', '.join(took)}, chosen on these data: its p is optimistic)" if took else ""


def comparison_cells(text: str, cells, accuracy: dict | None = None) -> tuple[str, str]:
    """A comparison's two cells as a run names them, each side: as written when a cell has that name (a compared
    condition may hold a colon), else as parse_comparison reads it, else the one cell whose method it names (a
    compared condition, whose strategy is ``compared``, in an OlaGPT-shaped table); ``best`` (BEST) is resolved
    with ``accuracy`` (cell -> accuracy)."""
    cells = list(dict.fromkeys(cells))
    raw = halves(text)
    out = []
    for side, parsed in zip(raw, parse_comparison(text)):
        method, _, strategy = parsed.partition(" | ")
        if method == BEST and accuracy is not None and side not in cells:
            pool = [c for c in cells if str(c).partition(" | ")[2] == strategy and _is_template(str(c))]
            out.append(max(pool, key=lambda c: accuracy.get(c, -1.0)) if pool else parsed)
            continue
        named = [c for c in cells if str(c).split(" | ")[0] == side]
        out.append(side if side in cells else parsed if parsed in cells or len(named) != 1 else named[0])
    return tuple(out)  # type: ignore[return-value]


def _is_template(cell: str) -> bool:
    """Whether a cell is one template (GEEK row, compared condition) rather than a vote or a baseline."""
    method = cell.partition(" | ")[0]
    return method != REGEX_VOTE and method not in NON_TEMPLATES and not method.endswith(VERIFIED_SUFFIX)


def _pair(tests: pd.DataFrame, a: str, b: str) -> dict | None:
    """The paired test of cells a and b (either way round in ``tests``) as a against b: its row index, n, a-only and
    b-only counts, difference a - b with its CI, exact p; None when the run lacks the pair."""
    if tests.empty:
        return None
    hit = tests.index[((tests["a"] == a) & (tests["b"] == b)) | ((tests["a"] == b) & (tests["b"] == a))]
    if not len(hit):
        return None
    t = tests.loc[hit[0]]
    flip, sign = t["a"] != a, (-1 if t["a"] != a else 1)
    lo, hi = sorted((sign * t["diff_ci_low"], sign * t["diff_ci_high"]))
    return {"index": hit[0], "n": int(t["n"]), "a_only": int(t["b_only" if flip else "a_only"]),
            "b_only": int(t["a_only" if flip else "b_only"]), "diff": sign * t["diff"], "diff_ci_low": lo,
            "diff_ci_high": hi, "p_mcnemar": t["p_mcnemar"]}  # fmt: skip


def examined(
    records: pd.DataFrame, registration: Registered, comparisons: Sequence[str], analysis: Analysis = ANALYSIS
) -> pd.DataFrame:
    """A registered run's comparisons after it: the registered ones (mark_roles' ``registered``), then each of
    ``comparisons`` it did not register, exploratory, judged by Holm over every pair."""
    analysis = registration.analysis_for(analysis)
    tests = paired_tests(outcomes_of(records, analysis), analysis=analysis)
    tables = mark_roles(tests, registration, analysis)
    tests, rows = tables["paired_tests"], []
    for text in [c for c in dict.fromkeys(comparisons) if c not in registration.comparisons]:
        row, f = _exploratory_row(text, tests)
        if f is None:
            rows.append(row)
            continue
        i = f.pop("index")
        p_all = tests.loc[i, "p_mcnemar_holm"]
        verdict = f"exploratory (not registered): Holm p over every pair = {p_all:.3g}"
        rows.append(row | f | {"p_mcnemar_holm": p_all, "verdict": verdict})
    return pd.concat([tables["registered"], pd.DataFrame(rows)], ignore_index=True)


def _exploratory_row(text: str, tests: pd.DataFrame) -> tuple[dict, dict | None]:
    """(the row of an exploratory comparison ``text``, its pair's figures from ``tests``); where the run lacks a cell
    of it, the row says so and the figures are None."""
    a, b = _sides(text, tests)
    row = {"comparison": text, "a": a, "b": b, "role": "exploratory", "decided": False}
    f = _pair(tests, a, b)
    return (row | {"verdict": "not run: the run lacks a cell of it"}, None) if f is None else (row, f)


def exploratory(records: pd.DataFrame, comparisons: Sequence[str], analysis: Analysis = ANALYSIS) -> pd.DataFrame:
    """What a run made without a registration can say after it: each of ``comparisons`` (none: every pair of its
    cells), exploratory, judged by Holm over every pair of the run, and for one not decided, about how many questions
    the observed rates would need at 80% power (each pair planned at alpha / pairs): a plan for a registered run, not
    a confirmation. Columns as examined's, ``role`` "exploratory"."""
    tests = paired_tests(outcomes_of(records, analysis), analysis=analysis)
    texts = list(dict.fromkeys(comparisons)) or [f"{a} vs {b}" for a, b in zip(tests["a"], tests["b"])]
    rows, m = [], max(1, len(tests))
    for text in texts:
        row, f = _exploratory_row(text, tests)
        if f is None:
            rows.append(row)
            continue
        p_all = float(tests.loc[f.pop("index"), "p_mcnemar_holm"])
        decided = bool(p_all < analysis.alpha)
        row |= f | {"p_mcnemar_holm": p_all, "decided": decided}
        if decided:
            row["verdict"] = (
                f"exploratory (no registration): Holm p over every pair = {p_all:.3g}, below {analysis.alpha:g}"
            )
        else:
            p10, p01 = f["a_only"] / f["n"], f["b_only"] / f["n"]
            need = n_needed(p10, p01, analysis.alpha / m, 0.8, BEYOND, settle=False) if p10 != p01 else None
            row["n_needed"] = need
            row["verdict"] = (f"exploratory (no registration): Holm p over every pair = {p_all:.3g}; the observed "
                              "rates would need " + (f"about {need:,} questions" if need else
                                                     f"more than {BEYOND:,} questions") + " (register the comparison "
                              "and run that many)")  # fmt: skip
        rows.append(row)
    return pd.DataFrame(rows)
