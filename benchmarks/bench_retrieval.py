"""Retrieval for GEEK: index build time and memory, and ms per query, for BM25 (bm25s) and dense (all-MiniLM-L6-v2
+ FAISS), on the StrategyQA facts corpus (6,120 paragraphs) and on a generated 1,000,000-paragraph corpus.

Goals (this 2-core machine): BM25 at 1M paragraphs builds in <= 180 s and answers a query in <= 10 ms.
Dense at 1M: embedding a million paragraphs with the CPU embedder takes hours here, so the 1M dense figures are the
FAISS search over 1M unit vectors (random, the embedder's width) and the build time extrapolated from the facts
corpus's measured embedding rate; both are labelled so in the JSON.
Usage: python benchmarks/bench_retrieval.py [N_PARAGRAPHS]
"""

import os
import resource
import sys
import tempfile
import time

import numpy as np
from goal import check

from olakit.retrieval.corpus import Corpus
from olakit.retrieval.dense import flat_index, search
from olakit.retrieval.embedder import DIM
from olakit.retrieval.knowledge import load_corpus
from olakit.retrieval.retrievers import BM25Retriever, DenseRetriever

N = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
QUERIES = [
    "What is the population of Albany, Georgia?",
    "Did Genghis Khan have many children?",
    "Can musicians perform lawful arrests?",
    "How tall is the Eiffel Tower?",
    "Is a lemon sour?",
] * 10


def rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def per_query_ms(search_fn) -> float:
    search_fn(QUERIES[0])
    t = time.perf_counter()
    for q in QUERIES:
        search_fn(q)
    return (time.perf_counter() - t) / len(QUERIES) * 1000


def generated(n: int, seed: int = 0) -> Corpus:
    """n paragraphs of 12-30 words drawn Zipf-like from a 50,000-word vocabulary (plus the query words)."""
    rng = np.random.default_rng(seed)
    vocab = np.array(
        [f"w{i}" for i in range(50_000)]
        + "population albany georgia genghis khan children musicians "
        "lawful arrests eiffel tower lemon sour tall".split()
    )
    p = 1 / np.arange(1, len(vocab) + 1) ** 1.05
    words = rng.choice(len(vocab), size=(n, 30), p=p / p.sum())
    lengths = rng.integers(12, 31, size=n)
    texts = [" ".join(vocab[row[:k]]) for row, k in zip(words, lengths)]
    return Corpus(f"generated-{n}", [str(i) for i in range(n)], [""] * n, texts)


def main() -> None:
    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["OLAKIT_INDEX_DIR"] = tmp
        facts = load_corpus("strategyqa-facts:oracle")
        t = time.perf_counter()
        bm = BM25Retriever(facts, cache=False)
        out["facts_bm25_build_s"] = round(time.perf_counter() - t, 3)
        out["facts_bm25_query_ms"] = round(per_query_ms(lambda q: bm.search(q, 10)), 3)
        t = time.perf_counter()
        dense = DenseRetriever(facts, cache=False)
        embed_s = time.perf_counter() - t
        out["facts_dense_build_s"] = round(embed_s, 2)
        out["facts_dense_query_ms"] = round(per_query_ms(lambda q: dense.search(q, 10)), 3)
        rate = len(facts) / embed_s
        print(
            f"facts ({len(facts)}): BM25 build {out['facts_bm25_build_s']} s, query {out['facts_bm25_query_ms']} ms; "
            f"dense build {out['facts_dense_build_s']} s ({rate:.0f} paragraphs/s), "
            f"query {out['facts_dense_query_ms']} ms"
        )

        t = time.perf_counter()
        big = generated(N)
        out["generate_s"] = round(time.perf_counter() - t, 1)
        before = rss_mb()
        t = time.perf_counter()
        bm_big = BM25Retriever(big, cache=False)
        build = time.perf_counter() - t
        out.update(
            bm25_build_s=round(build, 1),
            bm25_peak_rss_mb=round(rss_mb(), 0),
            bm25_rss_growth_mb=round(rss_mb() - before, 0),
        )
        query = per_query_ms(lambda q: bm_big.search(q, 10))
        out["bm25_query_ms"] = round(query, 3)
        print(
            f"{N:,} paragraphs: BM25 build {build:.1f} s (peak RSS {out['bm25_peak_rss_mb']:.0f} MB), "
            f"query {query:.2f} ms"
        )
        bm_big = None  # free the index before the dense part
        vecs = np.random.default_rng(1).standard_normal((N, DIM)).astype(np.float32)
        vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
        t = time.perf_counter()
        index = flat_index(vecs)
        out["dense_faiss_add_s"] = round(time.perf_counter() - t, 2)
        qv = vecs[:50]
        t = time.perf_counter()
        for v in qv:
            search(index, v, 10)
        out["dense_query_ms_search_only"] = round((time.perf_counter() - t) / len(qv) * 1000, 2)
        out["dense_build_s_extrapolated"] = round(N / rate, 0)
        out["dense_note"] = (
            "1M dense: FAISS search over random unit vectors (search only, no query embedding); "
            "build time extrapolated from the facts corpus's embedding rate"
        )
        print(
            f"{N:,} dense: FAISS add {out['dense_faiss_add_s']} s, search {out['dense_query_ms_search_only']} ms per "
            f"query; embedding would take ~{out['dense_build_s_extrapolated']:.0f} s at {rate:.0f} paragraphs/s"
        )

    check("retrieval_bm25_query", out["bm25_query_ms"], 10, higher_is_better=False, unit="ms per query at 1M", **out)
    check(
        "retrieval_bm25_build", out["bm25_build_s"], 180, higher_is_better=False, unit="s to build at 1M", paragraphs=N
    )


if __name__ == "__main__":
    main()
