"""Tables over records: pure pandas/numpy, no LLM calls.

Paper tables (OlaGPT, seeds/000): Table 3 accuracy, Table 4 consistency, Table 7 range/mean of template
accuracies, Table 8 regex bounds, the template-count ablation of Fig 6 and Fig 9's notes count; method tables of
live runs (every method with CIs, usage, the LLM-vote audit); ``compute_tables`` and ``run_tables`` bundle them.
Every accuracy comes with a seeded bootstrap 95% confidence interval over questions (olakit.analysis.intervals).
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import combinations

import numpy as np
import pandas as pd

from olakit.analysis.intervals import accuracy_row
from olakit.data.overrides import without_overrides
from olakit.errors import DataError
from olakit.names import (
    AUTO_COT,
    BASELINES,
    LLM_VOTE,
    LLM_VOTE_SHUFFLED,
    REGEX_LOWER,
    REGEX_UPPER,
    REGEX_VOTE,
    SC,
    STRATEGIES,
    ZERO_SHOT,
)
from olakit.olagpt.llm_vote import llm_vote_audit
from olakit.olagpt.vote import answer_matrix, check_tie_rule, majority, regex_vote


def _ordered(values, order: Sequence[str]) -> list[str]:
    present = list(dict.fromkeys(values))
    return [v for v in order if v in present] + [v for v in present if v not in order]


def ordered_strategies(values) -> list[str]:
    """Strategies present in ``values``, in the paper's order (zero-shot, random, retrieval, combine)."""
    return _ordered(values, STRATEGIES)


def sort_rows(df: pd.DataFrame, by: Sequence[str]) -> pd.DataFrame:
    """Sort by ``by`` columns, each in order of first appearance except notes_strategy (paper order)."""
    keys = []
    for col in by:
        order = ordered_strategies(df[col]) if col == "notes_strategy" else list(dict.fromkeys(df[col]))
        keys.append(df[col].map({v: i for i, v in enumerate(order)}))
    rank = pd.DataFrame(dict(zip(by, keys)))
    return df.loc[rank.sort_values(list(by), kind="stable").index].reset_index(drop=True)


def accuracy_long(
    df: pd.DataFrame, templates: Sequence[str] | None = None, tie: str = "first", seed: int = 0, n_boot: int = 2000
) -> pd.DataFrame:
    """Accuracy of each template and of the regex vote, per note strategy, with 95% CIs.

    Columns: method, notes_strategy, n, correct, accuracy, ci_low, ci_high. Method REGEX_VOTE is the
    majority of ``templates`` (default: every template present).
    """
    templates = list(templates) if templates is not None else list(dict.fromkeys(df["template"]))
    parts = [df[df["template"].isin(templates)].rename(columns={"template": "method"})]
    vote = regex_vote(df, templates, tie=tie, seed=seed).assign(method=REGEX_VOTE)
    parts.append(vote)
    rows = [
        accuracy_row(method, strategy, g["correct"], seed, n_boot)
        for (method, strategy), g in pd.concat(parts)[["method", "notes_strategy", "correct"]].groupby(
            ["method", "notes_strategy"], sort=False
        )
    ]
    out = sort_rows(pd.DataFrame(rows), ["method", "notes_strategy"])
    if "overridden" in df and df["overridden"].any():  # how many answers in each cell were corrected by hand
        n = df[df["overridden"]].groupby(["template", "notes_strategy"]).size()
        out["overrides"] = [int(n.get((m, s), 0)) for m, s in zip(out["method"], out["notes_strategy"])]
    return out


def accuracy_wide(long: pd.DataFrame) -> pd.DataFrame:
    """Table 3 layout: one row per method, one column per note strategy (accuracy)."""
    wide = long.pivot(index="method", columns="notes_strategy", values="accuracy")
    wide = wide[_ordered(long["notes_strategy"], STRATEGIES)]
    return wide.loc[list(dict.fromkeys(long["method"]))]


def answer_counts(df: pd.DataFrame, templates: Sequence[str] | None = None) -> pd.DataFrame:
    """Per question and condition: how the templates' answers split (one row per question and condition).

    Columns: n_templates, n_correct (templates answering correctly), n_wrong_top (size of the largest group
    agreeing on one wrong label: the paper's "incorrect consistency" count), n_plurality (size of the
    largest group agreeing on any label), n_unparsed.
    """
    wide, gold = answer_matrix(df, templates)
    values = wide.to_numpy(dtype=object)
    g = gold.to_numpy(dtype=object)
    n_correct, wrong_top, plurality, unparsed = [], [], [], []
    for row, gl in zip(values, g):
        labels = [a for a in row if a is not None]
        counts: dict = {}
        for a in labels:
            counts[a] = counts.get(a, 0) + 1
        n_correct.append(counts.get(gl, 0))
        wrong_top.append(max((c for a, c in counts.items() if a != gl), default=0))
        plurality.append(max(counts.values(), default=0))
        unparsed.append(len(row) - len(labels))
    return pd.DataFrame(
        {
            "n_templates": values.shape[1],
            "n_correct": n_correct,
            "n_wrong_top": wrong_top,
            "n_plurality": plurality,
            "n_unparsed": unparsed,
        },
        index=wide.index,
    ).reset_index()


def consistency_table(counts: pd.DataFrame) -> pd.DataFrame:
    """Table 4: number of questions whose plurality answer is shared by c templates, per strategy.

    c = 0 means no template gave a parseable answer.
    """
    t = counts.groupby(["n_plurality", "notes_strategy"]).size().unstack(fill_value=0)
    t = t.reindex(range(0, int(counts["n_templates"].max()) + 1), fill_value=0)
    t.index.name = "c"
    return t[ordered_strategies(counts["notes_strategy"])]


def bounds_long(counts: pd.DataFrame, vote: pd.DataFrame, seed: int = 0, n_boot: int = 2000) -> pd.DataFrame:
    """Table 8: regex-upper, regex-lower and the regex vote per strategy, with 95% CIs.

    Appendix A.5 of the paper, per question with a = templates correct and w = largest wrong group:
    upper counts a >= w (a tie the vote could break either way), lower counts a > w (the vote must be right).
    Upper also needs a > 0: with no template correct no vote can be right (only all-unparsed questions
    have a = w = 0).
    """
    a, w = counts["n_correct"], counts["n_wrong_top"]
    parts = {REGEX_UPPER: (a >= w) & (a > 0), REGEX_LOWER: a > w}
    rows = []
    for method, hit in parts.items():
        for strategy, g in hit.groupby(counts["notes_strategy"], sort=False):
            rows.append(accuracy_row(method, strategy, g.to_numpy(), seed, n_boot))
    for strategy, g in vote.groupby("notes_strategy", sort=False):
        rows.append(accuracy_row(REGEX_VOTE, strategy, g["correct"].to_numpy(), seed, n_boot))
    return sort_rows(pd.DataFrame(rows), ["method", "notes_strategy"])


def precision_table(long: pd.DataFrame, exclude: Sequence[str] = BASELINES) -> pd.DataFrame:
    """Table 7: range (max - min) and mean of the single-template accuracies per strategy.

    Baselines (``turbo``) and the vote are left out, as in the paper.
    """
    single = long[~long["method"].isin([*exclude, REGEX_VOTE])]
    g = single.groupby("notes_strategy")["accuracy"]
    t = pd.DataFrame({"Range": g.max() - g.min(), "Mean": g.mean()}).T
    return t[_ordered(long["notes_strategy"], STRATEGIES)]


def template_count_ablation(
    df: pd.DataFrame, templates: Sequence[str] | None = None, tie: str = "first", seed: int = 0
) -> pd.DataFrame:
    """Fig 6's shape: vote accuracy over every subset of k templates, k = 1..len(templates).

    One row per (strategy, k): n_subsets, mean, std, min, max of the subsets' vote accuracies, and the
    best subset. With k = 1 the "vote" is the template itself.
    """
    templates = list(templates) if templates is not None else list(dict.fromkeys(df["template"]))
    rows = []
    for k in range(1, len(templates) + 1):
        accs: dict[str, list[tuple[float, str]]] = {}
        for subset in combinations(templates, k):
            vote = regex_vote(df, subset, tie=tie, seed=seed)
            for strategy, acc in vote.groupby("notes_strategy", sort=False)["correct"].mean().items():
                accs.setdefault(strategy, []).append((float(acc), "+".join(subset)))
        for strategy, vals in accs.items():
            a = np.array([v for v, _ in vals])
            best = max(vals)
            rows.append(
                {
                    "notes_strategy": strategy,
                    "k": k,
                    "n_subsets": len(vals),
                    "mean": a.mean(),
                    "std": a.std(ddof=0),
                    "min": a.min(),
                    "max": a.max(),
                    "best_subset": best[1],
                }
            )
    return sort_rows(pd.DataFrame(rows), ["notes_strategy", "k"])


def extraction_audit(df: pd.DataFrame) -> pd.DataFrame:
    """Unparsed answers per template and strategy: n, unparsed, unparsed_rate."""
    g = df.assign(unparsed=df["extracted"].isna()).groupby(["template", "notes_strategy"], sort=False)["unparsed"]
    out = pd.DataFrame({"n": g.size(), "unparsed": g.sum().astype(int)})
    out["unparsed_rate"] = out["unparsed"] / out["n"]
    return out.reset_index()


def compare_with_paper(recomputed: dict[str, pd.DataFrame], paper: dict[str, dict]) -> pd.DataFrame:
    """Cell-by-cell comparison: rows table, row, column, paper, recomputed, diff (recomputed - paper).

    ``recomputed`` maps a table name to a wide frame (rows x strategy columns); ``paper`` maps the same
    names to {row: {column: value}}. Cells the paper leaves blank are skipped; cells we cannot compute
    have recomputed = NaN.
    """
    rows = []
    for table, cells in paper.items():
        ours = recomputed.get(table)
        for row, cols in cells.items():
            for col, value in cols.items():
                if value is None:
                    continue
                mine = np.nan
                if ours is not None and row in ours.index and col in ours.columns:
                    mine = float(ours.loc[row, col])
                rows.append(
                    {
                        "table": table,
                        "row": str(row),
                        "column": col,
                        "paper": float(value),
                        "recomputed": mine,
                        "diff": mine - float(value),
                    }
                )
    return pd.DataFrame(rows)


def sc_vote(df: pd.DataFrame, name: str = SC, tie: str = "first") -> pd.DataFrame:
    """Self-consistency: majority over the samples of ``name`` per question and condition (voted, gold, correct)."""
    sc = df[df["template"] == name]
    keys = ["dataset", "notes_strategy", "n_notes", "question_id"]
    rows = []
    for key, g in sc.sort_values("sample").groupby(keys, sort=False):
        voted = majority(list(g["extracted"]), tie)
        gold = g["gold"].iloc[0]
        rows.append({**dict(zip(keys, key)), "voted": voted, "gold": gold, "correct": voted == gold})
    return pd.DataFrame(rows, columns=[*keys, "voted", "gold", "correct"])


def method_accuracy(
    df: pd.DataFrame, templates: Sequence[str], tie: str = "first", seed: int = 0, n_boot: int = 2000
) -> pd.DataFrame:
    """Accuracy with 95% CI of every method in live records: each template and the regex vote (sample 0),
    SC (majority over its samples), and single-answer methods (auto_cot, llm_vote, llm_vote_shuffled)."""
    parts = []
    if templates:
        base = df[df["template"].isin(templates) & (df["sample"] == 0)]
        parts.append(accuracy_long(base, templates, tie=tie, seed=seed, n_boot=n_boot))
    rows = []
    sc = sc_vote(df, tie=tie)
    for strategy, g in sc.groupby("notes_strategy", sort=False):
        rows.append(accuracy_row(SC, strategy, g["correct"], seed, n_boot))
    for method in (AUTO_COT, LLM_VOTE, LLM_VOTE_SHUFFLED):
        for strategy, g in df[df["template"] == method].groupby("notes_strategy", sort=False):
            rows.append(accuracy_row(method, strategy, g["correct"], seed, n_boot))
    if rows:
        parts.append(pd.DataFrame(rows))
    if not parts:
        return pd.DataFrame(columns=["method", "notes_strategy", "n", "correct", "accuracy", "ci_low", "ci_high"])
    return sort_rows(pd.concat(parts, ignore_index=True), ["method", "notes_strategy"])


def usage_table(df: pd.DataFrame) -> pd.DataFrame:
    """Per template/method: records, paid calls, cache hits, tokens, cost and mean latency of paid calls."""
    g = df.groupby("template", sort=False)
    out = pd.DataFrame(
        {
            "records": g.size(),
            "paid": g["cached"].apply(lambda c: int((~c).sum())),
            "cached": g["cached"].sum().astype(int),
            "prompt_tokens": g["prompt_tokens"].sum(),
            "completion_tokens": g["completion_tokens"].sum(),
            "cost": g["cost"].sum(),
            "mean_latency_s": g["latency"].mean(),
        }
    )
    return out.reset_index().rename(columns={"template": "method"})


def notes_count_table(df: pd.DataFrame, template: str, seed: int = 0, n_boot: int = 2000) -> pd.DataFrame:
    """Fig 9: accuracy of ``template`` per strategy and number of notes, with CIs. Zero-shot is n = 0 of every
    strategy (the same prompt)."""
    d = df[(df["template"] == template) & (df["sample"] == 0)]
    if d.empty:
        raise DataError(f"no records of template {template!r}; present: {sorted(set(df['template']))}")
    zero = d[d["notes_strategy"] == ZERO_SHOT]
    rows = []
    strategies = [s for s in ordered_strategies(d["notes_strategy"]) if s != ZERO_SHOT] or [ZERO_SHOT]
    for strategy in strategies:
        g = d[d["notes_strategy"] == strategy]
        parts = [zero.assign(n_notes=0)] if len(zero) and strategy != ZERO_SHOT else []
        for n, h in pd.concat([*parts, g]).groupby("n_notes"):
            rows.append({**accuracy_row(template, strategy, h["correct"].to_numpy(), seed, n_boot), "n_notes": int(n)})
    return pd.DataFrame(rows)[["method", "notes_strategy", "n_notes", "n", "correct", "accuracy", "ci_low", "ci_high"]]


def compute_tables(
    records: pd.DataFrame, tie: str = "first", seed: int = 0, n_boot: int = 2000
) -> dict[str, pd.DataFrame]:
    """All paper tables from records (any records with several templates per question, not only OlaGPT's)."""
    check_tie_rule(tie)
    templates = list(dict.fromkeys(records["template"]))
    acc_long = accuracy_long(records, templates, tie=tie, seed=seed, n_boot=n_boot)
    counts = answer_counts(records, templates)
    vote = regex_vote(records, templates, tie=tie, seed=seed)
    tables = {
        "accuracy": accuracy_wide(acc_long),
        "accuracy_ci": acc_long,
        "consistency": consistency_table(counts),
        "precision": precision_table(acc_long),
        "bounds": bounds_long(counts, vote, seed=seed, n_boot=n_boot),
        "template_count": template_count_ablation(records, templates, tie=tie, seed=seed),
        "extraction": extraction_audit(records),
        "answer_counts": counts,
    }
    if "overridden" in records and records["overridden"].any():
        tables["overrides"] = override_effect(records, templates, tie=tie)
    return tables


def override_effect(df: pd.DataFrame, templates: Sequence[str], tie: str = "first") -> pd.DataFrame:
    """Per strategy: overrides, how many changed a record's correctness, and how many changed the regex vote."""
    if "overridden" not in df or not df["overridden"].any():
        return pd.DataFrame(columns=["notes_strategy", "overrides", "records_changed", "votes_changed"])
    before = without_overrides(df)
    sub = [t for t in templates if t in set(df["template"])]
    v_after = regex_vote(df[df["template"].isin(sub)], sub, tie=tie)
    v_before = regex_vote(before[before["template"].isin(sub)], sub, tie=tie)
    rows = []
    for strategy in dict.fromkeys(df.loc[df["overridden"], "notes_strategy"]):
        m = (df["notes_strategy"] == strategy) & df["overridden"]
        changed = int((df.loc[m, "correct"] != before.loc[m, "correct"]).sum())
        vs = v_after["notes_strategy"] == strategy
        rows.append(
            {
                "notes_strategy": strategy,
                "overrides": int(m.sum()),
                "records_changed": changed,
                "votes_changed": int(
                    (v_after.loc[vs, "correct"].to_numpy() != v_before.loc[vs, "correct"].to_numpy()).sum()
                ),
            }
        )
    return pd.DataFrame(rows)


def run_tables(
    df: pd.DataFrame, templates: Sequence[str], tie: str = "first", seed: int = 0, n_boot: int = 2000
) -> dict[str, pd.DataFrame]:
    """The foundation tables over the templates, plus every method's accuracy (templates, regex vote, LLM vote,
    SC, Auto-CoT) with CIs, the LLM-vote audit and usage per method."""
    present = [t for t in templates if t in set(df["template"])]
    base = df[df["template"].isin(present) & (df["sample"] == 0)]
    tables = compute_tables(_label_n(base), tie=tie, seed=seed, n_boot=n_boot) if present else {}
    tables["methods"] = method_accuracy(_label_n(df), present, tie=tie, seed=seed, n_boot=n_boot)
    tables["methods_wide"] = accuracy_wide(tables["methods"])
    if {LLM_VOTE, LLM_VOTE_SHUFFLED} <= set(df["template"]):
        tables["llm_vote_audit"] = llm_vote_audit(_label_n(df), present, tie=tie)
    tables["usage"] = usage_table(df)
    return tables


def _label_n(df: pd.DataFrame) -> pd.DataFrame:
    """With several note counts, name strategies "retrieval n=3" so tables keep them apart."""
    if df.loc[df["notes_strategy"] != ZERO_SHOT, "n_notes"].nunique() <= 1:
        return df
    out = df.copy()
    mask = out["notes_strategy"] != ZERO_SHOT
    out.loc[mask, "notes_strategy"] = out.loc[mask, "notes_strategy"] + " n=" + out.loc[mask, "n_notes"].astype(str)
    return out
