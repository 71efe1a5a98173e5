"""The stop rules of the review loop, as the blog's code (seeds/003, V1.4) has them, with a threshold (default 4)
and at most ``max_iterations`` (default 3) reviews:

- first review 5: polish the answer once and stop;
- first review 4: one more round (revise, review again), unless only one iteration is allowed;
- a later review equal to 4 after a first 4: stop ("two 4s in a row");
- a later review at or above the threshold: stop;
- anything lower: revise from the review and go on; when the iterations run out, the last revision is final.

An unparseable review (no score read) is recorded and, by default (olakit's rule, the ``intended`` behaviour),
counted as below the threshold: the answer is revised from the review text and the loop goes on. The blog's code
(the ``literal`` behaviour, ``revise_unparseable=False``) neither revises nor stops: the next iteration goes on
from the outline.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Decision:
    stop: bool
    polish: bool = False
    revise: bool = False
    reason: str = ""


def decide(
    iteration: int,
    score: int | None,
    first_score: int | None,
    max_iterations: int,
    threshold: int,
    *,
    revise_unparseable: bool,
) -> Decision:
    """What the loop does after the review of ``iteration`` (1-based).

    >>> decide(1, 5, None, 3, 4, revise_unparseable=True)
    Decision(stop=True, polish=True, revise=False, reason='first review 5: polish once and stop')
    >>> decide(2, 4, 4, 3, 4, revise_unparseable=True).reason
    'two 4s in a row: stop'
    >>> decide(3, 2, 3, 3, 4, revise_unparseable=True).revise
    True
    """
    if score is None and not revise_unparseable:
        return Decision(stop=iteration >= max_iterations, reason="unparseable review: no revision (the seed's code)")
    if score is None:
        return Decision(
            stop=iteration >= max_iterations, revise=True, reason="unparseable review: revised as below the threshold"
        )
    if iteration == 1:
        if score == 5:
            return Decision(stop=True, polish=True, reason="first review 5: polish once and stop")
        if score == 4:
            if max_iterations > 1:
                return Decision(stop=False, revise=True, reason="first review 4: one more round")
            return Decision(stop=True, reason="first review 4 and no iteration left: stop")
    else:
        if score == 4 and first_score == 4:
            return Decision(stop=True, reason="two 4s in a row: stop")
        if score >= threshold:
            return Decision(stop=True, reason=f"review {score} >= threshold {threshold}: stop")
    return Decision(
        stop=iteration >= max_iterations,
        revise=True,
        reason=f"review {score} below threshold {threshold}: revise"
        + ("; iterations used up, the revision is final" if iteration >= max_iterations else ""),
    )
