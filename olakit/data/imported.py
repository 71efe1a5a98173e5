"""Runs made elsewhere, imported into records: per-question outputs from tidy tables (JSON Lines, JSON, CSV,
Parquet, a DataFrame; one file per run or one file of many runs told apart by condition columns), Inspect AI logs
(``.eval``/``.json``, read by inspect_ai's own log reader) and lm-eval-harness sample files
(``samples_<task>_*.jsonl``), matched to a dataset's questions by id or by content (the normalised question and
options), so olakit's analysis (votes across runs, bounds, kappa, McNemar + Holm, heatmaps, explorers) serves them as
it serves its own.

An import spec names the dataset and the runs (ImportSpec, one RunFile each); each imported run becomes one
``template`` of the records (its name), ``notes_strategy`` ``imported``, ``run`` its name, ``source``
``imported:<format>:<file>``:

    dataset: aqua
    runs:
      - {file: pot/outputs/aqua_s0_e-1_11_06_18_38.jsonl, run: PoT, answer: prediction, output: generated, gold: answer}
      - {file: logs/2026-12-01T16-04_task_ht7n.eval}            # Inspect: the scorer's answer and the completion
      - {file: out/model/samples_tiny_2026-12-01.jsonl}         # lm-eval: one run per filter

What does not match is reported, never dropped silently (ImportReport): rows without the question field (prompt or
demonstration lines), rows whose question is not in the dataset, questions of the dataset a run lacks, every gold
that disagrees with the dataset's, and every question the tool scored otherwise than the records do; which gold
scores the records is the spec's stated choice (``gold_from``).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Annotated, Literal

import pandas as pd
from pydantic import Field

from olakit.answering.extract import EXTRACTORS, UNFINISHED, get_extractor, unparsed_cause
from olakit.answering.read import NONE, TEXT_STEPS, Reading, TextNormalise, option_text, read_answer
from olakit.answering.score import OLAKIT, SOURCE, read_verdict, score_rule
from olakit.config import Config, OwnDataset, is_dataset_file, read_config_file
from olakit.data.datasets import _norm, get, getter, question_hash, read_rows
from olakit.data.eee import eee_rows
from olakit.data.loaders import load_questions, note_read, resolve_data_dir
from olakit.data.records import check_frame, frame_of, prompt_hash, to_frame
from olakit.errors import DataError
from olakit.names import IMPORTED, plural
from olakit.thinking import split_thinking
from olakit.types import OlaGPTRecord, Question

EXAMPLES = 3

# Each format's rows as its reader gives them, and the fields a RunFile reads when it names none. An Inspect row is
# one sample of the log (its first scorer, or the one named), an lm-eval row one line of its samples file.
DEFAULTS: dict[str, dict[str, str | None]] = {
    "table": {"question": "question", "choices": None, "id": None, "sample": None, "answer": None, "output": None,
              "gold": None, "verdict": None, "finish_reason": None, "reasoning": None, "reasoning_tokens": None},
    "inspect": {"question": "input", "choices": "choices", "id": "id", "sample": "repeat", "answer": "answer",
                "output": "output", "gold": "target", "verdict": "correct", "finish_reason": "stop_reason",
                "reasoning": "reasoning", "reasoning_tokens": "reasoning_tokens"},
    "lm-eval": {"question": "doc.question", "choices": "doc.choices", "id": None, "sample": None,
                "answer": "filtered_resps", "output": "resps", "gold": "target", "verdict": "metric",
                "finish_reason": None, "reasoning": None, "reasoning_tokens": None},
    "eee": {"question": "question", "choices": "choices", "id": "id", "sample": "repeat", "answer": "answer",
            "output": "output", "gold": "target", "verdict": "correct", "finish_reason": None,
            "reasoning": "reasoning", "reasoning_tokens": "reasoning_tokens"},
}  # fmt: skip


class RunFile(Config):
    """One run's file and which of its fields is what (unnamed fields: the format's, DEFAULTS)."""

    file: str
    """The run's per-question outputs: a table (JSON Lines, JSON, CSV, Parquet), an Inspect log (.eval, .json) or an
    lm-eval samples file (samples_<task>_<date>.jsonl)."""
    format: Literal["auto", "table", "inspect", "lm-eval", "eee"] = "auto"
    """The file's format; ``auto``: an .eval file or a JSON with Inspect's header is Inspect, a ``samples_*.jsonl``
    is lm-eval, a JSON Lines file of Every Eval Ever instances is ``eee``, anything else a table."""
    run: str | None = None
    """The run's name in the records and tables (default: a table's file name; Inspect's task and model; lm-eval's
    task, and its filter when the file has several)."""
    model: str | None = None
    """The model that made the run (default: the log's model where it names one, else unknown)."""
    conditions: list[str] = []
    """A table of many runs: the columns whose values tell its runs apart (method, prompt, model, ...); each
    combination becomes one run named by its values; a condition column named ``model`` also gives the model."""
    question: str | None = None
    """The field holding the question text, matched to the dataset's (normalised: case, spacing)."""
    choices: str | None = None
    """The field holding the options as the run showed them (a list): twins are told apart by them, and a run
    that shuffled them has its letters read by the options' text."""
    id: str | None = None
    """An id field matched to the dataset's ids; a row whose id is not there is matched by its text."""
    sample: str | None = None
    """A repeat index field (Inspect's epoch): a question answered several times keeps every answer."""
    answer: str | None = None
    """The run's own extracted answer (an option label, yes/no, or a number)."""
    output: str | None = None
    """The output text (kept in the records; read by ``reextract`` when given)."""
    gold: str | None = None
    """The run's gold, compared with the dataset's."""
    verdict: str | None = None
    """The source's own verdict field (correct or not: true/false, 1/0, a score where below 1 is not correct,
    Inspect's C/I/P), compared with olakit's reading question by question."""
    score: str | None = None
    """How this run's records are scored, when not as the spec says (ImportSpec.score)."""
    finish_reason: str | None = None
    """Why the output ended (a cut-off answer is reported as such)."""
    reasoning: str | None = None
    """The field holding the model's thinking (Inspect: its ContentReasoning), kept apart in the records' own column
    and never read for an answer; ``<think>`` blocks inside the output are taken out to it as well."""
    reasoning_tokens: str | None = None
    """The field holding the reasoning tokens the run was billed (Inspect: its usage's)."""
    cluster: str | None = None
    """The field holding each question's cluster (a shared passage, a source, a question type): questions in one
    are not independent, and the tables give the cluster-robust standard errors beside the independent ones
    (docs/statistics.md). Runs that name one must agree on each question's."""
    scorer: str | None = None
    """Inspect: the scorer whose answer is read (default: the log's first)."""
    filter: str | None = None
    """lm-eval: the filter whose answers are read (default: each filter of the file is a run of its own)."""
    reextract: str | None = None
    """Also read the answer from ``output`` with this olakit extractor: a run of its own, ``RUN (EXTRACTOR)``,
    beside the source's answer (the only one when the source has none)."""

    def field_of(self, name: str, fmt: str) -> str | None:
        """The field this run reads for ``name``: its own, else its format's."""
        own = getattr(self, name)
        return own if own is not None else DEFAULTS[fmt][name]


class ImportSpec(OwnDataset):
    """Runs made elsewhere on one dataset (``olakit import SPEC.yaml``)."""

    dataset: str = "aqua"
    """The dataset the runs answered: a built-in one's name or a dataset file."""
    split: str | None = None
    """Its split (none: the usual one; a file is its own)."""
    data_dir: str | None = None
    """The data directory (default: $OLAKIT_DATA_DIR, then the usual places)."""
    gold_from: Literal["dataset", "run"] = "dataset"
    """Which gold scores the records when a run's disagrees: the dataset's (default) or the run's own."""
    runs: Annotated[list[RunFile], Field(min_length=1)]
    """The runs."""
    score: str = OLAKIT
    """How the records are scored (their ``correct``, what every table counts), olakit.answering.score: ``olakit``
    (olakit's reading of the answer equals the gold's, olakit.answering.read), ``source`` (the run's own ``verdict``
    field), ``exact`` (the answer and the gold as given, compared as strings, as many papers' scripts do) or
    ``module:function`` (your own ``(answer, gold, row) -> bool``). Each record keeps olakit's verdict and the source's
    beside it, and the report lists every question the two score differently."""
    normalise: TextNormalise = TEXT_STEPS
    """How a free-text answer and its gold are normalised before olakit compares them
    (olakit.answering.read.read_text)."""
    vote_over: list[str] | None = None
    """A regex vote across the runs, added as a run of its own in the tables (and every Holm family): the runs it
    combines, or ``all``; none: no vote."""

    def model_post_init(self, _):
        for r in self.runs:
            if r.reextract is not None and r.reextract not in EXTRACTORS:
                raise DataError(
                    f"run {r.run or r.file}: reextract {r.reextract!r}; known: {', '.join(sorted(EXTRACTORS))}"
                )


@dataclass
class RunReport:
    """What one run's import found."""

    run: str
    file: str
    format: str = "table"
    model: str = ""
    rows: int = 0
    skipped: int = 0
    """Rows without the question field (prompt or demonstration lines)."""
    matched: int = 0
    unmatched: int = 0
    unmatched_examples: list[str] = field(default_factory=list)
    duplicates: int = 0
    """Rows answering a question the run already answered (the first is kept)."""
    missing: int = 0
    """Questions of the dataset the run has no row for."""
    missing_examples: list[str] = field(default_factory=list)
    gold_conflicts: list[dict] = field(default_factory=list)
    """``{"question_id", "run_gold", "dataset_gold"}`` for each question whose golds disagree."""
    scored_by: str = OLAKIT
    """The rule the records' ``correct`` follows (ImportSpec.score)."""
    source: str = ""
    """What the source's verdicts are: ``verdict field 'correct'``, the score rule (``exact``, ``module:function``),
    or empty when the run has none."""
    read_rules: dict[str, int] = field(default_factory=dict)
    """How many answers each olakit.answering.read rule read (``choice:label``, ``number:unit``, ``none``)."""
    score_disagreements: list[dict] = field(default_factory=list)
    """``{"question_id", "sample", "answer", "read", "rule", "gold", "olakit", "source"}`` for each answer olakit's
    reading scores otherwise than the source's verdict: the answer as given, olakit's reading and its rule, the
    gold, both verdicts."""


@dataclass
class ImportReport:
    dataset: str
    gold_from: str
    runs: list[RunReport]
    compared: int | None = None
    """Questions every run answered: what the comparison tables are computed over."""
    left_out: list[str] = field(default_factory=list)
    """Questions some run lacks, left out of the comparison tables (their records are kept)."""
    clusters: dict[str, str] = field(default_factory=dict)
    """Question id -> its cluster, from the runs' ``cluster`` fields (empty: none named)."""

    def lines(self) -> list[str]:
        """A summary for the terminal, one line per run and one per kind of problem."""
        out = []
        for r in self.runs:
            out.append(
                f"{r.run}: {r.matched} of {r.rows} rows matched ({r.skipped} without a question skipped, "
                f"{r.unmatched} unmatched, {r.duplicates} duplicates); {plural(r.missing, 'question')} missing; "
                f"{len(r.gold_conflicts)} gold conflicts"
                + (f"; {len(r.score_disagreements)} scored otherwise by the source" if r.source else "")
                + (f"; the records scored by {_short(r.scored_by)}" if r.scored_by != OLAKIT else "")
            )
            if r.unmatched_examples:
                out.append(f"  unmatched, first: {' | '.join(r.unmatched_examples)}")
            if r.score_disagreements:
                d = r.score_disagreements[0]
                out.append(
                    f"  scored otherwise, first: {d['question_id']} answer {d['answer']!r} read {d['read']!r} "
                    f"({d['rule']}), gold {d['gold']!r}: olakit {d['olakit']}, source {d['source']}"
                )
            if r.gold_conflicts:
                first = r.gold_conflicts[0]
                out.append(
                    f"  gold conflicts, first: {first['question_id']} run {first['run_gold']!r} dataset "
                    f"{first['dataset_gold']!r}; the {self.gold_from}'s gold scores olakit's reading"
                )
        if self.left_out:
            shown = ", ".join(self.left_out[:EXAMPLES])
            out.append(
                f"tables over the {self.compared} questions every run answered; {len(self.left_out)} left out "
                f"(some run lacks them): {shown}{', ...' if len(self.left_out) > EXAMPLES else ''}"
            )
        return out

    def as_dict(self) -> dict:
        return {
            "dataset": self.dataset,
            "gold_from": self.gold_from,
            "runs": [asdict(r) for r in self.runs],
            "compared": self.compared,
            "left_out": self.left_out,
            "clusters": self.clusters,
        }

    @classmethod
    def from_dict(cls, doc: dict) -> ImportReport:
        """The report as a run log holds it (as_dict)."""
        return cls(**{**doc, "runs": [RunReport(**r) for r in doc.get("runs", [])]})


def _short(rule: str) -> str:
    """A score rule as the terminal shows it: a module file's path by its name (pot_score.py:equal)."""
    module, sep, attr = rule.rpartition(":")
    return f"{Path(module).name}:{attr}" if sep and module.endswith(".py") else rule


def _matcher(questions: list[Question]):
    """question text (normalised) -> the questions with it; the options tell twins apart."""
    by_text: dict[str, list[Question]] = {}
    for q in questions:
        by_text.setdefault(_norm(q.text), []).append(q)
    return by_text


def _shown(row: dict, field: str | None, where: str) -> list[str] | None:
    """The options' texts as the run showed them, in its order (option_text), when the row has them: a list, ARC's
    ``{"text": [...], "label": [...]}`` or a label -> text mapping."""
    value = get(row, field, where, None) if field else row.get("options") or row.get("choices")
    if isinstance(value, dict):
        value = value["text"] if "text" in value else list(value.values())
    if isinstance(value, list) and value:
        return [option_text(v) for v in value]
    return None


def _find(row, where, id_field: str | None, question_field: str, by_id: dict, by_text: dict, shown) -> Question | None:
    if id_field and (q := by_id.get(str(get(row, id_field, where, "")))) is not None:
        return q
    text = get(row, question_field, where, None)
    hits = by_text.get(_norm(text), []) if text is not None else []
    if len(hits) > 1 and shown is not None:  # twins by text: the same options, in any order
        hits = [q for q in hits if sorted(map(option_text, q.options.values())) == sorted(shown)] or hits
    return hits[0] if hits else None


def _first(value):
    """lm-eval's responses are lists (one per repeat, each a list of one text): the first."""
    while isinstance(value, list | tuple) and value:
        value = value[0]
    return None if isinstance(value, list | tuple) else value


def _read(value, q: Question, shown: list[str] | None, normalise) -> Reading:
    """A run's answer (or gold) read as an answer to ``q`` by its kind's reader (olakit.answering.read); a yes/no
    question's options are yes and no, so its reader is the yes/no one."""
    value = _first(value)
    return Reading(None, NONE) if value is None else read_answer(value, q, shown, normalise)


def file_format(path: Path) -> str:
    """The format of a run file by its name and, for a .json, its first bytes (Inspect's header)."""
    if path.suffix == ".eval":
        return "inspect"
    if path.name.startswith("samples_") and path.suffix == ".jsonl":
        return "lm-eval"
    if path.suffix in (".json", ".jsonl"):
        with open(path, "rb") as fh:
            head = fh.read(4096)
        if path.suffix == ".json" and head.lstrip().startswith(b"{") and b'"eval"' in head and b'"version"' in head:
            return "inspect"
        if all(k in head for k in (b'"schema_version"', b'"evaluation_id"', b'"sample_id"')):
            return "eee"
    return "table"


def _needs(package: str, fmt: str):
    try:
        return __import__(package)
    except ImportError:
        raise DataError(f"reading {fmt} files needs the {package} package: pip install 'olakit[interop]'") from None


def _inspect_text(value) -> str:
    """A sample's input as text: a string, or its user messages' text."""
    if isinstance(value, str):
        return value
    return "\n".join(m.text for m in value if getattr(m, "role", "") == "user")


def _inspect_reasoning(output) -> str:
    """The thinking of a sample's answer: the text of its ContentReasoning parts (inspect_ai's reading of the
    server's reasoning fields and ``<think>`` blocks); a redacted part's summary where it has one."""
    message = output.message if output is not None and output.choices else None
    content = message.content if message is not None and not isinstance(message.content, str) else []
    parts = [c.summary if c.redacted else c.reasoning for c in content if getattr(c, "type", "") == "reasoning"]
    return "\n\n".join(p for p in parts if p)


def inspect_runs(path: Path, spec: RunFile) -> list[tuple[str, str, list[tuple[str, dict]]]]:
    """An Inspect log, read by inspect_ai's reader: [(run, model, rows)], one row per sample (and epoch)."""
    _needs("inspect_ai", "Inspect")
    from inspect_ai.log import read_eval_log
    from inspect_ai.scorer import value_to_float

    try:
        log = read_eval_log(str(path))
    except Exception as exc:  # inspect_ai raises several types for a file that is not one of its logs
        raise DataError(f"{path}: not an Inspect log inspect_ai can read ({type(exc).__name__}: {exc})") from None
    to_float, rows = value_to_float(), []
    for s in log.samples or []:
        scores = s.scores or {}
        name = spec.scorer or next(iter(scores), None)
        if spec.scorer and spec.scorer not in scores:
            raise DataError(f"{path}: sample {s.id}: no scorer {spec.scorer!r}; it has {', '.join(scores) or 'none'}")
        score = scores.get(name) if name else None
        target = s.target if isinstance(s.target, str) else (s.target[0] if s.target else None)
        rows.append(
            (
                f"{path} sample {s.id} epoch {s.epoch}",
                {
                    "id": str(s.id),
                    "repeat": s.epoch - 1,
                    "input": _inspect_text(s.input),
                    "choices": list(s.choices or []),
                    "target": target,
                    "output": s.output.completion if s.output else "",
                    "stop_reason": s.output.stop_reason if s.output and s.output.choices else None,
                    "reasoning": _inspect_reasoning(s.output),
                    "reasoning_tokens": s.output.usage.reasoning_tokens if s.output and s.output.usage else None,
                    "answer": score.answer if score else None,
                    "correct": to_float(score.value) >= 1.0 if score is not None else None,
                    "metadata": s.metadata or {},
                },
            )
        )
    model = log.eval.model
    return [(spec.run or f"{log.eval.task}/{model.rsplit('/', 1)[-1]}", model, rows)]


def lm_eval_runs(path: Path, spec: RunFile) -> list[tuple[str, str, list[tuple[str, dict]]]]:
    """An lm-eval samples file: [(run, model, rows)], one run per filter (or the one named); the model from the
    results file lm-eval wrote beside it."""
    _needs("lm_eval", "lm-eval")
    from lm_eval.utils import get_file_datetime, get_file_task_name

    _, lines = read_rows(path)
    by_filter: dict[str, list] = {}
    for where, row in lines:
        for key in ("doc", "target", "resps", "filtered_resps"):
            if key not in row:
                raise DataError(f"{where}: not an lm-eval sample line (no {key!r})")
        given = row["filtered_resps"]
        if isinstance(given, list) and given and all(isinstance(x, list | tuple) and len(x) == 2 for x in given):
            raise DataError(
                f"{where}: an lm-eval multiple-choice (loglikelihood) sample; olakit reads the answers of generation "
                "tasks (output_type generate_until) only (docs/imports.md)"
            )
        metrics = row.get("metrics") or []
        by_filter.setdefault(str(row.get("filter", "none")), []).append(
            (where, row | {"metric": row.get(metrics[0]) if metrics else None})
        )
    if spec.filter is not None and spec.filter not in by_filter:
        raise DataError(f"{path}: no filter {spec.filter!r}; it has {', '.join(by_filter)}")
    task = get_file_task_name(path.name)
    results = path.parent / f"results_{get_file_datetime(path.name)}.json"
    model = ""
    if results.is_file():
        info = json.loads(results.read_text())
        model = str(info.get("model_name") or info.get("config", {}).get("model", ""))
    chosen = [spec.filter] if spec.filter is not None else list(by_filter)
    name = spec.run or task
    return [(name if len(chosen) == 1 else f"{name} [{f}]", model, by_filter[f]) for f in chosen]


def table_runs(path: Path, spec: RunFile) -> list[tuple[str, str, list[tuple[str, dict]]]]:
    """A tidy table: one run, or one per combination of the condition columns' values."""
    _, rows = read_rows(path)
    if not spec.conditions:
        return [(spec.run or path.stem, "", rows)]
    groups: dict[tuple, list] = {}
    question, conditions = spec.field_of("question", "table"), list(spec.conditions)
    for item in rows:
        row = item[1]
        try:
            key = tuple([str(row[c]) for c in conditions])
        except KeyError:  # a condition column missing: counted as skipped by the first run
            key = ()
        if not spec.id and question not in row:  # prompt lines: counted as skipped by the first run
            key = ()
        group = groups.get(key)
        if group is None:
            group = groups[key] = []
        group.append(item)
    skipped = groups.pop((), [])
    out = []
    for i, (values, group) in enumerate(groups.items()):
        name = "/".join(values) if spec.run is None else "/".join((spec.run, *values))
        model = values[spec.conditions.index("model")] if "model" in spec.conditions else ""
        out.append((name, model, group + (skipped if i == 0 else [])))
    return out


def eee_runs(path: Path, spec: RunFile) -> list[tuple[str, str, list[tuple[str, dict]]]]:
    """An Every Eval Ever instance-level file (olakit.data.eee): one run per model and evaluation name."""
    runs = eee_rows(path)
    if spec.run is not None and len(runs) > 1:
        return [(f"{spec.run}/{name}", model, rows) for name, model, rows in runs]
    return [(spec.run or name, model, rows) for name, model, rows in runs]


READERS = {"table": table_runs, "inspect": inspect_runs, "lm-eval": lm_eval_runs, "eee": eee_runs}


@dataclass
class _Known:
    """The dataset's questions as the matcher reads them, computed once per import."""

    questions: list[Question]
    by_id: dict
    by_text: dict
    hashes: dict
    """question id -> its content hash"""
    readings: dict = field(default_factory=dict)
    """(question id, answer's type, answer, options shown) -> Reading: answers repeat across runs (labels, numbers)"""
    golds: dict = field(default_factory=dict)
    """question id -> (its gold as olakit reads it, the answers accepted)"""
    clusters: dict = field(default_factory=dict)
    """question id -> (its cluster, the row that gave it first), from the runs' ``cluster`` fields"""

    @classmethod
    def of(cls, questions: list[Question]) -> _Known:
        return cls(
            questions, {q.id: q for q in questions}, _matcher(questions), {q.id: question_hash(q) for q in questions},
        )  # fmt: skip


def _records_of(name, model, fmt, rows, run: RunFile, spec: ImportSpec, known: _Known, path, reader):
    field_of = {key: run.field_of(key, fmt) for key in DEFAULTS[fmt]}.__getitem__  # once per run, not per row
    scored_by = run.score or spec.score
    rule = score_rule(scored_by) if scored_by not in (OLAKIT, SOURCE) else None
    if rule is not None:
        source = scored_by
    else:
        source = f"verdict field {field_of('verdict')!r}" if field_of("verdict") and not reader else ""
    if scored_by == SOURCE and not source:
        raise DataError(f"run {name} ({path}): score 'source' needs the run's verdict field ('verdict')")
    report = RunReport(run=name, file=str(path), format=fmt, model=model, scored_by=scored_by, source=source)
    _check_named(run, rows, path)
    records, seen, golds, readings = [], set(), known.golds, known.readings

    def read_of(value, q, shown):
        try:
            key = (q.id, type(value), value, tuple(shown) if shown is not None else None)
            hit = readings.get(key)
        except TypeError:  # an unhashable answer (a list, a mapping): read each time
            return _read(value, q, shown, spec.normalise)
        if hit is None:
            hit = readings[key] = _read(value, q, shown, spec.normalise)
        return hit

    id_field, question_field, choices_field = field_of("id"), field_of("question"), field_of("choices")
    question_top = question_field.split(".")[0]
    sample_field, output_field, answer_field = field_of("sample"), field_of("output"), field_of("answer")
    gold_field, verdict_field, finish_field = field_of("gold"), field_of("verdict"), field_of("finish_reason")
    get_id, get_sample, get_output = (getter(f) if f else None for f in (id_field, sample_field, output_field))
    get_answer, get_gold, get_verdict = (getter(f) if f else None for f in (answer_field, gold_field, verdict_field))
    get_finish = getter(finish_field) if finish_field else None
    reasoning_field, tokens_field = field_of("reasoning"), field_of("reasoning_tokens")
    get_reasoning = getter(reasoning_field) if reasoning_field else None
    get_tokens = getter(tokens_field) if tokens_field else None
    report.rows = len(rows)
    for where, row in rows:
        if (
            question_field not in row
            and question_top not in row
            and not (id_field and get_id(row, where, None) is not None)
        ):
            report.skipped += 1
            continue
        shown = _shown(row, choices_field, where)
        q = _find(row, where, id_field, question_field, known.by_id, known.by_text, shown)
        if q is None:
            report.unmatched += 1
            if len(report.unmatched_examples) < EXAMPLES:
                text = get(row, question_field, where, "")
                ident = get(row, id_field, where, None) if id_field else None
                shown_id = f"id {ident!r} " if ident is not None else ""
                report.unmatched_examples.append(f"{where}: {shown_id}{str(text)[:60]!r}")
            continue
        repeat = int(get_sample(row, where, 0) or 0) if sample_field else 0
        if (q.id, repeat) in seen:
            report.duplicates += 1
            continue
        seen.add((q.id, repeat))
        report.matched += 1
        if run.cluster:
            _note_cluster(row, where, q.id, run.cluster, known.clusters)
        output = get_output(row, where, "") if output_field else ""
        output = _first(output) if isinstance(output, list) else output
        output = output if type(output) is str else str(output or "")
        finish = get_finish(row, where, None) if finish_field else None
        finish = "length" if finish in ("max_tokens", "model_length") else finish
        thought = _thinking(row, where, output, finish, get_reasoning, get_tokens)
        output = thought.text
        labels = list(q.options)
        answer = _first(get_answer(row, where, None)) if answer_field else None
        if reader:
            label = reader(output, labels)
            read = Reading(label, f"extract:{run.reextract}" if label is not None else NONE)
        else:
            read = read_of(answer, q, shown)
        report.read_rules[read.rule] = report.read_rules.get(read.rule, 0) + 1
        if q.id not in golds:  # the dataset's gold as olakit reads it, and its accepted answers: once a question
            gold = _read(q.gold, q, None, spec.normalise).value or q.gold
            golds[q.id] = (
                gold,
                {gold} | {_read(a, q, None, spec.normalise).value for a in q.meta.get("alternatives") or ()},
            )
        gold, accepted = golds[q.id]
        given_gold = get_gold(row, where, None) if gold_field else None
        if given_gold is not None:
            theirs = read_of(given_gold, q, shown).value
            if theirs != gold:
                report.gold_conflicts.append({"question_id": q.id, "run_gold": theirs, "dataset_gold": gold})
                if spec.gold_from == "run" and theirs is not None:
                    gold, accepted = theirs, {theirs}
        ours = read.value is not None and read.value in accepted  # a dataset's accepted answers (BIG-bench's list)
        if rule is not None:  # the answer as given (a run olakit re-extracts: its output), the gold as given
            raw_gold = _first(given_gold) if given_gold is not None else q.gold
            try:
                theirs_verdict = bool(rule(answer if answer_field else output, raw_gold, row))
            except Exception as exc:  # a user's function: its failure named with the row it failed on
                raise DataError(f"{where}: score {_short(scored_by)} raised {type(exc).__name__}: {exc}") from None
        elif reader is None and verdict_field:
            theirs_verdict = read_verdict(get_verdict(row, where, None))
        else:
            theirs_verdict = None
        if scored_by == SOURCE and theirs_verdict is None:
            raise DataError(f"{where}: score 'source' but the row has no verdict ({field_of('verdict')!r})")
        if theirs_verdict is not None and theirs_verdict != ours:
            report.score_disagreements.append(
                {"question_id": q.id, "sample": repeat, "answer": str(answer) if answer_field else output[-200:],
                 "read": read.value, "rule": read.rule, "gold": gold, "olakit": ours, "source": theirs_verdict}
            )  # fmt: skip
        label = read.value
        correct = ours if scored_by == OLAKIT or theirs_verdict is None else theirs_verdict
        cause = (
            "" if label is not None else UNFINISHED if thought.unfinished else unparsed_cause(output, labels, finish)
        )
        records.append(
            (q.dataset, q.id, repeat, prompt_hash(_ROW_TEXT.encode(row)[:10000]), output, label, gold, correct, ours,
             theirs_verdict, read.rule, finish, cause, known.hashes[q.id], thought.reasoning, thought.reasoning_tokens)
        )  # fmt: skip
    if report.rows > report.skipped and not report.matched:
        raise _none_matched(name, path, report, field_of("id"), spec, known)
    ids = {i for i, _ in seen}
    report.missing = len(known.questions) - len(ids)
    report.missing_examples = [q.id for q in known.questions if q.id not in ids][:EXAMPLES]
    columns = dict(zip(_VARYING, map(list, zip(*records)))) if records else {f: [] for f in _VARYING}
    constant = {"run": name, "template": name, "notes_strategy": IMPORTED, "n_notes": 0, "model": model,
                "source": f"{IMPORTED}:{fmt}:{path.name}"}  # fmt: skip
    return columns | {f: [v] * len(records) for f, v in constant.items()}, report


def _note_cluster(row: dict, where: str, qid: str, name: str, clusters: dict) -> None:
    """The row's cluster (its field ``name``) noted for question ``qid``; DataError for an empty one, or one that
    disagrees with what an earlier row gave the question."""
    group = get(row, name, where)
    if group is None or str(group).strip() == "":
        raise DataError(f"{where}: field {name!r} (the cluster) is empty")
    had = clusters.setdefault(qid, (str(group), where))
    if had[0] != str(group):
        raise DataError(f"{where}: question {qid} is in cluster {str(group)!r} here and {had[0]!r} at {had[1]}: "
                        "a question has one cluster")  # fmt: skip


def _thinking(row: dict, where: str, output: str, finish, get_reasoning, get_tokens):
    """The row's answer with its thinking kept apart (olakit.thinking.split_thinking): a reasoning field and the
    reasoning tokens where the run names them, and <think> blocks in the output; never read for the answer."""
    shown = get_reasoning(row, where, None) if get_reasoning else None
    tokens = get_tokens(row, where, None) if get_tokens else None
    usage = {"completion_tokens_details": {"reasoning_tokens": int(tokens)}} if tokens is not None else None
    return split_thinking(output, {"reasoning": str(shown)} if shown else None, usage, finish)


_VARYING = ("dataset", "question_id", "sample", "prompt_hash", "raw_output", "extracted", "gold", "correct",
            "olakit_correct", "source_correct", "read_rule", "finish_reason", "unparsed_cause",
            "question_hash", "reasoning", "reasoning_tokens")  # fmt: skip
"""The record fields an imported row gives, in the order _records_of collects them."""
_ROW_TEXT = json.JSONEncoder(sort_keys=True, default=str)
"""A row as the text its prompt hash is of (json.dumps's, with one encoder for every row)."""


NAMED = ("question", "choices", "id", "sample", "answer", "output", "gold", "verdict", "finish_reason", "reasoning",
         "reasoning_tokens")  # fmt: skip
"""The fields a RunFile names; one it names that no row of the file has is an error (_check_named)."""
_ABSENT = object()


def _check_named(run: RunFile, rows, path) -> None:
    """DataError when a field the spec names (not a format's default) is in no row of the file: a misspelt column
    would otherwise score every answer as none."""
    for name in NAMED:
        named = getattr(run, name)
        if named is None or not rows:
            continue
        if all(get(row, named, where, _ABSENT) is _ABSENT for where, row in rows):
            have = sorted({str(k) for _, row in rows[:100] for k in row})
            raise DataError(
                f"{path}: run {run.run or run.file}: {name} field {named!r} is in no row of the file; its rows have: "
                f"{', '.join(have)}"
            )


def _none_matched(name, path, report: RunReport, id_field, spec: ImportSpec, known: _Known) -> DataError:
    """The one error of a run none of whose rows is a question of the dataset: the file, the count, the first rows,
    and how rows match."""
    ids = ", ".join(q.id for q in known.questions[:3])
    return DataError(
        f"{path}: run {name}: none of its {report.rows - report.skipped} rows is a question of {spec.dataset} "
        f"(first: {' | '.join(report.unmatched_examples)}). Rows match by id "
        + (f"(field {id_field!r}) " if id_field else "(none named: give 'id') ")
        + f"against the dataset's ids ({ids}, ...: a built-in dataset's are SPLIT-N (aqua's test: test-0, test-1, "
        "...), a file's its id field or else its 0-based row positions, 0, 1, ...), else by the question's text, "
        "normalised (case, spacing), in the field 'question' names (docs/imports.md, 'How rows match')"
    )


def import_runs(spec: ImportSpec, base: Path | None = None) -> tuple[pd.DataFrame, ImportReport]:
    """The records of every run of ``spec`` (files relative to ``base``) and the report of what matched."""
    known = _Known.of(load_questions(spec.dataset, spec.split, spec.data_dir, spec.dataset_map))
    columns: dict[str, list] = {}
    reports, names = [], set()
    for run in spec.runs:
        path = Path(run.file) if base is None or Path(run.file).is_absolute() else base / run.file
        if not path.is_file():
            raise DataError(f"run file {path} not found")
        fmt = file_format(path) if run.format == "auto" else run.format
        note_read(path)  # the run log keeps its sha256
        for name, model, rows in READERS[fmt](path, run):
            model = run.model if run.model is not None else model
            own = fmt != "table" or run.answer is not None
            readers = [(name, None)] if own else []
            if run.reextract:
                readers.append((f"{name} ({run.reextract})" if own else name, get_extractor(run.reextract)))
            if not readers:
                raise DataError(f"run {name} ({path}): name its answer field ('answer') or an extractor ('reextract')")
            for label, reader in readers:
                if label in names:
                    raise DataError(f"two runs are named {label!r}; give each a distinct 'run'")
                names.add(label)
                got, report = _records_of(label, model, fmt, rows, run, spec, known, path, reader)
                for f, values in got.items():  # every run's columns, one after another: one frame for all
                    columns.setdefault(f, []).extend(values)
                reports.append(report)
    n = len(columns.get("question_id", ()))
    frame = check_frame(frame_of(OlaGPTRecord, n, columns) if columns else to_frame([], OlaGPTRecord), "imported runs")
    clusters = {q: group for q, (group, _) in known.clusters.items()}
    return frame, ImportReport(dataset=spec.dataset, gold_from=spec.gold_from, runs=reports, clusters=clusters)


def load_import_spec(path: str | Path) -> ImportSpec:
    """An import spec file (YAML or JSON); a path inside it is the spec's (a file beside the spec), else the data
    directory's: each run's file, and a dataset file."""
    path = Path(path)
    spec = read_config_file(ImportSpec, path, "import spec")
    if is_dataset_file(spec.dataset) and not Path(spec.dataset).expanduser().is_absolute():
        beside = path.parent / Path(spec.dataset).expanduser()
        if beside.is_file():
            spec = spec.replace(dataset=str(beside.absolute()))
    runs = []
    for run in spec.runs:
        file = Path(run.file).expanduser()
        if not file.is_absolute():
            beside, in_data = path.parent / file, resolve_data_dir(spec.data_dir) / file
            file = beside if beside.is_file() or not in_data.is_file() else in_data
        if not file.is_file():
            raise DataError(f"{path}: run file {run.file} not found (beside the spec or in the data directory)")
        runs.append(run.replace(file=str(file), score=_beside(run.score, path)))
    spec = spec.replace(runs=runs, score=_beside(spec.score, path))
    for rule in {spec.score, *(r.score for r in spec.runs if r.score is not None)}:
        if rule not in (OLAKIT, SOURCE):
            score_rule(rule)  # an unknown rule or a function that does not import: one error, before any reading
    return spec


def _beside(rule: str | None, spec_path: Path) -> str | None:
    """A ``module:function`` score rule whose module is a .py file beside the spec, as that file's path."""
    module, sep, attr = (rule or "").rpartition(":")
    beside = spec_path.parent / f"{module}.py"
    return f"{beside.absolute()}:{attr}" if sep and module.isidentifier() and beside.is_file() else rule
