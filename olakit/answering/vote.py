"""The regex vote: combine the extracted answers of several templates for one question into one answer (pure; no
LLM calls). OlaGPT's "vote by regex": count the extracted labels, the most frequent wins. How ties and unparsed
answers are treated, and in which template order, is one VoteRule (olakit.settings), whose default is what the
authors' code does:

- ``tie="first"``: the tied label given first in vote order. With the order DT, DST, PT, ST, turbo (``vote_order=
  "paper"``) this is the authors' ``max(votes, key=votes.get)`` over a dict filled in the order of their recorded
  candidate outputs; ``random``: a choice among the tied labels keyed by the analysis seed (``analysis_seed``, the
  one seed of every tie-break) and the question; ``none``: no answer, counted wrong.
- ``unparsed="raw"``: an unparsed answer votes as its raw text (the authors); ``abstain``: it is left out.

``majority(["A", "B", "A"]) -> "A"``; ``majority(["B", "A", None]) -> "B"`` (tie, first rule);
``majority(["B", "A"], tie="none") -> None``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from olakit.answering.majority import check_tie_rule
from olakit.errors import DataError
from olakit.rng import keyed_rng
from olakit.settings import ANALYSIS, PAPER, Analysis, VoteRule

RAW = "\x00raw:"
"""Prefix of a raw-output label in ``unparsed="raw"`` votes (never an option label)."""


GROUP = ["dataset", "notes_strategy", "n_notes", "sample", "question_id"]
"""A vote combines the templates' records that share these columns."""


def answer_matrix(
    df: pd.DataFrame, templates: Sequence[str] | None = None, raw: bool = False
) -> tuple[pd.DataFrame, pd.Series] | tuple[pd.DataFrame, pd.Series, pd.DataFrame]:
    """Wide view: one row per GROUP key, one column per template (extracted labels), and the gold labels; with
    ``raw``, also the raw outputs placed alike (a third frame).

    Raises DataError if a template is missing for some question (votes over unequal sets mislead).
    """
    templates = list(templates) if templates is not None else list(dict.fromkeys(df["template"].unique()))
    missing = sorted(set(templates) - set(df["template"].unique()))
    if missing:
        raise DataError(f"templates {missing} have no records; present: {sorted(set(df['template'].unique()))}")
    sub = df[df["template"].isin(templates)]
    keys = sub.groupby(GROUP, sort=True).ngroup().to_numpy()  # each GROUP key's position in sorted order
    column = pd.Categorical(sub["template"], categories=templates).codes
    n_keys, m = (int(keys.max()) + 1 if len(keys) else 0), len(templates)
    twice = pd.Series(np.bincount(keys * m + column, minlength=n_keys * m)[keys * m + column] > 1, index=sub.index)
    if twice.any():
        twice &= sub.duplicated([*GROUP, "template"])  # the second answer of a template to a question
        first = sub[twice].iloc[0]
        same = sub[(sub["template"] == first["template"]) & (sub["question_id"] == first["question_id"])]
        raise DataError(
            f"template {first['template']} answers question {first['question_id']} in several runs or models "
            f"({', '.join(sorted({f'{r}/{m}' if r else m for r, m in zip(same['run'], same['model'])}))}): a vote "
            "is within one run; compare runs with olakit.analysis.compare (each run's templates become conditions)"
        )
    counts = np.bincount(keys, minlength=n_keys)
    firsts = np.flatnonzero(np.r_[True, np.diff(np.sort(keys)) > 0]) if len(keys) else np.array([], dtype=int)
    order = np.argsort(keys, kind="stable")
    index = pd.MultiIndex.from_frame(sub.iloc[order[firsts]][GROUP].reset_index(drop=True))
    if (counts < m).any():
        bad = index[int(np.flatnonzero(counts < m)[0])]
        raise DataError(f"question {dict(zip(GROUP, bad))} lacks records for some of the templates {templates}")

    def placed(name: str) -> pd.DataFrame:
        values = np.full((n_keys, m), None, dtype=object)
        given = sub[name].to_numpy(dtype=object)
        values[keys, column] = np.where(pd.isna(given), None, given)
        return pd.DataFrame(values, index=index, columns=pd.Index(templates, name="template"), dtype=object)

    gold = pd.Series(sub["gold"].to_numpy(dtype=object)[order[firsts]], index=index, name="gold")
    return (placed("extracted"), gold, placed("raw_output")) if raw else (placed("extracted"), gold)


def vote_labels(
    df: pd.DataFrame, templates: Sequence[str] | None = None, rule: VoteRule = PAPER
) -> tuple[pd.DataFrame, pd.Series]:
    """answer_matrix over the templates in the rule's vote order, with each unparsed answer as None (``abstain``) or
    as a label of its own made of its raw output (``raw``: two identical unparseable outputs vote together, as in
    the authors' code)."""
    templates = list(templates) if templates is not None else list(dict.fromkeys(df["template"].unique()))
    if rule.unparsed != "raw":
        return answer_matrix(df, rule.order(templates))
    wide, gold, raw = answer_matrix(df, rule.order(templates), raw=True)
    if wide.isna().to_numpy().any():
        wide = wide.where(wide.notna(), RAW + raw.astype(str))
    return wide, gold


def regex_vote(
    df: pd.DataFrame,
    templates: Sequence[str] | None = None,
    analysis: Analysis = ANALYSIS,
    labels: tuple[pd.DataFrame, pd.Series] | None = None,
) -> pd.DataFrame:
    """Regex majority vote over ``templates`` for every question and condition, under ``rule`` (its vote order,
    tie rule and unparsed rule; ``analysis.analysis_seed`` for the random tie rule).

    Returns one row per GROUP key with columns ``voted`` (None when nothing parsed won), ``gold``, ``correct``.
    ``labels``: vote_labels(df, templates, analysis) when the caller has it already (one matrix for many tables).
    """
    return vote_wide(*(labels if labels is not None else vote_labels(df, templates, analysis)), analysis)


def vote_wide(wide: pd.DataFrame, gold: pd.Series, analysis: Analysis = ANALYSIS) -> pd.DataFrame:
    """regex_vote over the columns of a vote_labels matrix, in their order (so that many subsets of templates share
    one matrix: ``VoteMatrix(wide).vote(columns)``)."""
    voted = VoteMatrix(wide).vote(range(wide.shape[1]), analysis)
    out = pd.DataFrame(
        {"voted": pd.Series(voted, index=wide.index, dtype=object), "gold": gold.values}, index=wide.index
    )
    out["correct"] = out["voted"].eq(out["gold"]) & out["voted"].notna()
    return out.reset_index()


class VoteMatrix:
    """A vote_labels matrix as numpy: each answer as the position of its label's first answer in its row (-1: it
    abstains), so a vote over any subset of the columns is a few array operations over every question at once, with
    the results of olakit.answering.majority.majority (its tie rules, the first-seen order within the subset)."""

    def __init__(self, wide: pd.DataFrame):
        self.values = wide.to_numpy(dtype=object)
        self.keys = list(wide.index)
        n, m = self.values.shape
        codes = pd.factorize(self.values.ravel(), use_na_sentinel=True)[0].reshape(n, m)
        same = codes[:, :, None] == codes[:, None, :]
        self.local = np.where(codes >= 0, same.argmax(2), -1)  # (n, m): the first column with the same label
        raw = pd.Series(self.values.ravel()).str.startswith(RAW, na=False).to_numpy().reshape(n, m)
        self.unparsed = (codes < 0) | raw
        self.raw = raw
        # each row's labels numbered 0.. in their first-seen order, for the votes of many subsets at once
        first = self.local == np.arange(m)
        rank = np.cumsum(first, axis=1) - 1
        self.code = np.where(self.local >= 0, np.take_along_axis(rank, np.maximum(self.local, 0), 1), -1)
        width = max(int(first.sum(1).max(initial=0)), 1)
        self.rep = np.zeros((n, width), dtype=np.intp)  # (n, L): the first column of each label
        rows, cols = np.nonzero(first)
        self.rep[rows, rank[rows, cols]] = cols
        # (m + 1, L * n): row j one-hot, column j gives row i label l; the last row (L - 1 - l), so that a subset's
        # weights (L for each of its columns, 1 for the last row) give votes * L + (L - 1 - label) in one product
        self.onehot = np.zeros((m + 1, width, n), dtype=np.float32)
        rows, cols = np.nonzero(self.code >= 0)
        self.onehot[cols, self.code[rows, cols], rows] = 1
        self.onehot[m] = np.arange(width - 1, -1, -1, dtype=np.float32)[:, None]
        self.onehot = self.onehot.reshape(m + 1, width * n)
        self.width = width

    def counts(self, columns) -> np.ndarray:
        """Votes per label among ``columns``: (n, m), indexed by the label's first column in the row (a label no
        column of the subset gives has 0)."""
        n, m = self.local.shape
        sub = self.local[:, list(columns)]
        ok = sub >= 0
        rows = np.broadcast_to(np.arange(n)[:, None], sub.shape)
        return np.bincount((rows * m + sub)[ok], minlength=n * m).reshape(n, m)

    def vote(self, columns, analysis: Analysis = ANALYSIS) -> list[str | None]:
        """The majority of ``columns`` per row under the analysis's tie rule (``random``: keyed per row by
        ``analysis.analysis_seed``, the one seed of every tie-break); None where nothing parsed won."""
        at, won = self.winners(columns, analysis)
        n = len(at)
        return list(np.where(won, self.values[np.arange(n), at], None))

    def winners(self, columns, analysis: Analysis = ANALYSIS) -> tuple[np.ndarray, np.ndarray]:
        """The vote of ``columns`` as positions: per row, the column whose label won (any column where none did) and
        whether a parsed label won, so a caller scoring many subsets compares positions, never labels."""
        check_tie_rule(analysis.tie)
        columns = list(columns)
        n, m = self.local.shape
        sub = self.local[:, columns]
        ok = sub >= 0
        rows = np.arange(n)[:, None]
        votes = self.counts(columns)
        each = np.where(ok, votes[rows, np.maximum(sub, 0)], 0)  # (n, k): the votes of each column's label
        top = each.max(1, initial=0)
        pick = each.argmax(1)  # the first column whose label has the most votes: the "first" tie rule's winner
        if analysis.tie != "first":
            earlier = np.tril(sub[:, :, None] == sub[:, None, :], -1).any(2)
            tied = ok & ~earlier & (each == top[:, None]) & (top > 0)[:, None]  # each tied label once, in order
            several = np.flatnonzero(tied.sum(1) > 1)
            if analysis.tie == "none":
                top[several] = 0
            else:
                for i in several:
                    at = np.flatnonzero(tied[i])
                    pick[i] = at[int(keyed_rng(analysis.analysis_seed, *_parts(self.keys[i])).integers(len(at)))]
        winner = sub[np.arange(n), pick] if len(columns) else np.full(n, -1)
        won = (top > 0) & (winner >= 0)
        at = np.maximum(winner, 0)
        return at, won & ~self.raw[np.arange(n), at]

    def winners_many(self, subsets, analysis: Analysis = ANALYSIS) -> tuple[np.ndarray, np.ndarray]:
        """winners for many subsets of one size at once: (n, s) positions and won flags, column i for
        ``subsets[i]``. The votes are one matrix product (each row's labels one-hot by column, times the subsets'
        column counts); only the rows where labels tie look at the subset's column order (the "first" rule's
        winner). The random tie rule, keyed per row, takes each subset in turn."""
        check_tie_rule(analysis.tie)
        subsets = np.asarray(subsets, dtype=np.intp).reshape(len(subsets), -1)
        if analysis.tie == "random" or not subsets.size:
            pairs = [self.winners(s, analysis) for s in subsets]
            n = self.local.shape[0]
            empty = np.zeros((n, 0), dtype=np.intp)
            return (np.stack([a for a, _ in pairs], 1) if pairs else empty,
                    np.stack([w for _, w in pairs], 1) if pairs else empty.astype(bool))  # fmt: skip
        width, n = self.width, self.local.shape[0]
        chunk = max(1, 10_000_000 // (n * width))  # the (chunk, L, n) counts stay within ~40 MB
        parts = [self._winners_chunk(subsets[i : i + chunk], analysis) for i in range(0, len(subsets), chunk)]
        return np.concatenate([a for a, _ in parts], 1), np.concatenate([w for _, w in parts], 1)

    def _winners_chunk(self, subsets: np.ndarray, rule: VoteRule) -> tuple[np.ndarray, np.ndarray]:
        width, n = self.width, self.local.shape[0]
        m, s = self.onehot.shape[0] - 1, len(subsets)
        weights = np.zeros((s, m + 1), dtype=np.float32)
        np.add.at(weights, (np.arange(s)[:, None], subsets), width)
        weights[:, m] = 1
        # votes * L + (L - 1 - label) for each label: exact small integers; the largest is the first label (in row
        # order) with the most votes
        key = (weights @ self.onehot).reshape(s, width, n)
        best = key.max(1).astype(np.int64)
        top, label = best // width, width - 1 - best % width
        floor = (top * width).astype(np.float32)[:, None, :]  # a label at or above it has as many votes as the top
        several = (np.count_nonzero(key >= floor, axis=1) > 1) & (top > 0)
        if rule.tie == "first":  # the tied label whose first column in the subset comes first
            si, ni = np.nonzero(several)
            lab = self.code[ni[:, None], subsets[si]]
            votes = key[si[:, None], np.maximum(lab, 0), ni[:, None]] // width
            hit = (lab >= 0) & (votes == top[si, ni][:, None])
            label[si, ni] = lab[np.arange(len(ni)), hit.argmax(1)]
        top, several, label = top.T, several.T, label.T
        rows = np.arange(n)[:, None]
        at = self.rep[rows, label]
        won = (top > 0) & ~self.raw[rows, at]
        if rule.tie == "none":
            won &= ~several
        return at, won


def _parts(key) -> tuple:
    return key if isinstance(key, tuple) else (key,)
