"""Retrievers by name over a Corpus: ``bm25`` (bm25s), ``dense`` (the kit's sentence embedder + FAISS) and
``hybrid`` (reciprocal-rank fusion of the two), over any Corpus (GEEK's facts, the tools index's descriptions). Each
index is built once per corpus and kept on disk under the corpus's sha256 in ``$OLAKIT_INDEX_DIR`` (default
``~/.cache/olakit/indexes``).

``make_retriever("bm25", corpus).search("population of Albany", k=3)`` -> ``[(position, score), ...]``.
"""

from __future__ import annotations

import logging
import os
import shutil

import numpy as np

from olakit.env import index_dir
from olakit.errors import DataError, lookup, require_extra
from olakit.retrieval.corpus import Corpus
from olakit.retrieval.dense import flat_index, search
from olakit.retrieval.embedder import embed

RRF_K = 60
"""Reciprocal-rank fusion constant (Cormack et al. 2009): a paragraph scores sum(1 / (60 + rank))."""


def _check(corpus: Corpus, query: str, k: int) -> None:
    if not query or not query.strip():
        raise DataError("empty retrieval query: a sub-question is needed to retrieve paragraphs")
    if not 1 <= k <= len(corpus):
        raise DataError(f"k = {k}: retrieve between 1 and {len(corpus)} paragraphs (the size of {corpus.name!r})")


def _bm25s():
    bm25s = require_extra("bm25s", "live", "BM25 retrieval")
    logging.getLogger("bm25s").setLevel(logging.WARNING)  # bm25s sets DEBUG on import: a line per index built
    return bm25s


def _tokens(texts):
    bm25s = _bm25s()

    return bm25s.tokenize(list(texts), stopwords="en", return_ids=False, show_progress=False)


NUMBA_FROM = 100_000
"""Paragraphs from which BM25's top-k selection uses numba (compiled once per process) instead of numpy."""
TIE_SLACK = 10
"""Paragraphs fetched beyond k, so that ties at the k-th score are broken by paragraph order."""


class BM25Retriever:
    """BM25 over title and text (bm25s), built once and saved beside the corpus hash."""

    name = "bm25"

    def __init__(self, corpus: Corpus, cache: bool = True):
        bm25s = _bm25s()

        self.corpus = corpus
        folder = index_dir() / corpus.digest() / "bm25"
        if cache and (folder / "params.index.json").is_file():
            self.index = bm25s.BM25.load(str(folder))
        else:
            self.index = bm25s.BM25()
            self.index.index(_tokens(f"{t} {x}" for t, x in zip(corpus.titles, corpus.texts)), show_progress=False)
            if cache:
                tmp = folder.with_name(f".bm25.{os.getpid()}.tmp")
                folder.parent.mkdir(parents=True, exist_ok=True)
                self.index.save(str(tmp))
                if (folder / "params.index.json").is_file():  # another process saved the same index first
                    shutil.rmtree(tmp, ignore_errors=True)
                else:
                    shutil.rmtree(folder, ignore_errors=True)  # a folder without the index's parameters: broken
                    try:
                        os.replace(tmp, folder)
                    except OSError:  # another process saved it in between
                        shutil.rmtree(tmp, ignore_errors=True)

    def search(self, query: str, k: int, exclude: set[int] = frozenset()) -> list[tuple[int, float]]:
        _check(self.corpus, query, k)
        tokens = _tokens([query])
        if not tokens[0]:
            raise DataError(f"retrieval query {query!r} has no searchable words")
        mask = None
        if exclude:
            mask = np.ones(len(self.corpus), dtype=np.float32)
            mask[list(exclude)] = 0
        k = min(k, len(self.corpus) - len(exclude))
        # bm25s's numba backend selects the top k without sorting every score: 1 ms instead of 30 at 1M paragraphs;
        # its compilation costs ~2.5 s in every process, so a small corpus (numpy: under 1 ms a query) goes without.
        # The backends order equal scores differently: TIE_SLACK more are fetched and equal scores go by paragraph
        # order, so the result does not depend on the backend
        backend = "numba" if len(self.corpus) >= NUMBA_FROM else "numpy"
        fetch = min(k + TIE_SLACK, len(self.corpus))
        docs, scores = self.index.retrieve(
            tokens, k=fetch, show_progress=False, weight_mask=mask, n_threads=1, backend_selection=backend
        )
        ranked = sorted(((-float(sc), int(d)) for d, sc in zip(docs[0], scores[0]) if int(d) not in exclude))
        return [(d, -sc) for sc, d in ranked[:k]]


class DenseRetriever:
    """Cosine similarity of all-MiniLM-L6-v2 embeddings (FAISS); the embeddings are saved beside the corpus hash."""

    name = "dense"

    def __init__(self, corpus: Corpus, cache: bool = True):
        self.corpus = corpus
        path = index_dir() / corpus.digest() / "dense-all-minilm-l6-v2.npy"
        if cache and path.is_file():
            vecs = np.load(path)
        else:
            vecs = embed([f"{t}: {x}" if t else x for t, x in zip(corpus.titles, corpus.texts)])
            if cache:
                path.parent.mkdir(parents=True, exist_ok=True)
                tmp = path.with_name(f".{path.stem}.{os.getpid()}.tmp.npy")
                np.save(tmp, vecs)
                os.replace(tmp, path)
        self.index = flat_index(vecs)

    def search(self, query: str, k: int, exclude: set[int] = frozenset()) -> list[tuple[int, float]]:
        _check(self.corpus, query, k)
        hits = search(self.index, embed([query])[0], min(len(self.corpus), k + len(exclude)))
        return [(i, s) for i, s in hits if i not in exclude][:k]


class HybridRetriever:
    """Reciprocal-rank fusion of BM25 and dense: each ranks its top candidates; a paragraph's score is the sum of
    1 / (RRF_K + rank) over the lists it appears in."""

    name = "hybrid"

    def __init__(self, corpus: Corpus, cache: bool = True, depth: int = 50):
        self.corpus = corpus
        self.parts = (BM25Retriever(corpus, cache), DenseRetriever(corpus, cache))
        self.depth = depth

    def search(self, query: str, k: int, exclude: set[int] = frozenset()) -> list[tuple[int, float]]:
        _check(self.corpus, query, k)
        depth = min(len(self.corpus) - len(exclude), max(self.depth, k))
        fused: dict[int, float] = {}
        for part in self.parts:
            for rank, (i, _) in enumerate(part.search(query, depth, exclude), 1):
                fused[i] = fused.get(i, 0.0) + 1.0 / (RRF_K + rank)
        return sorted(fused.items(), key=lambda kv: (-kv[1], kv[0]))[:k]


RETRIEVERS = {"bm25": BM25Retriever, "dense": DenseRetriever, "hybrid": HybridRetriever}


def make_retriever(name: str, corpus: Corpus, cache: bool = True):
    """The retriever registered under ``name`` over ``corpus``; UnknownNameError lists the known ones."""
    return lookup(RETRIEVERS, name, "retriever")(corpus, cache)
