"""Exact inner-product search over unit vectors with FAISS (cosine similarity, most similar first)."""

from __future__ import annotations

import numpy as np

from olakit.errors import require_extra


def flat_index(vectors: np.ndarray):
    """A FAISS IndexFlatIP over the rows of ``vectors``."""
    faiss = require_extra("faiss", "live", "dense retrieval")

    index = faiss.IndexFlatIP(vectors.shape[1])
    index.add(np.ascontiguousarray(vectors, dtype=np.float32))
    return index


def search(index, query: np.ndarray, k: int) -> list[tuple[int, float]]:
    """(row, similarity) of the ``k`` nearest rows to one query vector, most similar first."""
    sims, idx = index.search(np.ascontiguousarray(query.reshape(1, -1), dtype=np.float32), k)
    return [(int(i), float(s)) for s, i in zip(sims[0], idx[0]) if i >= 0]
