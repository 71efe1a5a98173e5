"""The OlaGPT settings, each defined once: the vote rule every analysis takes (VoteRule) and the live run's config
(OlaGPTConfig, which includes it). ``olakit run --help``, the notebooks' parameters and the sweep files' keys are
derived from these fields (olakit.config).

Where olakit departs from what the OlaGPT authors ran (read from their code at chachalin/OlaGPT@3be449a), the choice
is a setting whose default is the authors' behaviour; ``preset="olakit"`` picks olakit's choices together:

| setting | default (the authors', preset ``paper``) | preset ``olakit`` |
|---|---|---|
| vote_order | DT, DST, PT, ST, turbo (the order of the recorded candidate outputs) | DST, DT, PT, ST, turbo |
| unparsed | raw: an unparsed answer votes as its raw text | abstain: it is left out of the vote |
| notes_layout | the authors' note block (type, question, template prefix, explanation, answer) | answer first |
| template_position | ST's trigger after the answer-format sentence, the others before | after: every one after it |
| fill_up | off: retrieval/combine give fewer than n notes when the nearest type has fewer | on: next types fill up |
| llm_vote_prompt | the authors' wording, full candidate outputs, answer format at the end | labels and cut rationales |

>>> VoteRule().order(["turbo", "DST", "ST", "DT", "PT"])
['DT', 'DST', 'PT', 'ST', 'turbo']
>>> VoteRule(preset="olakit").unparsed
'abstain'
>>> VoteRule(preset="paper", unparsed="abstain")  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
olakit.config.ConfigError: VoteRule: preset 'paper' sets unparsed='raw' but unparsed='abstain' was asked for too; ...
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Literal

from pydantic import Field, model_validator

from olakit.config import Config, ConfigError, OwnDataset, Slice, Stats, is_dataset_file
from olakit.data.recorded import RECORDED_READER
from olakit.majority import TIE_RULES
from olakit.names import AUTO_COT, LLM_VOTE, REGEX_VOTE, SC, STRATEGIES, TURBO

PRESET_VALUES = {
    "olakit": {
        "vote_order": "olakit",
        "unparsed": "abstain",
        "notes_layout": "olakit",
        "template_position": "after",
        "fill_up": True,
        "llm_vote_prompt": "olakit",
    }
}
"""The settings a preset other than ``paper`` changes (``paper`` is every field's own default)."""
PRESETS = ("paper", *PRESET_VALUES)
VOTE_ORDERS = {"paper": ("DT", "DST", "PT", "ST", TURBO), "olakit": ("DST", "DT", "PT", "ST", TURBO)}
"""Template order of the regex vote's ``first`` tie rule; templates not listed follow in their own order."""
Strategy = Literal[STRATEGIES]  # type: ignore[valid-type]


class VoteRule(Config):
    """How the templates' answers are combined: the template order (which the ``first`` tie rule follows), the tie
    rule and what an unparsed answer does. The default is what the OlaGPT authors' code does."""

    preset: Literal[PRESETS] | None = None  # type: ignore[valid-type]
    """A named set of settings: ``paper`` (the authors' behaviour: every default) or ``olakit`` (olakit's choices;
    see olakit.olagpt.config). Naming a preset with a setting it contradicts is an error."""
    vote_order: Literal[tuple(VOTE_ORDERS)] = "paper"  # type: ignore[valid-type]
    """Template order of the vote: ``paper`` (DT, DST, PT, ST, turbo: the authors' recorded candidate order) or
    ``olakit`` (DST, DT, PT, ST, turbo); templates not listed follow in their own order."""
    tie: Literal[TIE_RULES] = "first"  # type: ignore[valid-type]
    """Tie rule of a vote: ``first`` (the tied label given first in vote order: the authors' ``max(votes,
    key=votes.get)``), ``random`` (seeded per question) or ``none`` (no answer, counted wrong)."""
    unparsed: Literal["raw", "abstain"] = "raw"
    """What an unparsed answer does in a vote: ``raw`` (the authors: its raw text votes as a label of its own, never
    right) or ``abstain`` (it is left out)."""

    @model_validator(mode="before")
    @classmethod
    def _apply_preset(cls, data):
        if not isinstance(data, dict) or data.get("preset") not in PRESETS:
            return data  # no preset (or an unknown one, which the field refuses)
        name = data["preset"]
        changed = {k for values in PRESET_VALUES.values() for k in values if k in cls.model_fields}
        values = PRESET_VALUES.get(name) or {k: cls.model_fields[k].default for k in changed}
        values = {k: v for k, v in values.items() if k in cls.model_fields}
        for key, value in values.items():
            if key in data and data[key] != value:
                raise ValueError(
                    f"preset {name!r} sets {key}={value!r} but {key}={data[key]!r} was asked for too; drop the "
                    "preset or the setting"
                )
        return {**values, **data}

    def order(self, templates: Sequence[str]) -> list[str]:
        """``templates`` in this rule's vote order (known templates first, in that order, then the rest)."""
        ranked = VOTE_ORDERS[self.vote_order]
        templates = list(dict.fromkeys(templates))
        return [t for t in ranked if t in templates] + [t for t in templates if t not in ranked]

    def rule(self) -> VoteRule:
        """Just the vote rule of a larger config (what the analysis functions take)."""
        return VoteRule(**{k: getattr(self, k) for k in VoteRule.model_fields})


PAPER = VoteRule()
"""The authors' vote rule: the default of every analysis function."""


class Analysis(VoteRule, Stats):
    """How tables are computed from records: the vote rule and the statistics (olakit.config.Stats), passed whole to
    every analysis function and recorded in every run log. ``VoteRule`` settings and ``analysis_seed``, ``n_boot``,
    ``level``, by the same names at every door."""

    def analysis(self) -> Analysis:
        """Just the analysis settings of a larger config (an OlaGPTConfig is one)."""
        return Analysis(**{k: getattr(self, k) for k in Analysis.model_fields})


ANALYSIS = Analysis()
"""The default: the authors' vote rule, seed 0, 2000 resamples, 95% intervals."""


class OlaGPTConfig(Slice, OwnDataset, Analysis):
    """An OlaGPT run: questions x templates x note strategies x note counts (x SC samples), baselines and votes."""

    ALIASES = {"n_questions": "-n"}
    dataset: str = "aqua"
    """The dataset: ``aqua`` (AQuA-RAT), ``ekar_zh`` (E-KAR, Chinese), ``strategyqa``, or a dataset file (.jsonl,
    .json, .csv, .parquet: multiple choice, yes/no or numeric answers; olakit.data.datasets)."""
    templates: tuple[str, ...] | None = None
    """Thinking templates (none: every template that suits the dataset: turbo, DT, DST, PT, ST, and AT for E-KAR)."""
    strategies: Annotated[tuple[Strategy, ...], Field(min_length=1)] = STRATEGIES
    """Note strategies, in the paper's names: zero-shot, random, retrieval, combine."""
    n_notes: Annotated[tuple[Annotated[int, Field(ge=0)], ...], Field(min_length=1)] = (3,)
    """How many notes a prompt carries (several: one cell each; zero-shot always has 0)."""
    library: str | None = "olagpt"
    """The notes library: ``olagpt`` (the authors' 81 AQuA notes), ``olagpt-ekar`` (their 2 E-KAR notes) or a JSON
    Lines file of notes."""
    baselines: tuple[Literal[SC, AUTO_COT], ...] = ()  # type: ignore[valid-type]
    """Baselines beside the templates: ``SC`` (self-consistency) and ``auto_cot``; the turbo baseline is the turbo
    template itself."""
    votes: tuple[Literal[REGEX_VOTE, LLM_VOTE], ...] = (REGEX_VOTE,)  # type: ignore[valid-type]
    """Votes over the templates: ``regex_vote`` (no calls) and ``llm_vote`` (the model chooses; paper 3.7)."""
    sc_k: Annotated[int, Field(ge=1)] = 5
    """Self-consistency samples (5: the number of templates the vote combines)."""
    sc_template: str = TURBO
    """The template SC samples: the plain prompt (the paper's SC zero-shot, 0.3189, sits by turbo's 0.3228)."""
    sc_temperature: Annotated[float, Field(ge=0)] = 0.7
    """Sampling temperature of SC's samples."""
    autocot_k: Annotated[int, Field(ge=1)] = 4
    """Auto-CoT's demonstrations (clusters)."""
    autocot_demos: Literal["generated", "published"] = "generated"
    """Auto-CoT's demos: ``generated`` (its clustering on the split) or ``published`` (AuRoRA's demo files)."""
    max_tokens: Annotated[int, Field(ge=1)] = 256
    """Token limit of an answer."""
    vote_max_tokens: Annotated[int, Field(ge=1)] = 192
    """Token limit of an LLM vote."""
    audit: bool = True
    """With the LLM vote: vote again with the candidates shuffled (position bias)."""
    seed: int = 0
    """Seed of random notes, sampling and shuffles: the same seed gives the same prompts."""
    extractor: Literal["olagpt", "strict"] | None = None
    """Answer reader: ``strict`` (the last explicit answer statement) or ``olagpt`` (the authors' regex); none: the
    source's own (strict for live outputs, olagpt for the authors' recorded ones)."""
    verify: bool = False
    """Verification thinking: review each template's answer and revise it below ``verify_threshold``."""
    verify_threshold: Annotated[int, Field(ge=1, le=5)] = 4
    """Review score (1-5) below which verification thinking revises an answer."""
    verify_tokens: Annotated[int, Field(ge=1)] = 300
    """Token limit of a verification review and of a revision (a review cut short loses its score lines)."""
    diy: bool = False
    """Integrative (DIY) thinking: the model composes a template per question."""
    choose_k: Annotated[int, Field(ge=1)] | None = None
    """Template choice: the controller picks this many templates per question and only those run (none: off)."""
    choice_comparison: bool = False
    """With choose_k: run every template as well (the full grid, paid in full), so the chosen vote can be compared
    with the vote over all templates."""
    answer_stages: Literal[1, 2] = 1
    """1: the extractor reads each output (the paper); 2: an output cut off or without an answer gets a second call
    with Zero-shot-CoT's answer trigger."""
    second_stage_tokens: Annotated[int, Field(ge=1)] = 16
    """Token limit of the second answer stage."""
    notes_layout: Literal["paper", "olakit"] = "paper"
    """How notes are shown: ``paper`` (the authors' block: type, question, the template's note prefix,
    explanation, answer) or ``olakit`` (the same text for every template, answer first)."""
    template_position: Literal["paper", "before", "after"] = "paper"
    """Where a template's text goes: ``paper`` (ST's trigger after the answer-format sentence, the others before
    the question), ``before`` or ``after`` (every one after it: the prompts of a cell share all but their end)."""
    fill_up: bool = False
    """Retrieval and combine: fill up to n notes from the next types (the authors give fewer)."""
    llm_vote_prompt: Literal["paper", "olakit"] = "paper"
    """The LLM vote's prompt: ``paper`` (the authors' wording, full candidate outputs) or ``olakit`` (labels and
    cut rationales)."""
    replicate: Annotated[int, Field(ge=0)] = 0
    """A replicate: this many questions of the slice, from its first, answered once more past the cache (every call
    again, the same settings), so the run log reports each cell's run-to-run disagreement, the noise floor a
    difference between cells must clear (replicate.parquet holds its records; 0: none)."""

    def reader(self, recorded: bool = False) -> str:
        """The extractor's name: the one set, else the source's own.

        >>> OlaGPTConfig().reader(), OlaGPTConfig().reader(recorded=True)
        ('strict', 'olagpt')
        """
        return self.extractor or (RECORDED_READER if recorded else "strict")

    @model_validator(mode="after")
    def _choice_needs(self):
        if self.choice_comparison and self.choose_k is None:
            raise ValueError("choice_comparison=True compares template choice: set choose_k too")
        if self.choose_k is not None and not self.choice_comparison and LLM_VOTE in self.votes:
            raise ValueError(
                f"choose_k={self.choose_k} runs only the chosen templates, but llm_vote votes over every template's "
                "answer: set choice_comparison=True (the full grid) or drop llm_vote"
            )
        return self

    def check_templates(self, names: Sequence[str]) -> None:
        """What depends on the templates found: choose_k must be below their number."""
        if self.choose_k is not None and self.choose_k >= len(names):
            raise ConfigError(
                f"OlaGPTConfig: choose_k={self.choose_k}: choose fewer than the {len(names)} templates "
                f"({', '.join(names)}), or leave it unset to run them all"
            )


class NotesConfig(OwnDataset):
    """``olakit notes build``: a notes library by active learning (paper 3.4): a pool of a split, answered ``r``
    times; the questions wrong every time get notes."""

    dataset: str = "ekar_zh"
    """The dataset whose questions form the pool: a built-in one's name or a dataset file."""
    split: str | None = None
    """Its split (``train`` for a built-in dataset unless named; a file is its own split)."""

    @model_validator(mode="before")
    @classmethod
    def _train_split(cls, data):
        """A built-in dataset's pool comes from its ``train`` split unless one is named."""
        if isinstance(data, dict) and data.get("split") is None and not is_dataset_file(data.get("dataset", "ekar_zh")):
            return {**data, "split": "train"}
        return data

    pool: Annotated[int, Field(ge=1)] = 40
    """Pool questions: the split's first N (or, with ``sample``, drawn from the whole split)."""
    sample: Annotated[int, Field(ge=1)] | None = None
    """Draw this many from the whole split by KMeans (20 clusters), in proportion to cluster size (none: off)."""
    r: Annotated[int, Field(ge=1, le=10)] = 3
    """Answers per question (the paper: 3 to 5)."""
    explainer: Literal["llm", "dataset", "person"] = "dataset"
    """Who writes a note's explanation: ``llm``, ``dataset`` (its own rationale) or ``person`` (empty drafts)."""
    max_tokens: Annotated[int, Field(ge=1)] = 256
    """Token limit of an answer."""
    seed: int = 0
    """Seed of the pool sample and the answers' sampling."""
    data_dir: str | None = None
    """The data directory (default: $OLAKIT_DATA_DIR, then the places olakit.data.loaders names)."""
