"""The majority of several answers with an explicit tie rule: the one vote every method shares (OlaGPT's regex vote
and SC, GEEK's branches). ``None`` answers abstain.

- ``"first"``: the tied label given first (in the order of the answers).
- ``"random"``: a random choice among the tied labels by the generator given (keyed per question: olakit.rng).
- ``"none"``: no answer, which counts as wrong; the strictest reading of "majority".

>>> majority(["A", "B", "A"])
'A'
>>> majority(["B", "A", None])
'B'
>>> majority(["B", "A"], tie="none") is None
True
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING

from olakit.errors import lookup

if TYPE_CHECKING:  # numpy is not imported for a type: the CLI's parser needs TIE_RULES, and stays light
    import numpy as np

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
    if rng is None:  # one fixed generator for every question picks the same position every time
        raise ValueError("tie='random' needs a generator keyed per question (olakit.rng.keyed_rng)")
    return tied[int(rng.integers(len(tied)))]
