"""Baselines of the paper's Table 3 besides the templates: turbo, SC and Auto-CoT.

- turbo: the ``turbo`` template (no prefix) at temperature 0, run like every template.
- SC (self-consistency): k samples (default 5) of one template (the plain turbo prompt by default) at
  temperature > 0, majority vote.
- Auto-CoT (Zhang et al. 2022): cluster the questions with the embedder (KMeans), take per cluster the question
  nearest its centre (of at most 60 tokens) whose zero-shot-CoT rationale ("Let's think step by step.") yields an
  answer in at most 5 reasoning steps, and show those as demonstrations. ``published_demos()`` reads the AuRoRA
  copies of published Auto-CoT demos (AQuA, StrategyQA) to compare with.

All baselines use the same intention enhancement (the framed question), as the paper does.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from olakit.answering.extract import get_extractor
from olakit.data.loaders import data_file
from olakit.errors import DataError, require_extra
from olakit.generation import Generation
from olakit.llm import Request
from olakit.llm.answerer import Answerer
from olakit.olagpt.intent import answer_format, show_question
from olakit.retrieval.embedder import embed
from olakit.types import Question

COT_TRIGGER = "Let's think step by step."


@dataclass(frozen=True)
class Demo:
    question_id: str
    question: str
    rationale: str
    answer: str | None


def cot_prompt(demos: Sequence[Demo], question_text: str) -> str:
    """Auto-CoT's layout: ``Q: ...\\nA: Let's think step by step. ...`` per demo, then the question."""
    blocks = [f"Q: {d.question}\nA: {COT_TRIGGER} {d.rationale.strip()}" for d in demos]
    blocks.append(f"Q: {question_text}\nA: {COT_TRIGGER}")
    return "\n\n".join(blocks)


def cluster_candidates(pool: Sequence[Question], k: int, seed: int) -> list[list[Question]]:
    """Per KMeans cluster of the pool's question embeddings, the members nearest the centre first."""
    KMeans = require_extra("sklearn.cluster", "live", "Auto-CoT clustering").KMeans

    if len(pool) < k:
        raise DataError(f"Auto-CoT: {len(pool)} pool questions for {k} clusters; give at least k questions")
    vecs = embed([q.text for q in pool])
    km = KMeans(n_clusters=k, n_init=10, random_state=seed).fit(vecs)
    out = []
    for c in range(k):
        members = np.flatnonzero(km.labels_ == c)
        dist = np.linalg.norm(vecs[members] - km.cluster_centers_[c], axis=1)
        out.append([pool[i] for i in members[np.argsort(dist, kind="stable")]])
    return out


def demo_question(q: Question) -> str:
    """A demo's question: the question, its choices and the answer-format sentence (no type call needed)."""
    return f"{show_question(q)}\n{answer_format(list(q.options))}"


MAX_QUESTION_TOKENS = 60
"""Auto-CoT's demo filter: a demonstration's question has at most 60 tokens (whitespace-separated words)."""
MAX_REASONING_STEPS = 5
"""Auto-CoT's demo filter: a demonstration's rationale has at most 5 reasoning steps (non-empty lines)."""


def reasoning_steps(rationale: str) -> int:
    """Reasoning steps of a rationale, counted as its non-empty lines.

    >>> reasoning_steps("First, 2 + 2 = 4.\\n\\nSo the answer is (B).")
    2
    """
    return sum(1 for line in (rationale or "").splitlines() if line.strip())


def auto_cot_demos(
    answerer: Answerer, pool: Sequence[Question], k: int, *, tries: int, seed: int, generation: Generation
) -> list[Demo]:
    """One zero-shot-CoT demo per cluster, with Auto-CoT's filters: among the ``tries`` members nearest the centre
    whose question has at most MAX_QUESTION_TOKENS tokens, the first whose rationale gives an answer in at most
    MAX_REASONING_STEPS steps (wrong answers are kept, as Auto-CoT does without labels). When none passes, the first
    that answers, else the last tried, stands in (so every cluster gives a demo). ``seed``: the clustering's;
    ``generation``: the calls' settings (the auto_cot stage's).
    """
    clusters = cluster_candidates(pool, k, seed)
    short = [[q for q in c if len(q.text.split()) <= MAX_QUESTION_TOKENS] or c for c in clusters]
    tried = [c[:tries] for c in short]
    flat = [q for c in tried for q in c]
    reqs = [Request.make(cot_prompt([], demo_question(q)), **generation.params()) for q in flat]
    answers = answerer.batch(reqs, "Auto-CoT demos")
    results = dict(zip((q.id for q in flat), answers))
    demos = []
    for members in tried:
        found = []
        for q in members:
            text = results[q.id].text if results[q.id].ok else ""
            found.append(Demo(q.id, demo_question(q), text, get_extractor("strict")(text, list(q.options))))
        passing = [d for d in found if d.answer is not None and reasoning_steps(d.rationale) <= MAX_REASONING_STEPS]
        answering = [d for d in found if d.answer is not None]
        demos.append((passing or answering or found[-1:])[0])
    return demos


def published_demos(dataset: str, data_dir=None) -> list[Demo]:
    """The AuRoRA copies of published Auto-CoT demos (``aqua`` or ``strategyqa``)."""
    names = {"aqua": "autocot/aurora_demos/aqua", "strategyqa": "autocot/aurora_demos/strategyqa"}
    if dataset not in names:
        raise DataError(f"no published Auto-CoT demos for {dataset!r}; available: {sorted(names)}")
    path = data_file(data_dir, names[dataset])
    try:
        items = json.loads(path.read_text(encoding="utf-8"))["demo"]
    except (ValueError, KeyError, TypeError) as exc:
        raise DataError(f"{path}: not an Auto-CoT demo file ({exc})") from None
    demos = []
    for i, d in enumerate(items):
        q = d["question"].strip()
        q = q[3:] if q.startswith("Q: ") else q
        q = q[:-2].rstrip() if q.endswith("A:") else q
        rationale = d["rationale"].strip()
        rationale = rationale[len(COT_TRIGGER) :].strip() if rationale.startswith(COT_TRIGGER) else rationale
        demos.append(Demo(f"published-{i}", q, rationale, d.get("pred_ans")))
    return demos
