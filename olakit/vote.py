"""Voters: combine the answers of several templates for one question into one answer.

Voters are looked up by name in ``VOTERS``. The regex majority vote is OlaGPT's "vote by regex":
count the extracted labels, the most frequent wins. Unparsed answers (None) abstain.

Ties are resolved by an explicit rule (``TIE_RULES``):

- ``"first"``: the tied label given first in template order. This is what OlaGPT's code does
  (``max(votes, key=votes.get)`` over a dict filled in template order dst, dt, pt, st, turbo).
- ``"random"``: a seeded random choice among the tied labels (seed and question decide it).
- ``"none"``: no answer, which counts as wrong; the strictest reading of "majority".

``majority(["A", "B", "A"]) -> "A"``; ``majority(["B", "A", None]) -> "B"`` (tie, first rule);
``majority(["B", "A"], tie="none") -> None``.
"""
from __future__ import annotations

import zlib
from collections import Counter
from typing import Sequence

import numpy as np
import pandas as pd

from olakit.errors import DataError, lookup

TIE_RULES = ("first", "random", "none")


def check_tie_rule(tie: str) -> str:
    """Return ``tie`` if it is a known tie rule, else UnknownNameError."""
    return lookup({t: t for t in TIE_RULES}, tie, "tie rule")


def majority(answers: Sequence[str | None], tie: str = "first", rng: np.random.Generator | None = None) -> str | None:
    """Most frequent non-None answer; ties resolved by ``tie``; None when nobody answered."""
    check_tie_rule(tie)
    counts = Counter(a for a in answers if a is not None)
    if not counts:
        return None
    top = max(counts.values())
    tied = [a for a in counts if counts[a] == top]  # Counter keeps first-seen order
    if len(tied) == 1 or tie == "first":
        return tied[0]
    if tie == "none":
        return None
    rng = rng if rng is not None else np.random.default_rng(0)
    return tied[int(rng.integers(len(tied)))]


def _question_rng(seed: int, *key) -> np.random.Generator:
    """A generator fixed by the seed and the question, so a random tie-break is the same on every run."""
    return np.random.default_rng([seed, zlib.crc32("\x1f".join(map(str, key)).encode())])


GROUP = ["dataset", "notes_strategy", "n_notes", "sample", "question_id"]
"""A vote combines the templates' records that share these columns."""


def answer_matrix(df: pd.DataFrame, templates: Sequence[str] | None = None) -> tuple[pd.DataFrame, pd.Series]:
    """Wide view: one row per GROUP key, one column per template (extracted labels), and the gold labels.

    Raises DataError if a template is missing for some question (votes over unequal sets mislead).
    """
    templates = list(templates) if templates is not None else list(dict.fromkeys(df["template"]))
    missing = sorted(set(templates) - set(df["template"]))
    if missing:
        raise DataError(f"templates {missing} have no records; present: {sorted(set(df['template']))}")
    sub = df[df["template"].isin(templates)]
    wide = sub.pivot(index=GROUP, columns="template", values="extracted")[templates]
    gold = sub.groupby(GROUP)["gold"].first()
    counts = sub.groupby(GROUP)["template"].nunique()
    if (counts < len(templates)).any():
        bad = counts[counts < len(templates)].index[0]
        raise DataError(f"question {dict(zip(GROUP, bad))} lacks records for some of the templates {templates}")
    wide = wide.astype(object).where(wide.notna(), None)
    return wide, gold.loc[wide.index]


def regex_vote(df: pd.DataFrame, templates: Sequence[str] | None = None, tie: str = "first",
               seed: int = 0) -> pd.DataFrame:
    """Regex majority vote over ``templates`` for every question and condition.

    Returns one row per GROUP key with columns ``voted``, ``gold``, ``correct``.
    """
    check_tie_rule(tie)
    wide, gold = answer_matrix(df, templates)
    voted = [majority(list(row), tie, _question_rng(seed, *key) if tie == "random" else None)
             for key, row in zip(wide.index, wide.itertuples(index=False, name=None))]
    out = pd.DataFrame({"voted": pd.Series(voted, index=wide.index, dtype=object), "gold": gold.values},
                       index=wide.index)
    out["correct"] = out["voted"].eq(out["gold"]) & out["voted"].notna()
    return out.reset_index()


VOTERS = {"regex": regex_vote}


def get_voter(name: str):
    """The voter registered under ``name``."""
    return lookup(VOTERS, name, "voter")


# ---------------------------------------------------------------- the LLM vote (paper 3.7)

LLM_VOTE_INTRO = ("Several solvers answered the same multiple-choice question. Their reasoning and answers "
                  "follow.")
LLM_VOTE_ASK = ("Choose the most consistent answer among the solvers' answers. Give a short rationale, then end "
                "with JSON format: Answer: one of options[{labels}].")
RATIONALE_CHARS = 700
"""Each candidate's rationale is cut to its last RATIONALE_CHARS characters (the conclusion is at the end)."""


def llm_vote_prompt(question, qtype: str, candidates) -> str:
    """The LLM vote prompt: the question, each candidate's rationale and extracted answer, the ask.

    ``candidates``: ``[(raw_output, extracted_label_or_None), ...]`` in the order shown.
    """
    from olakit.intent import show_question

    blocks = []
    for i, (text, label) in enumerate(candidates, 1):
        text = (text or "").strip()
        if len(text) > RATIONALE_CHARS:
            text = "..." + text[-RATIONALE_CHARS:]
        blocks.append(f"Solver {i} (answer: {label or 'unclear'}):\n{text}")
    return (f"{LLM_VOTE_INTRO}\n\nThe {qtype} question:\n{show_question(question)}\n\n" + "\n\n".join(blocks)
            + "\n\n" + LLM_VOTE_ASK.format(labels=",".join(question.options)))


def candidate_order(n: int, seed: int, key: str, shuffled: bool) -> list[int]:
    """Template order, or a seeded permutation (the position-bias audit)."""
    order = list(range(n))
    if shuffled:
        rng = _question_rng(seed, "llm-vote", key)
        while n > 1 and order == list(range(n)):
            order = [int(i) for i in rng.permutation(n)]
    return order


def llm_vote_audit(records: pd.DataFrame, templates: Sequence[str], tie: str = "first") -> pd.DataFrame:
    """Per note strategy: LLM vote vs regex vote, and the vote in template order vs shuffled order.

    Records must hold templates, ``llm_vote`` and ``llm_vote_shuffled`` rows. Columns: n, llm_correct,
    regex_correct, overrides_correct_majority (regex vote right, LLM vote wrong), rescues (regex wrong, LLM
    right), order_changes (the LLM vote differs when the candidates are shuffled), position_bias_rate.
    """
    votes = regex_vote(records, templates, tie=tie)
    key = ["dataset", "notes_strategy", "n_notes", "question_id"]
    llm = records[records["template"] == "llm_vote"].set_index(key)
    shuf = records[records["template"] == "llm_vote_shuffled"].set_index(key)
    v = votes.set_index(key)
    both = v.join(llm[["extracted", "correct"]].rename(columns={"extracted": "llm", "correct": "llm_correct"}),
                  how="inner")
    both = both.join(shuf[["extracted"]].rename(columns={"extracted": "shuffled"}), how="left")
    rows = []
    for strategy, g in both.groupby(level="notes_strategy", sort=False):
        changed = (g["llm"].fillna("-") != g["shuffled"].fillna("-")) & g["shuffled"].notna()
        rows.append({"notes_strategy": strategy, "n": len(g), "llm_correct": int(g["llm_correct"].sum()),
                     "regex_correct": int(g["correct"].sum()),
                     "overrides_correct_majority": int((g["correct"] & ~g["llm_correct"]).sum()),
                     "rescues": int((~g["correct"] & g["llm_correct"]).sum()),
                     "order_changes": int(changed.sum()),
                     "position_bias_rate": float(changed.mean()) if len(g) else float("nan")})
    return pd.DataFrame(rows)


def llm_vote_records(llm, df: pd.DataFrame, questions: dict, templates: Sequence[str], *, audit: bool = True,
                     seed: int = 0, max_tokens: int = 192, extractor: str = "strict", batch=None) -> list:
    """LLM-vote records for every question and condition of ``df`` that has all ``templates`` (sample 0):
    ``llm_vote`` (candidates in template order) and, with ``audit``, ``llm_vote_shuffled`` (seeded shuffle).

    Works on live and recorded records alike (e.g. the OlaGPT gpt-3.5 outputs voted by another model).
    ``questions``: question_id -> Question. ``batch(requests, desc) -> {cache_key: Result}`` replaces the
    LLM's own batch (the runner counts calls through it).
    """
    from olakit.extract import get_extractor
    from olakit.intent import DEFAULT_TYPE
    from olakit.llm import Request, cache_key
    from olakit.records import prompt_hash
    from olakit.types import Record

    extract = get_extractor(extractor)
    wide, _ = answer_matrix(df[df["sample"] == 0], templates)
    base = df[df["template"].isin(templates) & (df["sample"] == 0)].set_index([*GROUP, "template"])
    cells = []
    for key in wide.index:
        cell = dict(zip(GROUP, key))
        q = questions[cell["question_id"]]
        rows = [base.loc[(*key, t)] for t in templates]
        qtype = next((r["question_type"] for r in rows if r["question_type"]), DEFAULT_TYPE.get(q.dataset, "math"))
        cands = [(r["raw_output"], r["extracted"]) for r in rows]
        for label, shuffled in (("llm_vote", False), ("llm_vote_shuffled", True)):
            if shuffled and not audit:
                continue
            order = candidate_order(len(cands), seed, "|".join(map(str, key)), shuffled)
            prompt = llm_vote_prompt(q, qtype, [cands[i] for i in order])
            cells.append((cell, q, qtype, label, prompt, Request.make(prompt, temperature=0, max_tokens=max_tokens)))
    reqs = [c[-1] for c in cells]
    if batch is None:
        results = dict(zip((cache_key(llm.endpoint.identity, r) for r in reqs), llm.batch(reqs, desc="LLM votes")))
    else:
        results = batch(reqs, "LLM votes")
    out = []
    for cell, q, qtype, label, prompt, req in cells:
        res = results[cache_key(llm.endpoint.identity, req)]
        if not res.ok:
            continue
        got = extract(res.text, list(q.options))
        out.append(Record(dataset=cell["dataset"], question_id=q.id, template=label,
                          notes_strategy=cell["notes_strategy"], n_notes=int(cell["n_notes"]), sample=0,
                          model=llm.endpoint.model, prompt_hash=prompt_hash(prompt), raw_output=res.text or "",
                          extracted=got, gold=q.gold, correct=got == q.gold, prompt_tokens=res.prompt_tokens,
                          completion_tokens=res.completion_tokens, cost=res.cost, latency=res.latency,
                          cached=res.cached, source="live", question_type=qtype))
    return out
