"""Views over the tools library's records (docs/tools.md): how each template used its tools, and what the tools
changed against a run without them. Pure pandas over the records' ``trace`` column (olakit.olagpt.tool_use writes
it: a tool loop's ``steps``, or a program's ``status``).

- ``tool_use(records)``: per template and note strategy, the answers made with tools, those that called one, the
  model calls they took, the tool calls by status (``ok``, ``error``, ``timeout``, ``memory``, ``output``,
  ``blocked``, ``unknown tool``, ``malformed``, ``step cap``), the answers stopped at the step cap, the tool results
  taken from the cache; for a program template, its programs by status.
- ``tool_changes(with_tools, without)``: the questions whose answer the tools changed (the same template, strategy
  and note count in both runs), each with both answers, the gold and the tools called.
- ``tool_effect(with_tools, without)``: per template and strategy, both accuracies on the questions both runs
  answered, the discordant counts and the exact McNemar test, Holm-adjusted over the rows.
"""

from __future__ import annotations

import json

import pandas as pd

from olakit.analysis.inference import holm, mcnemar_exact
from olakit.names import TOOL_STATUSES as STATUSES

CELL = ["template", "notes_strategy", "n_notes"]


def _trace(text) -> dict:
    return json.loads(text) if isinstance(text, str) and text.startswith("{") else {}


def tool_use(df: pd.DataFrame) -> pd.DataFrame:
    """Per template and note strategy: what its answers did with tools (module docstring); no row for a template
    that used none."""
    rows = []
    for (template, strategy), cell in df.groupby(["template", "notes_strategy"], sort=False):
        traces = [_trace(t) for t in cell["trace"]]
        loops = [t for t in traces if "steps" in t and "tools" in t]
        programs = [t for t in traces if "program" in t]
        if not loops and not programs:
            continue
        steps = [s for t in loops for s in t["steps"]]
        row = {
            "template": template,
            "strategy": strategy,
            "answers": len(loops) + len(programs),
            "called_a_tool": sum(bool(t["steps"]) for t in loops),
            "model_calls": sum(t["calls"] for t in loops) + len(programs),
            "tool_calls": len(steps) + len(programs),
            **{s: sum(x["status"] == s for x in steps) + sum(p["status"] == s for p in programs) for s in STATUSES},
            "stopped_at_cap": sum(t["stopped"] == "step cap" for t in loops),
            "cached_results": sum(bool(x.get("cached")) for x in steps),
        }
        rows.append(row)
    return pd.DataFrame(rows, columns=["template", "strategy", "answers", "called_a_tool", "model_calls",
                                       "tool_calls", *STATUSES, "stopped_at_cap", "cached_results"])  # fmt: skip


def _paired(with_tools: pd.DataFrame, without: pd.DataFrame) -> pd.DataFrame:
    keep = ["question_id", *CELL, "sample", "extracted", "correct", "gold", "trace"]
    a = with_tools[with_tools["sample"] == 0][keep]
    b = without[without["sample"] == 0][keep[:-1]]
    return a.merge(b, on=["question_id", *CELL, "sample"], suffixes=("_with", "_without"))


def tool_changes(with_tools: pd.DataFrame, without: pd.DataFrame) -> pd.DataFrame:
    """The questions whose answer differs with tools (module docstring), with the tools each answer called."""
    both = _paired(with_tools, without)
    unparsed = "\x00"  # None and NaN alike: no answer
    with_, without_ = both["extracted_with"].fillna(unparsed), both["extracted_without"].fillna(unparsed)
    changed = both[with_.astype(str) != without_.astype(str)].copy()
    changed["tools_called"] = [
        ", ".join(s["tool"] for s in _trace(t).get("steps", [])) or ("program" if "program" in _trace(t) else "")
        for t in changed["trace"]
    ]
    cols = ["question_id", *CELL, "gold_with", "extracted_without", "extracted_with", "correct_without",
            "correct_with", "tools_called"]  # fmt: skip
    return changed[cols].rename(columns={"gold_with": "gold"}).reset_index(drop=True)


def tool_effect(with_tools: pd.DataFrame, without: pd.DataFrame) -> pd.DataFrame:
    """Accuracy with and without tools per template and strategy, McNemar and Holm (module docstring)."""
    both = _paired(with_tools, without)
    rows = []
    for (template, strategy, n), cell in both.groupby(CELL, sort=False):
        x, y = cell["correct_with"].astype(bool).to_numpy(), cell["correct_without"].astype(bool).to_numpy()
        better, worse, p = mcnemar_exact(x, y)
        rows.append({"template": template, "strategy": strategy, "n_notes": n, "questions": len(cell),
                     "accuracy_with": x.mean(), "accuracy_without": y.mean(), "right_only_with": better,
                     "right_only_without": worse, "p_mcnemar": p})  # fmt: skip
    out = pd.DataFrame(
        rows,
        columns=[
            "template",
            "strategy",
            "n_notes",
            "questions",
            "accuracy_with",
            "accuracy_without",
            "right_only_with",
            "right_only_without",
            "p_mcnemar",
        ],
    )
    out["p_mcnemar_holm"] = holm(out["p_mcnemar"].tolist()) if len(out) else []
    return out
