"""An effort grid's own tables: a method run once per reasoning effort and compared as one result
(olakit.door.effort_grid), its conditions each an effort's cell (``low/ST``).

- ``effort_cells``: per effort and cell, accuracy with its interval, reasoning and answer tokens, completion tokens
  per correct answer, cost per correct answer and the unfinished rate (the comparison's ``usage`` table, split);
- ``effort_tests``: the paired tests of the grid's own family, the pairs that differ in one facet alone (templates
  within an effort, efforts within a template), Holm over that family (``p_family_holm``) beside the comparison's
  Holm over every pair;
- ``template_gain``: does a template still help at this effort: each cell against the baseline cell (the plain
  prompt, ``turbo``) within each effort, the paired difference (cell minus baseline) with its bootstrap interval and
  the family's Holm p.

``effort_tables(tables, conditions, efforts)`` -> those three tables, from a comparison's tables and conditions.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from olakit.analysis.inference import holm
from olakit.config import STATS, Stats
from olakit.generation import EFFORTS
from olakit.names import TURBO

__all__ = ["effort_tables"]

GAIN_COLUMNS = ["effort", "cell", "baseline", "n", "acc_cell", "acc_baseline", "diff", "diff_ci_low", "diff_ci_high",
                "p_family_holm", "significant"]  # fmt: skip


def _cells(conditions: pd.DataFrame) -> dict[str, tuple[str, str]]:
    """Each condition's (effort, cell): its source is its effort; its cell the rest of its name (or its method)."""
    out = {}
    for _, c in conditions.iterrows():
        rest = [p for p in str(c["condition"]).split("/") if p != c["source"]]
        out[c["condition"]] = (str(c["source"]), "/".join(rest) or str(c["method"]))
    return out


def effort_tables(
    tables: dict[str, pd.DataFrame],
    conditions: pd.DataFrame,
    efforts: Sequence[str] | None = None,
    baseline: str = TURBO,
    analysis: Stats = STATS,
) -> dict[str, pd.DataFrame]:
    """The grid's tables (module docstring) from a comparison's ``usage`` and ``paired_tests`` tables and its
    ``conditions``; ``efforts`` in their order (default: EFFORTS' order), ``baseline`` the cell every other is set
    against within an effort (no ``template_gain`` rows when the grid has no such cell)."""
    where = _cells(conditions)
    given = list(dict.fromkeys(e for e, _ in where.values()))
    order = [e for e in (efforts or EFFORTS) if e in given] + [e for e in given if e not in (efforts or EFFORTS)]
    rank = {e: i for i, e in enumerate(order)}
    usage = tables["usage"]
    cells = usage[usage["method"].isin(where)].copy()
    cells.insert(0, "effort", [where[m][0] for m in cells["method"]])
    cells.insert(1, "cell", [where[m][1] for m in cells["method"]])
    correct = cells["correct"].astype("Float64")
    cells["tokens_per_correct"] = (cells["completion_tokens"].astype("Float64") / correct).where(correct > 0)
    cells = cells.rename(columns={"method": "condition"})
    cells = cells.iloc[np.argsort([rank[e] for e in cells["effort"]], kind="stable")].reset_index(drop=True)

    tests = tables["paired_tests"]
    rows = []
    for _, t in tests.iterrows():
        if t["a"] not in where or t["b"] not in where:
            continue  # a vote across conditions: not a cell of the grid
        (ea, ca), (eb, cb) = where[t["a"]], where[t["b"]]
        if ea == eb:
            family = "templates within an effort"
        elif ca == cb:
            family = "efforts within a template"
        else:
            continue  # differs in both: outside the grid's family
        rows.append({**t.to_dict(), "family": family, "effort_a": ea, "cell_a": ca, "effort_b": eb, "cell_b": cb})
    grid = pd.DataFrame(rows, columns=[*tests.columns, "family", "effort_a", "cell_a", "effort_b", "cell_b"])
    grid["p_family_holm"] = holm(grid["p_mcnemar"]) if len(grid) else []
    grid["significant_family"] = (grid["p_family_holm"] < analysis.alpha).astype(bool)

    gains = []
    for _, t in grid[grid["family"] == "templates within an effort"].iterrows():
        if baseline not in (t["cell_a"], t["cell_b"]):  # within an effort, two cells differ
            continue
        flip = t["cell_a"] == baseline  # the difference as cell minus baseline
        sign = -1.0 if flip else 1.0
        low, high = sorted((sign * t["diff_ci_low"], sign * t["diff_ci_high"]))
        gains.append({
            "effort": t["effort_a"], "cell": t["cell_b"] if flip else t["cell_a"], "baseline": baseline, "n": t["n"],
            "acc_cell": t["acc_b"] if flip else t["acc_a"], "acc_baseline": t["acc_a"] if flip else t["acc_b"],
            "diff": sign * t["diff"], "diff_ci_low": low, "diff_ci_high": high,
            "p_family_holm": t["p_family_holm"], "significant": bool(t["significant_family"]),
        })  # fmt: skip
    gain = pd.DataFrame(gains, columns=GAIN_COLUMNS)
    if len(gain):
        gain = gain.iloc[np.argsort([rank[e] for e in gain["effort"]], kind="stable")].reset_index(drop=True)
    return {"effort_cells": cells, "effort_tests": grid.reset_index(drop=True), "template_gain": gain}
