"""Frozen dataclasses that carry data through the kit: Question, Note, Template, and the records of each method
(Record: the shared columns; OlaGPTRecord, GeekRecord, ReviewRecord: each method's own)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

ANSWER_KINDS = ("choice", "yes_no", "number", "text")
"""What a question's answer is: an option label (``choice``), ``yes``/``no``, a number (no options; the gold a
canonical number, olakit.answering.read.canonical_number) or free ``text`` (judged, never extracted)."""


@dataclass(frozen=True)
class Question:
    """One question: multiple choice, yes/no, numeric or free text (``kind``)."""

    id: str
    """Stable id within its dataset and split, e.g. ``"test-17"`` (AQuA) or ``"f6ed57-zh"`` (E-KAR)."""
    dataset: str
    """Dataset name: ``"aqua"``, ``"ekar_zh"`` or ``"strategyqa"``."""
    text: str
    """The question as given by the dataset, without the options."""
    options: dict[str, str]
    """Option label -> option text, in the dataset's order, e.g. ``{"A": "33,000", ...}``; empty for a numeric or
    free-text question."""
    gold: str
    """The correct option label (a key of ``options``), or the canonical number, or the reference text."""
    rationale: str = ""
    """The dataset's own explanation of the answer, when it has one."""
    meta: dict = field(default_factory=dict)
    """Anything else the dataset carries (E-KAR relations, StrategyQA facts, ...)."""
    kind: str = "choice"
    """The answer kind (ANSWER_KINDS)."""


@dataclass(frozen=True, kw_only=True)
class Record:
    """One model answer: the columns every method's records share. Each method's record type adds the columns
    that say which condition of that method answered (OlaGPTRecord, GeekRecord, ReviewRecord); a records file
    holds one kind."""

    KIND: ClassVar[str] = ""
    KEY: ClassVar[tuple[str, ...]] = ("run", "model", "dataset", "question_id")
    """The columns that identify a record of this kind: no two records of a records file share them. The run and
    the model come first: two runs', or two models', answers under the same template names share a file."""

    run: str = ""
    """The run the record belongs to where records of several runs share a frame or file: an imported run's name,
    a run's label in a comparison (olakit.analysis.compare); empty in one run's own records."""
    dataset: str
    """Dataset name, as in Question.dataset."""
    question_id: str
    """Question.id of the question answered."""
    model: str
    """Model name as the endpoint knows it."""
    prompt_hash: str
    """sha256 of the exact prompt sent (or recorded), to tell identical prompts apart."""
    raw_output: str
    """The model's full text answer."""
    extracted: str | None
    """Option label extracted from raw_output, or None when no answer could be parsed."""
    gold: str
    """The correct option label."""
    correct: bool
    """extracted == gold (an unparsed answer is never correct); an imported run's: by its spec's ``score`` rule."""
    olakit_correct: bool | None = None
    """olakit's verdict where ``correct`` may be another's (an imported run: its reading of the answer equals the
    gold's); None: the same as ``correct``."""
    source_correct: bool | None = None
    """The source's own verdict on the answer (an imported run's verdict field, or its spec's ``exact`` or own score
    rule); None where the source gave none (olakit's own runs: olakit is the source)."""
    read_rule: str = ""
    """The rule that read ``extracted`` from the answer as given (olakit.answering.read: ``choice:parenthesised``,
    ``number:unit``, ``none``); empty where olakit extracted it from the output itself (olakit.answering.extract)."""
    prompt_tokens: int | None = None
    """Prompt tokens reported by the endpoint (None when unknown, e.g. recorded runs)."""
    prompt_chars: int | None = None
    """Characters of the prompt sent (recorded runs: of the recorded input), for token estimates when the
    endpoint reported none."""
    completion_tokens: int | None = None
    """Completion tokens reported by the endpoint (None when unknown); with a second answer stage, both calls'."""
    finish_reason: str | None = None
    """Why the (first) output ended, as the endpoint said: ``"stop"``, ``"length"`` (cut off at max_tokens), ...;
    None when unknown (recorded runs)."""
    answer_stage: int = 1
    """Which stage gave ``extracted``: 1 (the output itself) or 2 (a second call with the answer trigger)."""
    stage2_output: str = ""
    """The second stage's output (empty when there was none)."""
    unparsed_cause: str = ""
    """Why the answer is unparsed (``cut_off``, ``not_an_option``, ``no_answer``;
    olakit.answering.extract.UNPARSED_CAUSES), judged on the first output; empty when it parsed at the first stage."""
    cost: float | None = None
    """Cost in USD from the price table (None when unknown); with a second answer stage, both calls'."""
    latency: float | None = None
    """Seconds the call took (None for recorded runs or cache hits)."""
    cached: bool = False
    """True when the answer came from the cache rather than a paid call."""
    source: str = "live"
    """Where the record comes from: ``"live"`` or the name of a recorded run, e.g. ``"olagpt-recorded"``."""
    question_hash: str = ""
    """A content hash of the question answered (its normalised text and options; olakit.data.datasets
    question_hash): two versions of a question under one id are told apart (empty: not known)."""
    reasoning: str = ""
    """The model's thinking, kept apart from ``raw_output`` (olakit.thinking.split_thinking; with a second
    answer stage, the first call's): shown in the explorers, never read for an answer, a note, a vote or a review."""
    reasoning_tokens: int | None = None
    """Reasoning tokens the endpoint reported, over the record's calls (part of completion_tokens); None: none
    reported."""
    trace: str = ""
    """A multi-step method's whole trace as JSON (GEEK: per branch, every step's action, prompt hash, input,
    output, retrieved ids and scores; the review loop: the history); empty for single-call answers."""


@dataclass(frozen=True, kw_only=True)
class OlaGPTRecord(Record):
    """An OlaGPT answer: one template (or baseline, or vote) under one note strategy and count, one sample."""

    KIND: ClassVar[str] = "olagpt"
    KEY: ClassVar[tuple[str, ...]] = (*Record.KEY, "template", "notes_strategy", "n_notes", "sample")
    template: str
    """The thinking template (``"ST"``, ``"DT"``, ``"turbo"``, ...), or the baseline or vote that answered in its
    place in Table 3 (``"SC"``, ``"auto_cot"``, ``"llm_vote"``, ...; olakit.names)."""
    notes_strategy: str
    """Note selection strategy: ``"zero-shot"``, ``"random"``, ``"retrieval"`` or ``"combine"``."""
    n_notes: int
    """How many notes the prompt carried (0 for zero-shot)."""
    sample: int = 0
    """Sample index (0 for a single greedy answer; 0..k-1 for self-consistency)."""
    note_ids: tuple[str, ...] = ()
    """Ids of the notes shown in the prompt, in prompt order."""
    note_sims: tuple[float, ...] = ()
    """Cosine similarity of each shown note's question to this question (same order as note_ids; empty when
    the selection did not embed, e.g. recorded runs)."""
    question_type: str = ""
    """The question type the intention step gave (empty for recorded runs and baselines without it)."""


@dataclass(frozen=True, kw_only=True)
class GeekRecord(Record):
    """A GEEK answer: one Table-2 row on one corpus setting, with its trace."""

    KIND: ClassVar[str] = "geek"
    KEY: ClassVar[tuple[str, ...]] = (*Record.KEY, "row", "corpus", "retriever", "k")
    row: str
    """The Table-2 row: ``zero-shot``, ``CoT``, ``+De``, ``+RE`` or ``Full``."""
    corpus: str
    """The corpus setting: ``open`` (a question's own facts never retrieved), ``oracle`` or a file's name."""
    retriever: str
    """The retriever of Retrieve & Extract (``bm25``, ``dense``, ``hybrid``; empty for rows that retrieve nothing)."""
    k: int
    """Paragraphs per Retrieve & Extract (0 for rows that retrieve nothing)."""


@dataclass(frozen=True, kw_only=True)
class ReviewRecord(Record):
    """A review-loop answer: the direct answer, or the loop's answer after one iteration."""

    KIND: ClassVar[str] = "review"
    KEY: ClassVar[tuple[str, ...]] = (*Record.KEY, "loop", "iteration")
    loop: str
    """``direct`` (one plain answer) or the loop that answered (``review-lite``, ``review-standard``)."""
    iteration: int
    """The answer after this many reviews (0: the first answer; always 0 for ``direct``)."""


RECORD_KINDS = {cls.KIND: cls for cls in (OlaGPTRecord, GeekRecord, ReviewRecord)}
"""Record type by kind (what a records file's metadata names)."""


@dataclass(frozen=True)
class DatasetRef:
    """The questions a run answered, as it read them: what its log says, read back as written (never re-defaulted
    to the dataset's usual split)."""

    dataset: str
    """A built-in dataset's name or a dataset file's path, as the run named it."""
    split: str | None = None
    """The split read, resolved (``test`` when AQuA's was left unset); None for a file (its own split)."""
    map: str | None = None
    """A dataset file's field mapping, as given (None: the file's own map or the layout recognised)."""
    file: str = ""
    """The file the questions were read from (resolved)."""
    sha256: str = ""
    """That file's sha256 when it was read."""


@dataclass(frozen=True)
class Note:
    """One entry of a notes library (paper 3.4): a hard question with its answer and an explanation."""

    id: str
    """Stable id within the library, e.g. ``"olagpt-aqua-7"``."""
    source: str
    """Where the note comes from: ``"olagpt"``, ``"active-learning:<dataset>"``, ``"manual"``, ..."""
    question: str
    """The question text, without options."""
    options: dict[str, str]
    """Option label -> text."""
    answer: str
    """The correct option label."""
    explanation: str = ""
    """How to solve it (the expert's or the LLM's worked solution)."""
    error_reason: str = ""
    """Why the model got it wrong (active learning)."""
    model_expert: str = ""
    """Who wrote the explanation: a person's name, ``"dataset"`` or the model name."""
    llm_task_type: str = ""
    """The question type the LLM gave with the Table 5 prompt."""
    dataset: str = ""
    """Dataset the question comes from."""
    provenance: tuple = ()
    """How the note was made, step by step (active learning): each self-correction try (its hint, the model's
    output and answer, right or not), an expert's draft before the LLM refined it, and the note's check (the model,
    given the note, answering its own question); empty for notes made in one step."""


@dataclass(frozen=True)
class Template:
    """A thinking template (paper 3.5, Table 6): a prefix put before the framed question."""

    name: str
    """Short name used everywhere: ``"ST"``, ``"DT"``, ``"AT"``, ``"turbo"``, ..."""
    prefix: str
    """The template text; empty for ``origin`` (the plain model)."""
    datasets: tuple[str, ...] = ("*",)
    """Datasets the template suits; ``"*"`` means any."""
    title: str = ""
    """Human-readable name, e.g. ``"Step Thinking"``."""
    path: str = ""
    """The file it was read from."""
    note_prefix: str = ""
    """What the authors' note layout puts before each note's explanation for this template (their
    ``templates_prefix``, e.g. ``"Let's think with planning_thought:"``)."""
    paper_position: str = "before"
    """Where the authors' prompts put the template's text: ``"before"`` the question or ``"after"`` the
    answer-format sentence (ST's trigger)."""
    answer: str = "text"
    """How its output answers: ``"text"`` (an answer statement the extractor reads) or ``"program"`` (a program
    the sandbox runs: its ``ans`` is the answer; olakit.tools.program). A program template runs only when named."""

    def suits(self, dataset: str) -> bool:
        return "*" in self.datasets or dataset in self.datasets
