"""Interaction latency of the explorers on the OlaGPT recorded records (254 questions x 20 cells).

Goal: every interaction answered within 200 ms. Prints the time of each interaction (median of 5 rounds,
first-time and cached) and the worst.
Usage: python benchmarks/bench_widgets.py
"""

import statistics
import tempfile
import time
from pathlib import Path

from goal import check

from olakit.notebook.explorers.questions import open_explorers

with tempfile.TemporaryDirectory() as tmp:
    t0 = time.perf_counter()
    qe, he = open_explorers(Path(tmp) / "records.parquet", Path(tmp) / "notes.jsonl")
    print(f"build both explorers (import, save, load, precompute): {time.perf_counter() - t0:.2f} s")
    strategies = list(qe.strategy.options)
    actions = {
        "question: strategy": lambda i: setattr(qe.strategy, "value", strategies[i % 4]),
        "question: filter": lambda i: setattr(
            qe.filter, "value", ["all", "split", "vote_wrong_some_right", "unparsed"][i % 4]
        ),
        "question: pick": lambda i: setattr(qe.question, "value", qe.question.options[i % len(qe.question.options)]),
        "question: correct": lambda i: qe.correct("ST", "A", f"bench {i}"),
        "heatmap: strategy": lambda i: setattr(he.strategy, "value", strategies[i % 4]),
        "heatmap: metric": lambda i: setattr(he.metric, "value", ["fig12", "agreement", "kappa"][i % 3]),
        "heatmap: subset": lambda i: setattr(he.subset, "value", tuple(he.all_templates[: 2 + i % 4])),
        "heatmap: cell": lambda i: setattr(he.cell, "value", he.cell.options[i % len(he.cell.options)][1]),
    }
    worst, medians = 0.0, {}
    for name, act in actions.items():
        times = []
        for i in range(1, 6):
            t = time.perf_counter()
            act(i)
            times.append((time.perf_counter() - t) * 1000)
        worst = max(worst, max(times))
        medians[name] = round(statistics.median(times), 1)
        print(f"{name:22s} median {statistics.median(times):7.1f} ms  max {max(times):7.1f} ms")
check("widgets", worst, 200, higher_is_better=False, unit="ms (worst interaction)", median_ms=medians)
