"""The settings of a CoT + self-review run (seeds/003), each defined once: the questions, the loop's mode and
behaviour, its stop rule, sampling and token limits. ``olakit review --help``, the review notebook's parameters and
the sweep files' keys are derived from these fields (olakit.config)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from olakit.answering.read import TEXT_STEPS, TextNormalise
from olakit.config import OwnDataset, Slice, Stats
from olakit.generation import AnswerStages, Generation, Judging


class ReviewConfig(Slice, OwnDataset, Stats, Generation, AnswerStages, Judging):
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
    free_text: Literal["exact", "judge"] = "exact"
    """How a free-text answer is scored against its reference: ``exact`` (the answer it states, normalised: case,
    surrounding whitespace and punctuation, equal to the reference, olakit.answering.read.read_text) or ``judge`` (a
    model, the ``judge`` role, says whether it says the same: named in the tables and the log; never the answerer
    grading itself unless its endpoint is the judge's)."""
    normalise: TextNormalise = TEXT_STEPS
    """``exact``: what is normalised before a free-text answer and its reference are compared: ``case`` folded, runs
    of ``space`` as one, ``punctuation`` and whitespace stripped at both ends (olakit.answering.read); ``[]``: compared
    as written."""

    STAGE_DEFAULTS = {
        "answer": {"max_tokens": 400, "temperature": 0.7, "seed": 0},
        "review": {"max_tokens": 300, "temperature": 0.7, "seed": 0},
        "step": {"max_tokens": 200, "temperature": 0.7, "seed": 0},
        "similar": {"max_tokens": 200, "temperature": 0.7, "seed": 0},
        "direct": {"max_tokens": 400, "temperature": 0.0},
    }
    """The loop's generation settings (olakit.generation), by stage, as olakit sets them (``intended``): ``answer``
    (an outline, an answer, a revision, a polish) 400 tokens, ``review`` 300 (its score lines last), ``step`` (one
    step's answer) 200, ``similar`` (the standard mode's similar questions) 200, every one at the blog's temperature
    0.7, seeded 0 (a literal regeneration is a new sample); ``direct``, the direct answer the loop is compared with,
    greedy at 400. ``literal``: the seed's code's one limit, 800, on every loop call. A setting given for the run
    (``--max-tokens``, ``--temperature``, ``--seed``, ...) applies to every stage; ``--stages '{"review":
    {"max_tokens": 500}}'`` sets one's."""
    SAMPLED = False

    @classmethod
    def more_help(cls, name: str) -> str:
        own = super().more_help(name)
        return f"{own} With behaviour literal: {SEED_TOKENS} tokens on every loop call." if own else own

    def stage_defaults(self) -> dict[str, dict]:
        """STAGE_DEFAULTS, with the seed's 800 tokens on every loop call in the ``literal`` behaviour."""
        if self.behaviour == "intended":
            return self.STAGE_DEFAULTS
        return {k: v | ({"max_tokens": SEED_TOKENS} if k != "direct" else {}) for k, v in self.STAGE_DEFAULTS.items()}


SEED_TOKENS = 800
"""The seed's code's token limit, the same on every call (its get_response_from_model)."""
