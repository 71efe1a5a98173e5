"""GEEK's measure of its retrievers (olakit.retrieval.retrievers): recall@k of the questions' own facts."""

from __future__ import annotations

import numpy as np


def recall_at_k(retriever, questions, k: int) -> float:
    """Mean over questions of the share of each question's own facts among the top k paragraphs retrieved for
    the question text (oracle setting: nothing excluded). Questions without facts in the corpus are left out."""
    corpus = retriever.corpus
    owned: dict[str, set[int]] = {}
    for i, owner in enumerate(corpus.owner):
        if owner:
            owned.setdefault(owner, set()).add(i)
    recalls = []
    for q in questions:
        gold = owned.get(q.id)
        if gold:
            top = {i for i, _ in retriever.search(q.text, k)}
            recalls.append(len(top & gold) / len(gold))
    return float(np.mean(recalls)) if recalls else float("nan")
