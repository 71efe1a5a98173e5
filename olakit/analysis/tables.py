"""Tables over records: pure pandas/numpy, no LLM calls.

Paper tables (OlaGPT, seeds/000): Table 3 accuracy, Table 4 consistency, Table 7 range/mean of template
accuracies, Table 8 regex bounds, the template-count ablation of Fig 6 and Fig 9's notes count; method tables of
live runs (every method with CIs, usage, the LLM-vote audit); ``compute_tables`` and ``run_tables`` bundle them.
Every accuracy comes with its Wilson interval at the analysis settings' level (olakit.analysis.intervals); every
function that votes or computes an interval takes the analysis settings whole (olakit.olagpt.config.Analysis).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from itertools import combinations

import numpy as np
import pandas as pd

from olakit.analysis.intervals import accuracy_row
from olakit.answering.extract import UNFINISHED, UNPARSED_CAUSES
from olakit.answering.majority import majority
from olakit.answering.vote import VoteMatrix, regex_vote, vote_labels
from olakit.config import STATS, Stats
from olakit.data.overrides import without_overrides
from olakit.errors import DataError
from olakit.names import (
    AUTO_COT,
    BASELINES,
    CHOSEN_VOTE,
    DIY,
    LLM_VOTE,
    LLM_VOTE_SHUFFLED,
    NON_TEMPLATES,
    REGEX_LOWER,
    REGEX_UPPER,
    REGEX_VOTE,
    SC,
    STRATEGIES,
    ZERO_SHOT,
    voting_templates,
)
from olakit.rng import keyed_rng
from olakit.settings import ANALYSIS, PAPER, Analysis, VoteRule


def _ordered(values, order: Sequence[str]) -> list[str]:
    present = list(dict.fromkeys(values))
    return [v for v in order if v in present] + [v for v in present if v not in order]


def ordered_strategies(values) -> list[str]:
    """Strategies present in ``values``, in the paper's order (zero-shot, random, retrieval, combine)."""
    return _ordered(values, STRATEGIES)


def sort_rows(df: pd.DataFrame, by: Sequence[str], orders: dict[str, Sequence] | None = None) -> pd.DataFrame:
    """Sort by ``by`` columns, each in order of first appearance except notes_strategy (paper order) and those
    ``orders`` gives an order of their values."""
    keys = []
    for col in by:
        if col in (orders or {}):
            order = list(orders[col])
        elif col == "notes_strategy":
            order = ordered_strategies(df[col])
        else:
            order = list(dict.fromkeys(df[col].unique()))
        keys.append(df[col].map({v: i for i, v in enumerate(order)}))
    rank = pd.DataFrame(dict(zip(by, keys)))
    return df.loc[rank.sort_values(list(by), kind="stable").index].reset_index(drop=True)


def accuracy_long(
    df: pd.DataFrame,
    templates: Sequence[str] | None = None,
    analysis: Analysis = ANALYSIS,
    vote: bool = True,
) -> pd.DataFrame:
    """Accuracy of each template and of the regex vote, per note strategy, with 95% CIs.

    Columns: method, notes_strategy, n, correct, accuracy, ci_low, ci_high. Method REGEX_VOTE is the
    majority of ``templates`` (default: every template present) under ``rule`` (olakit.answering.vote); with ``vote``
    False there is none (templates that did not all answer every question: each on the questions it answered).
    """
    templates = list(templates) if templates is not None else list(dict.fromkeys(df["template"].unique()))
    parts = [df[df["template"].isin(templates)].rename(columns={"template": "method"})]
    if vote:
        parts.append(regex_vote(df, templates, analysis).assign(method=REGEX_VOTE))
    rows = [
        accuracy_row(method, strategy, g["correct"], analysis)
        for (method, strategy), g in pd.concat(parts)[["method", "notes_strategy", "correct"]].groupby(
            ["method", "notes_strategy"], sort=False
        )
    ]
    out = sort_rows(pd.DataFrame(rows), ["method", "notes_strategy"])
    return out


def accuracy_wide(long: pd.DataFrame) -> pd.DataFrame:
    """Table 3 layout: one row per method, one column per note strategy (accuracy)."""
    wide = long.pivot(index="method", columns="notes_strategy", values="accuracy")
    wide = wide[_ordered(long["notes_strategy"], STRATEGIES)]
    return wide.loc[list(dict.fromkeys(long["method"]))]


def answer_counts(
    df: pd.DataFrame,
    templates: Sequence[str] | None = None,
    rule: VoteRule = PAPER,
    labels: tuple[pd.DataFrame, pd.Series] | None = None,
) -> pd.DataFrame:
    """Per question and condition: how the templates' answers split (one row per question and condition).

    Columns: n_templates, n_correct (templates answering correctly), n_wrong_top (size of the largest group
    agreeing on one wrong label: the paper's "incorrect consistency" count), n_plurality (size of the
    largest group agreeing on any label), n_unparsed. Under the rule's ``unparsed="raw"`` (the default) an unparsed
    answer is a label of its own (its raw text), as in the authors' vote. ``labels``: vote_labels' matrix, when the
    caller has it.
    """
    wide, gold = labels if labels is not None else vote_labels(df, templates, rule)
    m = VoteMatrix(wide)
    votes = m.counts(range(wide.shape[1]))
    is_gold = m.values == gold.to_numpy(dtype=object)[:, None]  # at each label's first column: is it the gold?
    return pd.DataFrame(
        {
            "n_templates": wide.shape[1],
            "n_correct": is_gold.sum(1),
            "n_wrong_top": np.where(is_gold, 0, votes).max(1, initial=0),
            "n_plurality": votes.max(1, initial=0),
            "n_unparsed": m.unparsed.sum(1),
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


def bound_hits(counts: pd.DataFrame) -> dict[str, pd.Series]:
    """Per question of ``answer_counts``, whether the regex vote's upper and lower bounds count it right.

    Appendix A.5 of the paper, with a = templates correct and w = largest wrong group: upper counts a >= w (a tie the
    vote could break either way), lower counts a > w (the vote must be right). Upper also needs a > 0: with no
    template correct no vote can be right (only all-unparsed questions have a = w = 0).
    """
    a, w = counts["n_correct"], counts["n_wrong_top"]
    return {REGEX_UPPER: (a >= w) & (a > 0), REGEX_LOWER: a > w}


def bounds_long(counts: pd.DataFrame, vote: pd.DataFrame, analysis: Stats = STATS) -> pd.DataFrame:
    """Table 8: regex_upper, regex_lower (``bound_hits``) and the regex vote per strategy, with 95% CIs."""
    rows = []
    for method, hit in bound_hits(counts).items():
        for strategy, g in hit.groupby(counts["notes_strategy"], sort=False):
            rows.append(accuracy_row(method, strategy, g.to_numpy(), analysis))
    for strategy, g in vote.groupby("notes_strategy", sort=False):
        rows.append(accuracy_row(REGEX_VOTE, strategy, g["correct"].to_numpy(), analysis))
    return sort_rows(pd.DataFrame(rows), ["method", "notes_strategy"])


def precision_table(long: pd.DataFrame, exclude: Sequence[str] = BASELINES) -> pd.DataFrame:
    """Table 7: range (max - min) and mean of the single-template accuracies per strategy.

    Baselines (``turbo``), the votes and the other methods are left out, as in the paper; a run of baselines only
    gives empty (NaN) columns.
    """
    single = long[~long["method"].isin([*exclude, REGEX_VOTE, *NON_TEMPLATES])]
    g = single.groupby("notes_strategy")["accuracy"]
    t = pd.DataFrame({"Range": g.max() - g.min(), "Mean": g.mean()}, index=list(g.groups)).T
    return t.reindex(index=["Range", "Mean"], columns=_ordered(long["notes_strategy"], STRATEGIES))


SUBSETS = 200
"""Above this many subsets of one size, the template-count ablation votes over a seeded sample of them."""


def template_count_ablation(
    df: pd.DataFrame,
    templates: Sequence[str] | None = None,
    analysis: Analysis = ANALYSIS,
    max_subsets: int = SUBSETS,
    labels: tuple[pd.DataFrame, pd.Series] | None = None,
) -> pd.DataFrame:
    """Fig 6's shape: vote accuracy over the subsets of k templates, k = 1..len(templates): every subset while a
    size has at most ``max_subsets``, else that many drawn without repeats (seeded by the analysis seed; ``sampled``
    says so, ``n_subsets`` how many).

    One row per (strategy, k): n_subsets, sampled, mean, std, min, max of the subsets' vote accuracies, and the
    best subset. With k = 1 the "vote" is the template itself.
    """
    templates = analysis.order(templates if templates is not None else df["template"])
    wide, gold = labels if labels is not None else vote_labels(df, templates, analysis)  # each subset: its columns
    matrix = VoteMatrix(wide)
    gold = gold.to_numpy(dtype=object)
    rows_at = np.arange(len(gold))
    right_at = (matrix.values == gold[:, None]) & pd.notna(matrix.values)  # (n, m): each column's answer is right
    strategies = wide.index.get_level_values("notes_strategy").to_numpy()
    groups = {st: np.flatnonzero(strategies == st) for st in dict.fromkeys(strategies)}
    rng = np.random.default_rng([analysis.analysis_seed, len(templates)])
    rows = []
    for k in range(1, len(templates) + 1):
        total = math.comb(len(templates), k)
        sampled = total > max_subsets
        subsets = (
            _sample_subsets(len(templates), k, max_subsets, rng) if sampled else combinations(range(len(templates)), k)
        )
        subsets = np.array(list(subsets), dtype=np.intp).reshape(-1, k)
        at, won = matrix.winners_many(subsets, analysis)  # (n, subsets): every subset of this size at once
        right = won & right_at[rows_at[:, None], at]
        for strategy, where in groups.items():
            a = right[where].mean(0)
            names = ["+".join(templates[i] for i in subsets[j]) for j in np.flatnonzero(a == a.max())]
            rows.append(
                {
                    "notes_strategy": strategy,
                    "k": k,
                    "n_subsets": len(a),
                    "sampled": sampled,
                    "mean": a.mean(),
                    "std": a.std(ddof=0),
                    "min": a.min(),
                    "max": a.max(),
                    "best_subset": max(names),  # the best accuracy; among equals, the last name in order
                }
            )
    return sort_rows(pd.DataFrame(rows), ["notes_strategy", "k"])


def _sample_subsets(m: int, k: int, size: int, rng: np.random.Generator) -> list[tuple[int, ...]]:
    """``size`` distinct k-subsets of range(m), each in column order."""
    seen: set[tuple[int, ...]] = set()
    while len(seen) < size:
        seen.add(tuple(sorted(rng.choice(m, k, replace=False).tolist())))
    return sorted(seen)


def extraction_audit(df: pd.DataFrame) -> pd.DataFrame:
    """Unparsed answers per template and strategy, and why: n, unparsed, unparsed_rate; the unparsed by cause of
    the first output (cut_off at the token limit, not_an_option, no_answer; olakit.answering.extract.UNPARSED_CAUSES);
    how many first outputs stopped at the limit (cut_off_outputs, whatever the answer), and how many answers the second
    stage gave (second_stage; see olakit.answering.second_stage)."""
    d = df.assign(unparsed=df["extracted"].isna())
    keys = ["template", "notes_strategy"]
    g = d.groupby(keys, sort=False)
    out = pd.DataFrame({"n": g.size(), "unparsed": g["unparsed"].sum().astype(int)})
    out["unparsed_rate"] = out["unparsed"] / out["n"]
    unparsed = d[d["unparsed"]]
    for cause in UNPARSED_CAUSES:
        out[cause] = unparsed[unparsed["unparsed_cause"] == cause].groupby(keys, sort=False).size()
    out["cut_off_outputs"] = d[d["finish_reason"] == "length"].groupby(keys, sort=False).size()
    out["second_stage"] = d[d["answer_stage"] == 2].groupby(keys, sort=False).size()
    cols = [*UNPARSED_CAUSES, "cut_off_outputs", "second_stage"]
    out[cols] = out[cols].fillna(0).astype(int)
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


def sc_vote(df: pd.DataFrame, name: str = SC, analysis: Analysis = ANALYSIS) -> pd.DataFrame:
    """Self-consistency: majority over the samples of ``name`` per question and condition (voted, gold, correct).
    A random tie is broken by a generator keyed on the analysis seed and the question's condition, as the regex
    vote's is (it was ``default_rng(0)`` for every question: the same position every time)."""
    sc = df[df["template"] == name]
    keys = ["dataset", "notes_strategy", "n_notes", "question_id"]
    rows = []
    for key, g in sc.sort_values("sample").groupby(keys, sort=False):
        dataset, strategy, n, qid = key
        seeded = analysis.tie == "random"
        rng = keyed_rng(analysis.analysis_seed, dataset, strategy, n, 0, qid) if seeded else None  # GROUP's order
        voted = majority(list(g["extracted"]), analysis.tie, rng)
        gold = g["gold"].iloc[0]
        rows.append({**dict(zip(keys, key)), "voted": voted, "gold": gold, "correct": voted == gold})
    return pd.DataFrame(rows, columns=[*keys, "voted", "gold", "correct"])


def method_accuracy(
    df: pd.DataFrame,
    templates: Sequence[str],
    analysis: Analysis = ANALYSIS,
    vote: bool = True,
) -> pd.DataFrame:
    """Accuracy with 95% CI of every method in the records: each template and the regex vote (sample 0; none
    without ``vote``), SC (majority over its samples), and single-answer methods (auto_cot, llm_vote,
    llm_vote_shuffled, the chosen vote)."""
    parts = []
    if templates:
        base = df[df["template"].isin(templates) & (df["sample"] == 0)]
        parts.append(accuracy_long(base, templates, analysis, vote))
    rows = []
    sc = sc_vote(df, analysis=analysis)
    for strategy, g in sc.groupby("notes_strategy", sort=False):
        rows.append(accuracy_row(SC, strategy, g["correct"], analysis))
    for method in (AUTO_COT, LLM_VOTE, LLM_VOTE_SHUFFLED, DIY, CHOSEN_VOTE):
        for strategy, g in df[df["template"] == method].groupby("notes_strategy", sort=False):
            rows.append(accuracy_row(method, strategy, g["correct"], analysis))
    if rows:
        parts.append(pd.DataFrame(rows))
    if not parts:
        return pd.DataFrame(columns=["method", "notes_strategy", "n", "correct", "accuracy", "ci_low", "ci_high"])
    return sort_rows(pd.concat(parts, ignore_index=True), ["method", "notes_strategy"])


def usage_table(df: pd.DataFrame) -> pd.DataFrame:
    """Per template/method: records, paid calls, cache hits, tokens (the reasoning tokens among the completion
    tokens), cost, mean latency of paid calls, and the answers cut off while thinking (``unfinished``)."""
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
    if "reasoning_tokens" in df:  # part of completion_tokens; empty where the endpoint reported none
        out.insert(out.columns.get_loc("cost"), "reasoning_tokens", g["reasoning_tokens"].sum(min_count=1))
    if "unparsed_cause" in df:
        out["unfinished"] = g["unparsed_cause"].apply(lambda c: int((c == UNFINISHED).sum()))
    return out.reset_index().rename(columns={"template": "method"})


def notes_count_table(df: pd.DataFrame, template: str, analysis: Stats = STATS) -> pd.DataFrame:
    """Fig 9: accuracy of ``template`` per strategy and number of notes, with CIs. Zero-shot is n = 0 of every
    strategy (the same prompt)."""
    d = df[(df["template"] == template) & (df["sample"] == 0)]
    if d.empty:
        raise DataError(f"no records of template {template!r}; present: {sorted(set(df['template'].unique()))}")
    zero = d[d["notes_strategy"] == ZERO_SHOT]
    rows = []
    strategies = [s for s in ordered_strategies(d["notes_strategy"]) if s != ZERO_SHOT] or [ZERO_SHOT]
    for strategy in strategies:
        g = d[d["notes_strategy"] == strategy]
        parts = [zero.assign(n_notes=0)] if len(zero) and strategy != ZERO_SHOT else []
        for n, h in pd.concat([*parts, g]).groupby("n_notes"):
            rows.append({**accuracy_row(template, strategy, h["correct"].to_numpy(), analysis), "n_notes": int(n)})
    return pd.DataFrame(rows)[["method", "notes_strategy", "n_notes", "n", "correct", "accuracy", "ci_low", "ci_high"]]


def compute_tables(
    records: pd.DataFrame,
    templates: Sequence[str] | None = None,
    analysis: Analysis = ANALYSIS,
) -> dict[str, pd.DataFrame]:
    """All paper tables from records (any records with several templates per question, not only OlaGPT's).

    ``templates`` (default: every template of the records, in their order) are voted in that order (the ``first``
    tie rule takes the first); methods that are not templates (an LLM vote, SC, Auto-CoT) join Table 3 and Table 8
    beside the regex vote.
    """
    if templates is None:
        templates = voting_templates(records["template"])
    templates = list(templates)
    base = records[records["template"].isin(templates)]
    acc_long = method_accuracy(records, templates, analysis)
    if "overridden" in base and base["overridden"].any():  # how many answers in each cell were corrected by hand
        n = base[base["overridden"]].groupby(["template", "notes_strategy"]).size()
        acc_long["overrides"] = [int(n.get((m, s), 0)) for m, s in zip(acc_long["method"], acc_long["notes_strategy"])]
    labels = vote_labels(base, templates, analysis)  # one answer matrix for the counts, the vote and Fig 6
    counts = answer_counts(base, templates, analysis, labels)
    vote = regex_vote(base, templates, analysis, labels)
    others = acc_long[acc_long["method"].isin(NON_TEMPLATES)]
    tables = {
        "accuracy": accuracy_wide(acc_long),
        "accuracy_ci": acc_long,
        "consistency": consistency_table(counts),
        "precision": precision_table(acc_long),
        "bounds": pd.concat([bounds_long(counts, vote, analysis), others], ignore_index=True),
        "template_count": template_count_ablation(base, analysis.order(templates), analysis, labels=labels),
        "extraction": extraction_audit(records),
        "answer_counts": counts,
    }
    if "overridden" in base and base["overridden"].any():
        tables["overrides"] = override_effect(base, templates, analysis)
    return tables


def override_effect(df: pd.DataFrame, templates: Sequence[str], analysis: Analysis = ANALYSIS) -> pd.DataFrame:
    """Per strategy: overrides, how many changed a record's correctness, and how many changed the regex vote."""
    if "overridden" not in df or not df["overridden"].any():
        return pd.DataFrame(columns=["notes_strategy", "overrides", "records_changed", "votes_changed"])
    before = without_overrides(df)
    have = set(df["template"].unique())
    sub = [t for t in templates if t in have]
    v_after = regex_vote(df[df["template"].isin(sub)], sub, analysis)
    v_before = regex_vote(before[before["template"].isin(sub)], sub, analysis)
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


def answer_stages_table(one: pd.DataFrame, two: pd.DataFrame, analysis: Stats = STATS) -> pd.DataFrame:
    """Per template and strategy, the same slice answered with one stage and with two (olakit.answering.second_stage):
    accuracy with CIs, unparsed rate, and what the second stage cost (extra calls and their tokens).

    ``one`` and ``two``: records of the same grid with answer_stages 1 and 2 (sample 0; the first calls are shared,
    so the second run pays only the second stage)."""
    keys = ["template", "notes_strategy"]
    a, b = (d[d["sample"] == 0].set_index([*keys, "question_id"]) for d in (one, two))
    if set(a.index) != set(b.index):
        raise DataError("one-stage and two-stage records cover different questions or cells; run the same grid")
    b = b.loc[a.index]
    rows = []
    for (template, strategy), g1 in a.groupby(level=keys, sort=False):
        g2 = b.loc[g1.index]
        r1 = accuracy_row(template, strategy, g1["correct"].to_numpy(), analysis)
        r2 = accuracy_row(template, strategy, g2["correct"].to_numpy(), analysis)
        extra = g2["answer_stage"] == 2
        tokens = (
            g2["prompt_tokens"].astype("Float64")
            + g2["completion_tokens"].astype("Float64")
            - g1["prompt_tokens"].astype("Float64")
            - g1["completion_tokens"].astype("Float64")
        )
        rows.append(
            {
                "template": template,
                "notes_strategy": strategy,
                "n": r1["n"],
                "accuracy_1": r1["accuracy"],
                "ci_low_1": r1["ci_low"],
                "ci_high_1": r1["ci_high"],
                "unparsed_rate_1": float(g1["extracted"].isna().mean()),
                "accuracy_2": r2["accuracy"],
                "ci_low_2": r2["ci_low"],
                "ci_high_2": r2["ci_high"],
                "unparsed_rate_2": float(g2["extracted"].isna().mean()),
                "cut_off_1": int((g1["finish_reason"] == "length").sum()),
                "second_calls": int(extra.sum()),
                "second_tokens": float(tokens.sum()) if tokens.notna().all() else float("nan"),
            }
        )
    out = pd.DataFrame(rows)
    total = {"template": "all", "notes_strategy": "all", "n": int(out["n"].sum())}
    for stage, g in (("1", a), ("2", b)):
        total[f"accuracy_{stage}"] = float(g["correct"].mean())
        total[f"unparsed_rate_{stage}"] = float(g["extracted"].isna().mean())
    total.update(
        second_calls=int(out["second_calls"].sum()),
        second_tokens=float(out["second_tokens"].sum()),
        cut_off_1=int(out["cut_off_1"].sum()),
    )
    return pd.concat([out, pd.DataFrame([total])], ignore_index=True)
