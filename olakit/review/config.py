"""The settings of a CoT + self-review run (seeds/003), each defined once: the questions, the loop's mode and
behaviour, its stop rule, sampling and token limits. ``olakit review --help``, the review notebook's parameters and
the sweep files' keys are derived from these fields (olakit.config)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from olakit.answering.read import TEXT_STEPS, TextNormalise
from olakit.config import OwnDataset, Slice, Stats
from olakit.generation import AnswerStages, Judging, Reasoning


class ReviewConfig(Slice, OwnDataset, Stats, Reasoning, AnswerStages, Judging):
    """The review loop and a direct answer on a slice of a dataset (or the shipped open questions)."""

    ALIASES = {"n_questions": "-n"}
    OTHER_DATASETS = ("open",)
    dataset: str = "aqua"
    """aqua, ekar_zh, strategyqa or a dataset file (questions with a gold answer), or ``open`` (the shipped open
    questions)."""
    mode: Literal["lite", "standard"] = "lite"
    """``lite`` (one decomposition) or ``standard`` (three similar questions, a common and a detailed outline)."""
    behaviour: Literal["intended", "literal"] = "intended"
    """``intended`` (the current answer is reviewed and revised) or ``literal`` (what the blog's code does: every
    iteration regenerates the answer from the outline)."""
    max_iterations: Annotated[int, Field(ge=1, le=10)] = 3
    """Reviews at most."""
    threshold: Annotated[int, Field(ge=1, le=5)] = 4
    """Overall review score (1-5) from which the loop stops."""
    temperature: Annotated[float, Field(ge=0)] = 0.7
    """The blog's temperature for every call; samples are seeded, and a literal regeneration is a new sample."""
    seed: int = 0
    """Seed of every sampled call."""
    max_tokens: Annotated[int, Field(ge=1)] | None = None
    """Token limit of an outline, an answer or a revision (none: 400 intended; literal: 800, the seed's code's limit
    on every call)."""
    review_tokens: Annotated[int, Field(ge=1)] | None = None
    """Token limit of a review, its score lines last (none: 300 intended, 800 literal)."""
    step_tokens: Annotated[int, Field(ge=1)] | None = None
    """Token limit of one step's answer (none: 200 intended, 800 literal)."""
    direct_tokens: Annotated[int, Field(ge=1)] = 400
    """Token limit of the direct answer the loop is compared with."""
    free_text: Literal["exact", "judge"] = "exact"
    """How a free-text answer is scored against its reference: ``exact`` (the answer it states, normalised: case,
    surrounding whitespace and punctuation, equal to the reference, olakit.answering.read.read_text) or ``judge`` (a
    model, the ``judge`` role, says whether it says the same: named in the tables and the log; never the answerer
    grading itself unless its endpoint is the judge's)."""
    normalise: TextNormalise = TEXT_STEPS
    """``exact``: what is normalised before a free-text answer and its reference are compared: ``case`` folded, runs
    of ``space`` as one, ``punctuation`` and whitespace stripped at both ends (olakit.answering.read); ``[]``: compared
    as written."""

    def tokens(self, name: str) -> int:
        """The token limit ``name`` (``max_tokens``, ``review_tokens``, ``step_tokens``, or ``similar_tokens``, the
        similar questions' call) as set, else the behaviour's: olakit's limits (``intended``) or the seed's 800 on
        every call (``literal``)."""
        own = getattr(self, name, None)
        if own is not None:
            return own
        return SEED_TOKENS if self.behaviour == "literal" else INTENDED_TOKENS[name]


SEED_TOKENS = 800
"""The seed's code's token limit, the same on every call (its get_response_from_model)."""
INTENDED_TOKENS = {"max_tokens": 400, "review_tokens": 300, "step_tokens": 200, "similar_tokens": 200}
"""olakit's token limits (the ``intended`` behaviour) where a run sets none."""
