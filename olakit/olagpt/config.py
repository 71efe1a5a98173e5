"""The OlaGPT run's settings, each defined once (OlaGPTConfig, which includes the analysis settings of
olakit.settings) and the notes build's (NotesConfig). ``olakit run --help``, the notebooks' parameters and the sweep
files' keys are derived from these fields (olakit.config). Where olakit departs from the authors' code, the setting's
default is the authors' behaviour and ``preset="olakit"`` picks olakit's choices (olakit.settings).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Literal

from pydantic import Field, model_validator

from olakit.config import ConfigError, OwnDataset, Slice, is_dataset_file
from olakit.generation import AnswerStages, Generation
from olakit.names import AUTO_COT, LLM_VOTE, RECORDED_READER, REGEX_VOTE, SC, STRATEGIES, TURBO
from olakit.settings import Analysis

Strategy = Literal[STRATEGIES]  # type: ignore[valid-type]


QUESTION_TYPE = {"max_tokens": 24, "temperature": 0.0}
"""The question-type call's settings (intention enhancement, olakit.olagpt.intent: a few words), a stage of OlaGPT's
run and of the notes build."""

OWN_LIBRARY = {"aqua": "olagpt", "ekar_zh": "olagpt-ekar"}
"""Each built-in dataset's own built-in notes library (olakit.olagpt.notes.LIBRARIES)."""


class OlaGPTConfig(Slice, OwnDataset, Analysis, Generation, AnswerStages):
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
    library: str | None = None
    """The notes library: none (the dataset's own: ``olagpt`` for aqua, ``olagpt-ekar`` for ekar_zh; another
    dataset has none, so build one: ``olakit notes build``), ``olagpt`` (the authors' 81 AQuA notes), ``olagpt-ekar``
    (their 2 E-KAR notes), a JSON Lines file of notes, or a notes build's folder (``olakit notes build --out DIR``).
    A library's notes record their dataset: notes of another dataset are refused unless ``cross_dataset_notes``."""
    cross_dataset_notes: bool = False
    """Show a library of another dataset's notes on purpose (a named condition, in the run log's config): AQuA's
    math notes on E-KAR's analogies, say. Without it, such a library is an error."""
    baselines: tuple[Literal[SC, AUTO_COT], ...] = ()  # type: ignore[valid-type]
    """Baselines beside the templates: ``SC`` (self-consistency) and ``auto_cot``; the turbo baseline is the turbo
    template itself."""
    votes: tuple[Literal[REGEX_VOTE, LLM_VOTE], ...] = (REGEX_VOTE,)  # type: ignore[valid-type]
    """Votes over the templates: ``regex_vote`` (no calls) and ``llm_vote`` (the model chooses; paper 3.7)."""
    sc_k: Annotated[int, Field(ge=1)] = 5
    """Self-consistency samples (5: the number of templates the vote combines)."""
    sc_template: str = TURBO
    """The template SC samples: the plain prompt (the paper's SC zero-shot, 0.3189, sits by turbo's 0.3228)."""
    autocot_k: Annotated[int, Field(ge=1)] = 4
    """Auto-CoT's demonstrations (clusters)."""
    autocot_tries: Annotated[int, Field(ge=1)] = 3
    """Auto-CoT's candidates per cluster, nearest the centre first, tried until one passes its filters."""
    autocot_demos: Literal["generated", "published"] = "generated"
    """Auto-CoT's demos: ``generated`` (its clustering on the split) or ``published`` (AuRoRA's demo files)."""
    audit: bool = True
    """With the LLM vote: vote again with the candidates shuffled (position bias)."""
    prompt_seed: int = 0
    """Seed of what goes into the prompts: random notes, Auto-CoT's demos and the LLM vote's shuffled order (the same
    seed gives the same prompts; the sampling seed sent with a call is ``seed``, a generation setting)."""
    extractor: Literal["olagpt", "strict"] | None = None
    """Answer reader: ``strict`` (the last explicit answer statement) or ``olagpt`` (the authors' regex); none: the
    source's own (strict for live outputs, olagpt for the authors' recorded ones)."""
    verify: bool = False
    """Verification thinking: review each template's answer and revise it below ``verify_threshold``."""
    verify_threshold: Annotated[int, Field(ge=1, le=5)] = 4
    """Review score (1-5) below which verification thinking revises an answer."""
    diy: bool = False
    """Integrative (DIY) thinking: the model composes a template per question."""
    choose_k: Annotated[int, Field(ge=1)] | None = None
    """Template choice: the controller picks this many templates per question and only those run (none: off)."""
    choice_comparison: bool = False
    """With choose_k: run every template as well (the full grid, paid in full), so the chosen vote can be compared
    with the vote over all templates."""
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
    tools: Literal["none", "all", "retrieved"] = "none"
    """OlaGPT's tools library (docs/tools.md): ``none`` (the paper's runs), ``all`` (every tool offered to each
    template that uses tools) or ``retrieved`` (the tools index's top ``tools_k`` for each template and question)."""
    tool_names: tuple[str, ...] | None = None
    """The library's tools (none: every tool, the built-ins and $OLAKIT_TOOLS_DIR's)."""
    tools_k: Annotated[int, Field(ge=1)] = 1
    """With ``tools="retrieved"``: how many tools each template and question is offered."""
    tool_retriever: Literal["bm25", "dense"] = "bm25"
    """The tools index's retriever over the tools' descriptions."""
    tool_templates: tuple[str, ...] | None = None
    """The templates that answer with tools (none: every template of the run); the others answer without."""
    tool_protocol: Literal["text", "openai"] = "text"
    """How tools are called: ``text`` (ReAct's ``Action: tool[input]`` lines, any model) or ``openai`` (the OpenAI
    tools API, as OpenAI and vLLM serve it)."""
    program_choice: Literal["model", "closest"] = "model"
    """How a program template's value (PoT) answers a multiple-choice question: ``model`` (a second call names the
    closest option, and no value is the first option: PoT's own harness) or ``closest`` (the option whose number is
    closest, no call; a value that reads as a label or an option's text is that option)."""
    tool_steps: Annotated[int, Field(ge=0)] = 4
    """The most rounds of tool calls an answer takes before it is asked to answer (at most tool_steps + 1 calls)."""
    replicate: Annotated[int, Field(ge=0)] = 0
    """A replicate: this many questions of the slice, from its first, answered once more past the cache (every call
    again, the same settings), so the run log reports each cell's run-to-run disagreement, the noise floor a
    difference between cells must clear (replicate.parquet holds its records; 0: none)."""

    STAGE_DEFAULTS = {
        "question_type": QUESTION_TYPE,
        "template": {"max_tokens": 256, "temperature": 0.0},
        "sc": {"max_tokens": 256, "temperature": 0.7, "seed": 0},
        "auto_cot": {"max_tokens": 256, "temperature": 0.0},
        "diy": {"max_tokens": 96, "temperature": 0.0},
        "choose": {"max_tokens": 24, "temperature": 0.0},
        "verify": {"max_tokens": 300, "temperature": 0.0},
        "llm_vote": {"max_tokens": 192, "temperature": 0.0},
    }
    """The run's generation settings (olakit.generation), by stage: the question types (``question_type``, a few
    words); the templates' answers (``template``: every template, with or without tools, and DIY's composed ones);
    SC's samples (``sc``: seeded samples at 0.7); Auto-CoT's demos and answers (``auto_cot``); the template DIY
    thinking composes (``diy``); the controller's choice of templates (``choose``, a few names); verification's
    reviews and revisions (``verify``: a review cut short loses its score lines); the LLM vote (``llm_vote``). Greedy
    but SC. A setting given for the run (``--max-tokens``, ``--temperature``, ``--seed``, ...) applies to every stage;
    ``--stages '{"template": {"max_tokens": 48}}'`` sets one's."""
    SAMPLED = False

    def notes_library(self) -> str | None:
        """The library this run reads: as set, else the dataset's own built-in one (None where it has none)."""
        return self.library if self.library is not None else OWN_LIBRARY.get(self.dataset)

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


class NotesConfig(OwnDataset, Generation):
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
    explainer: Literal["llm", "dataset", "person", "self-correction", "refine"] = "dataset"
    """Who writes a note's explanation: ``llm`` (told the gold answer), ``dataset`` (its own rationale), ``person``
    (empty drafts), ``self-correction`` (the paper's "following prompts until a self-correction is made": the model
    retries with hints, never told the answer, until its own answer is right; each try kept as the note's
    provenance; a question it never corrects gets no note) or ``refine`` (the paper's "experts first, then LLMs
    refine": the drafts of ``drafts``, refined by the model; the draft kept as provenance)."""
    template: str = "ST"
    """The thinking template the pool is answered with to find the wrong answers (the authors' ST)."""
    extractor: Literal["olagpt", "strict"] = "strict"
    """Answer reader of the pool's answers, the self-correction tries and the notes' checks: ``strict`` (the last
    explicit answer statement) or ``olagpt`` (the authors' regex)."""
    clusters: Annotated[int, Field(ge=1)] = 20
    """KMeans clusters of the pool sample (``sample``; the paper's 20)."""
    tries: Annotated[int, Field(ge=1, le=10)] = 3
    """``self-correction``: retries at most, each with a stronger hint."""
    drafts: str | None = None
    """``refine``: the experts' drafts, a notes file (JSON Lines: question, options, answer, explanation)."""
    check: bool = True
    """Check each note: the model, given the note alone, answers its own question (recorded in the note's
    provenance and counted in the run)."""

    @model_validator(mode="after")
    def _drafts_for_refine(self):
        if self.explainer == "refine" and self.drafts is None:
            raise ValueError("explainer 'refine' refines the experts' drafts: give drafts (a notes file)")
        if self.drafts is not None and self.explainer != "refine":
            raise ValueError(f"drafts are refined by explainer 'refine', not {self.explainer!r}")
        return self

    sample_seed: int = 0
    """Seed of the pool sample (``sample``: KMeans and the draw from each cluster)."""
    STAGE_DEFAULTS = {
        "question_type": QUESTION_TYPE,
        "answer": {"max_tokens": 256, "temperature": 0.7, "seed": 0},
        "retry": {"max_tokens": 256, "temperature": 0.7, "seed": 0},
        "explain": {"max_tokens": 256, "temperature": 0.0},
        "refine": {"max_tokens": 256, "temperature": 0.0},
        "check": {"max_tokens": 256, "temperature": 0.0},
    }
    """The build's generation settings (olakit.generation), by stage: the question types (``question_type``, greedy,
    24 tokens, as in OlaGPT's run); the pool's ``r`` answers (``answer``) and self-correction's tries (``retry``)
    seeded samples at 0.7; the written explanations (``explain``), the refined drafts (``refine``) and the notes'
    checks (``check``) greedy; 256 tokens each but the question types. A setting given for the run
    (``--max-tokens``, ``--temperature``, ``--seed``, ...) applies to every stage; ``--stages '{"check":
    {"max_tokens": 512}}'`` sets one's."""
    SAMPLED = False
    data_dir: str | None = None
    """The data directory (default: $OLAKIT_DATA_DIR, then the places olakit.data.loaders names)."""
