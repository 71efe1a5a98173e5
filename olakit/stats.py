"""Statistics beyond the paper, over records: paired tests with Holm correction, agreement, cost vs accuracy,
accuracy by retrieval-similarity band. Pure pandas/numpy/scipy/statsmodels; no LLM calls.

- ``paired_tests``: every pair of cells (method x strategy) answered on the same questions: exact McNemar
  (statsmodels) and a paired bootstrap of the accuracy difference, with Holm-corrected p-values
  (statsmodels.stats.multitest). ``holm_matrix`` lays them out as a Table 3 matrix.
- ``agreement``: pairwise Cohen's kappa (scikit-learn) and Fleiss' kappa (statsmodels) of the templates'
  extracted answers (unparsed counts as its own category), the error-overlap matrix (questions both got wrong),
  and ``leave_one_out`` (the vote without each template: the one whose removal costs least adds least).
- ``cost_accuracy``: tokens, cost and accuracy per cell with its Pareto front (fewer tokens, higher accuracy).
- ``similarity_bands``: accuracy per band of retrieval similarity, with CIs.
"""
from __future__ import annotations

from itertools import combinations
from typing import Sequence

import numpy as np
import pandas as pd

from olakit.analysis import _acc_row, ordered_strategies, sc_vote, sort_rows
from olakit.vote import answer_matrix, regex_vote


def cell_outcomes(df: pd.DataFrame, templates: Sequence[str], tie: str = "first", seed: int = 0) -> pd.DataFrame:
    """Correctness per question (rows) and cell (columns "method | strategy"): templates at sample 0, the regex
    vote, SC, and single-answer methods (auto_cot, llm_vote) when present."""
    parts = []
    base = df[df["template"].isin(templates) & (df["sample"] == 0)]
    for t in templates:
        g = base[base["template"] == t]
        parts.append(g.assign(method=t)[["method", "notes_strategy", "question_id", "correct"]])
    vote = regex_vote(base, templates, tie=tie, seed=seed).assign(method="regex_vote")
    parts.append(vote[["method", "notes_strategy", "question_id", "correct"]])
    if (df["template"] == "SC").any():
        parts.append(sc_vote(df, tie=tie).assign(method="SC")[["method", "notes_strategy", "question_id", "correct"]])
    for m in ("auto_cot", "llm_vote"):
        g = df[df["template"] == m]
        if len(g):
            parts.append(g.assign(method=m)[["method", "notes_strategy", "question_id", "correct"]])
    long = pd.concat(parts, ignore_index=True)
    long["cell"] = long["method"] + " | " + long["notes_strategy"]
    return long.pivot_table(index="question_id", columns="cell", values="correct", aggfunc="first", sort=False)


def mcnemar_exact(a, b) -> tuple[int, int, float]:
    """Discordant counts (a right & b wrong, a wrong & b right) and the exact two-sided McNemar p-value.

    ``mcnemar_exact([1, 1, 0], [0, 0, 0]) -> (2, 0, 0.5)``
    """
    from statsmodels.stats.contingency_tables import mcnemar

    a, b = np.asarray(a, bool), np.asarray(b, bool)
    table = [[int((a & b).sum()), int((a & ~b).sum())], [int((~a & b).sum()), int((~a & ~b).sum())]]
    n10, n01 = table[0][1], table[1][0]
    p = 1.0 if n10 + n01 == 0 else float(mcnemar(table, exact=True).pvalue)
    return n10, n01, p


def paired_bootstrap(a, b, n_boot: int = 2000, seed: int = 0) -> tuple[float, float, float, float]:
    """Accuracy difference a - b, its 95% CI and a two-sided p-value, resampling questions (pairs kept)."""
    d = np.asarray(a, float) - np.asarray(b, float)
    rng = np.random.default_rng(seed)
    means = d[rng.integers(0, d.size, size=(n_boot, d.size))].mean(axis=1)
    lo, hi = np.quantile(means, [0.025, 0.975])
    # share of resampled differences on the other side of zero, doubled (percentile test)
    p = min(1.0, 2 * min((means <= 0).mean(), (means >= 0).mean())) if d.any() else 1.0
    return float(d.mean()), float(lo), float(hi), float(p)


def holm(pvalues: Sequence[float]) -> np.ndarray:
    """Holm-adjusted p-values (statsmodels)."""
    from statsmodels.stats.multitest import multipletests

    p = np.asarray(pvalues, float)
    return multipletests(p, method="holm")[1] if p.size else p


def paired_tests(outcomes: pd.DataFrame, cells: Sequence[str] | None = None, n_boot: int = 2000,
                 seed: int = 0) -> pd.DataFrame:
    """All pairs of cells on the questions both answered: accuracies, discordant counts, exact McNemar p,
    paired-bootstrap difference with CI and p, Holm-adjusted p-values (over all pairs), and significance."""
    cells = list(cells) if cells is not None else list(outcomes.columns)
    rows = []
    for a, b in combinations(cells, 2):
        both = outcomes[[a, b]].dropna()
        x, y = both[a].astype(bool).to_numpy(), both[b].astype(bool).to_numpy()
        n10, n01, p_mc = mcnemar_exact(x, y)
        diff, lo, hi, p_bs = paired_bootstrap(x, y, n_boot=n_boot, seed=seed)
        rows.append({"a": a, "b": b, "n": len(both), "acc_a": x.mean(), "acc_b": y.mean(), "a_only": n10,
                     "b_only": n01, "p_mcnemar": p_mc, "diff": diff, "diff_ci_low": lo, "diff_ci_high": hi,
                     "p_bootstrap": p_bs})
    out = pd.DataFrame(rows)
    if len(out):
        out["p_mcnemar_holm"] = holm(out["p_mcnemar"])
        out["p_bootstrap_holm"] = holm(out["p_bootstrap"])
        out["significant"] = out["p_mcnemar_holm"] < 0.05
    return out


def holm_matrix(tests: pd.DataFrame, value: str = "p_mcnemar_holm") -> pd.DataFrame:
    """Square matrix of a pairwise column (default: Holm-adjusted McNemar p) over the cells."""
    cells = list(dict.fromkeys([*tests["a"], *tests["b"]]))
    m = pd.DataFrame(np.nan, index=cells, columns=cells)
    for a, b, v in zip(tests["a"], tests["b"], tests[value]):
        m.loc[a, b] = m.loc[b, a] = v
    return m


def agreement(df: pd.DataFrame, templates: Sequence[str]) -> dict[str, pd.DataFrame]:
    """Per strategy: pairwise Cohen's kappa, Fleiss' kappa, and the error-overlap matrix (both wrong)."""
    from sklearn.metrics import cohen_kappa_score
    from statsmodels.stats.inter_rater import aggregate_raters, fleiss_kappa

    base = df[df["template"].isin(templates) & (df["sample"] == 0)]
    kappas, fleiss, overlap = [], [], []
    for strategy in ordered_strategies(base["notes_strategy"]):
        wide, gold = answer_matrix(base[base["notes_strategy"] == strategy], templates)
        labels = wide.fillna("unparsed").astype(str)
        wrong = labels.ne(gold.values, axis=0) | wide.isna()
        for a, b in combinations(templates, 2):
            k = cohen_kappa_score(labels[a], labels[b]) if labels[[a, b]].nunique().max() > 1 else np.nan
            both = int((wrong[a] & wrong[b]).sum())
            either = int((wrong[a] | wrong[b]).sum())
            kappas.append({"notes_strategy": strategy, "a": a, "b": b, "cohen_kappa": float(k),
                           "agreement": float((labels[a] == labels[b]).mean())})
            overlap.append({"notes_strategy": strategy, "a": a, "b": b, "both_wrong": both,
                            "jaccard_wrong": both / either if either else np.nan})
        counts, _ = aggregate_raters(labels.to_numpy())
        fleiss.append({"notes_strategy": strategy, "n": len(labels), "raters": len(templates),
                       "fleiss_kappa": float(fleiss_kappa(counts, method="fleiss"))})
    return {"cohen_kappa": pd.DataFrame(kappas), "fleiss_kappa": pd.DataFrame(fleiss),
            "error_overlap": pd.DataFrame(overlap)}


def leave_one_out(df: pd.DataFrame, templates: Sequence[str], tie: str = "first", seed: int = 0) -> pd.DataFrame:
    """Vote accuracy with every template, and without each one in turn (``delta`` = all - without).

    The template with the smallest (most negative) delta adds least to the vote."""
    base = df[df["template"].isin(templates) & (df["sample"] == 0)]
    full = regex_vote(base, templates, tie=tie, seed=seed).groupby("notes_strategy", sort=False)["correct"].mean()
    rows = []
    for t in templates:
        rest = [x for x in templates if x != t]
        acc = regex_vote(base, rest, tie=tie, seed=seed).groupby("notes_strategy", sort=False)["correct"].mean()
        for strategy, a in acc.items():
            rows.append({"notes_strategy": strategy, "left_out": t, "vote_all": float(full[strategy]),
                         "vote_without": float(a), "delta": float(full[strategy] - a)})
    out = sort_rows(pd.DataFrame(rows), ["notes_strategy", "left_out"])
    out["adds_least"] = out.groupby("notes_strategy")["delta"].transform("min").eq(out["delta"])
    return out


def cost_accuracy(df: pd.DataFrame, templates: Sequence[str], price: tuple[float, float] | None = None,
                  tie: str = "first", seed: int = 0) -> pd.DataFrame:
    """Per cell: accuracy, tokens per question and cost per question, and whether it is on the Pareto front.

    A vote costs the sum of its templates, SC the sum of its samples. Records without reported tokens (recorded
    runs) get an estimate of 4 characters per token for the output only (``tokens_source`` says which).
    ``price``: USD per million (prompt, completion) tokens; default: the records' own cost.
    """
    d = df.copy()
    reported = d["completion_tokens"].notna()
    d["tok_in"] = d["prompt_tokens"].astype("Float64").fillna(0)
    d["tok_out"] = d["completion_tokens"].astype("Float64").fillna(d["raw_output"].str.len() / 4)
    if price is not None:
        d["usd"] = (d["tok_in"] * price[0] + d["tok_out"] * price[1]) / 1e6
    else:
        d["usd"] = d["cost"].astype("Float64")
    d["tokens"] = d["tok_in"] + d["tok_out"]
    per_q = d.groupby(["template", "notes_strategy", "question_id"], sort=False)[["tokens", "usd"]].sum()
    acc = cell_outcomes(df, templates, tie=tie, seed=seed)
    rows = []
    for cell in acc.columns:
        method, strategy = cell.split(" | ")
        members = templates if method == "regex_vote" else [method]
        cost = per_q[per_q.index.get_level_values("template").isin(members)
                     & (per_q.index.get_level_values("notes_strategy") == strategy)]
        by_q = cost.groupby(level="question_id").sum()
        rows.append({"method": method, "notes_strategy": strategy, "accuracy": float(acc[cell].mean()),
                     "tokens_per_question": float(by_q["tokens"].mean()) if len(by_q) else np.nan,
                     "usd_per_question": float(by_q["usd"].mean()) if len(by_q) and by_q["usd"].notna().any()
                     else np.nan,
                     "tokens_source": "reported" if reported.all() else "estimated (output chars / 4)"})
    out = pd.DataFrame(rows)
    out["pareto"] = [not ((out["tokens_per_question"] <= t) & (out["accuracy"] >= a)
                          & ((out["tokens_per_question"] < t) | (out["accuracy"] > a))).any()
                     for t, a in zip(out["tokens_per_question"], out["accuracy"])]
    return out


def similarity_bands(df: pd.DataFrame, similarity: pd.Series | None = None,
                     edges: Sequence[float] = (-1.0, 0.3, 0.45, 0.6, 1.0), seed: int = 0,
                     n_boot: int = 2000) -> pd.DataFrame:
    """Accuracy per band of retrieval similarity, per method and strategy, with 95% CIs.

    ``similarity``: per question_id (e.g. the similarity to its nearest note); default: the mean of each
    record's note_sims (live runs). Records without a similarity are left out.
    """
    d = df[df["sample"] == 0].copy()
    if similarity is None:
        d["similarity"] = d["note_sims"].map(lambda s: float(np.mean(s)) if len(s) else np.nan)
    else:
        d["similarity"] = d["question_id"].map(similarity)
    d = d.dropna(subset=["similarity"])
    d["band"] = pd.cut(d["similarity"], bins=list(edges), include_lowest=True).astype(str)
    rows = []
    for (method, strategy, band), g in d.groupby(["template", "notes_strategy", "band"], sort=False):
        row = _acc_row(method, strategy, g["correct"].to_numpy(), seed, n_boot)
        rows.append({**row, "band": band, "mean_similarity": float(g["similarity"].mean())})
    return sort_rows(pd.DataFrame(rows), ["method", "notes_strategy", "band"]) if rows else pd.DataFrame()


def nearest_note_similarity(questions, library) -> pd.Series:
    """Per question id: cosine similarity to the most similar note of the library (FAISS)."""
    return pd.Series({q.id: library.ranked_notes(q.text)[0][1] for q in questions}, name="similarity")
