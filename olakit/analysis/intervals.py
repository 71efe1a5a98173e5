"""Confidence intervals: the percentile bootstrap over questions, and the accuracy row every table is made of.

``bootstrap_ci([1, 1, 1]) -> (1.0, 1.0)``
"""

from __future__ import annotations

import numpy as np


def bootstrap_ci(correct, n_boot: int = 2000, seed: int = 0, level: float = 0.95) -> tuple[float, float]:
    """Percentile bootstrap CI of a mean of 0/1 outcomes, resampling questions with replacement.

    >>> bootstrap_ci([1, 1, 1])
    (1.0, 1.0)
    """
    x = np.asarray(correct, dtype=float)
    if x.size == 0:
        return (float("nan"), float("nan"))
    rng = np.random.default_rng(seed)
    means = x[rng.integers(0, x.size, size=(n_boot, x.size))].mean(axis=1)
    alpha = (1 - level) / 2
    return float(np.quantile(means, alpha)), float(np.quantile(means, 1 - alpha))


def accuracy_row(method: str, strategy: str, correct, seed: int = 0, n_boot: int = 2000) -> dict:
    """One table row: method, notes_strategy, n, correct, accuracy and the bootstrap CI of 0/1 outcomes.

    >>> accuracy_row("ST", "zero-shot", [1, 0, 1, 1])["accuracy"]
    0.75
    """
    x = np.asarray(correct, dtype=bool)
    lo, hi = bootstrap_ci(x, n_boot=n_boot, seed=seed)
    return {
        "method": method,
        "notes_strategy": strategy,
        "n": len(x),
        "correct": int(x.sum()),
        "accuracy": float(x.mean()) if len(x) else float("nan"),
        "ci_low": lo,
        "ci_high": hi,
    }
