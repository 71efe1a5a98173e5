"""The settings of a GEEK run (seeds/002), each defined once: the slice of StrategyQA, the Table-2 rows, the corpus
and retriever, and the loop's budget and sampling. ``olakit geek --help``, the GEEK notebook's parameters and the
sweep files' keys are derived from these fields (olakit.config)."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, field_validator, model_validator

from olakit.config import OwnDataset, Slice
from olakit.geek.actions import ROWS
from olakit.generation import AnswerStages, Generation, Judging
from olakit.settings import Analysis

TOKENS = {"select": 4, "decomp": 48, "pre_answer": 160, "retrieve": 48, "self": 48, "final": 96, "direct": 128}
"""GEEK's token limit of each kind of call (its stages), as olakit has always set them."""
BRANCH = "branch"
"""The stage of row Full's sampled Add Decomp candidates: their temperature and seed, over their kind's settings
(decomp or pre_answer: its token limit, unless ``stages`` gives the branch one)."""


class GeekConfig(Slice, OwnDataset, Analysis, Generation, AnswerStages, Judging):
    """A GEEK run: every row of ``rows`` on a slice of StrategyQA (or of a yes/no dataset file). Row Full's vote over
    its branches follows the analysis settings' vote rule as every vote does: ``tie`` (``first``: the first branch in
    branch order, 0.0 before 0.1; ``random``: seeded by ``analysis_seed`` per question; ``none``: no answer, counted
    wrong); ties are counted in the trace and in the ``ties`` column of the steps table."""

    ALIASES = {"n_questions": "-n"}
    dataset: str = "strategyqa"
    """``strategyqa`` or a dataset file of yes/no questions (its facts, mapped to ``meta`` ``facts``, can be the
    corpus: ``dataset-facts:open``)."""
    split: str | None = None
    """The StrategyQA split: ``dev`` (229 questions with facts; the default) or ``train``; a file is its own."""

    @model_validator(mode="before")
    @classmethod
    def _usual_split(cls, data):
        """StrategyQA's split is ``dev`` unless named (so a run's log says which split it read)."""
        if isinstance(data, dict) and data.get("split") is None and data.get("dataset", "strategyqa") == "strategyqa":
            return {**data, "split": "dev"}
        return data

    rows: Annotated[tuple[str, ...], Field(min_length=1)] = tuple(ROWS)
    """Table-2 rows: zero-shot, CoT, +De (Add Decomp, Self Answer, Final Answer), +RE (+ Retrieve & Extract), Full
    (+ strategy exploration)."""
    corpus: str = "strategyqa-facts:open"
    """``strategyqa-facts:open`` (a question's own facts never retrieved), ``strategyqa-facts:oracle`` (an upper
    bound), ``dataset-facts:open|oracle`` (the dataset file's own ``facts``) or a JSON Lines path of paragraphs."""
    retriever: str = "bm25"
    """Retriever: ``bm25``, ``dense`` (Sentence-BERT and FAISS) or ``hybrid``."""
    k: Annotated[int, Field(ge=1)] = 3
    """Paragraphs retrieved per Retrieve & Extract."""
    max_steps: Annotated[int, Field(ge=1)] = 8
    """Actions executed at most; then a Final Answer is forced."""
    max_sub_questions: Annotated[int, Field(ge=1)] = 4
    """Sub-questions at most; then Add Decomp is no longer offered."""
    branches: Annotated[int, Field(ge=1)] = 3
    """Row Full: candidate sub-questions sampled at each explored Add Decomp (each opens a branch)."""
    depth: Annotated[int, Field(ge=1)] = 1
    """Row Full: how many Add Decomps branch (the tree's depth)."""
    pre_answer: bool = False
    """Add Decomp writes every remaining sub-question with a guessed answer; the guess goes to the extractor as a
    hint."""
    recall_ks: tuple[Annotated[int, Field(ge=1)], ...] = (1, 3, 5, 10)
    """The k of recall@k reported for the retriever in the oracle setting."""

    @field_validator("rows")
    @classmethod
    def _known_rows(cls, rows):
        unknown = [r for r in rows if r not in ROWS]
        if unknown:
            raise ValueError(f"unknown rows {unknown}; known: {', '.join(ROWS)}")
        return rows

    STAGE_DEFAULTS = {kind: {"max_tokens": n, "temperature": 0.0} for kind, n in TOKENS.items()} | {
        BRANCH: {"temperature": 0.7, "seed": 0}
    }
    """GEEK's generation settings (olakit.generation), by stage: each kind of call (select, decomp, pre_answer,
    retrieve, self, final, direct) greedy at its own token limit (TOKENS); row Full's branch candidates sampled at
    temperature 0.7, seed 0 (a tie between branches is broken by ``analysis_seed``). A setting given for the run
    (``--max-tokens 64``) applies to every stage; ``stages`` sets one's (``--stages '{"final": {"max_tokens":
    128}}'``); an unknown stage is an error."""
    SAMPLED = False
