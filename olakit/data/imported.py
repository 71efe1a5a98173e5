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
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Annotated, Literal

import pandas as pd
from pydantic import Field

from olakit.config import Config, OwnDataset, is_dataset_file, read_config_file
from olakit.data.datasets import _norm, get, question_hash, read_rows
from olakit.data.eee import eee_rows
from olakit.data.loaders import load_questions, note_read, resolve_data_dir
from olakit.data.records import check_frame, prompt_hash, to_frame
from olakit.errors import DataError
from olakit.extract import EXTRACTORS, get_extractor, gold_number, unparsed_cause
from olakit.names import IMPORTED
from olakit.types import OlaGPTRecord, Question

EXAMPLES = 3

# Each format's rows as its reader gives them, and the fields a RunFile reads when it names none. An Inspect row is
# one sample of the log (its first scorer, or the one named), an lm-eval row one line of its samples file.
DEFAULTS: dict[str, dict[str, str | None]] = {
    "table": {"question": "question", "choices": None, "id": None, "sample": None, "answer": None, "output": None,
              "gold": None, "score": None, "finish_reason": None},
    "inspect": {"question": "input", "choices": "choices", "id": "id", "sample": "repeat", "answer": "answer",
                "output": "output", "gold": "target", "score": "correct", "finish_reason": "stop_reason"},
    "lm-eval": {"question": "doc.question", "choices": "doc.choices", "id": None, "sample": None,
                "answer": "filtered_resps", "output": "resps", "gold": "target", "score": "metric",
                "finish_reason": None},
    "eee": {"question": "question", "choices": "choices", "id": "id", "sample": "repeat", "answer": "answer",
            "output": "output", "gold": "target", "score": "correct", "finish_reason": None},
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
    score: str | None = None
    """The tool's own verdict (correct or not), compared with the records'."""
    finish_reason: str | None = None
    """Why the output ended (a cut-off answer is reported as such)."""
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
    score_disagreements: list[dict] = field(default_factory=list)
    """``{"question_id", "sample", "tool", "records"}`` for each answer the tool scored otherwise than the records
    (a gold conflict, or the tool's scorer reading more or less than the answer it reports)."""


@dataclass
class ImportReport:
    dataset: str
    gold_from: str
    runs: list[RunReport]
    compared: int | None = None
    """Questions every run answered: what the comparison tables are computed over."""
    left_out: list[str] = field(default_factory=list)
    """Questions some run lacks, left out of the comparison tables (their records are kept)."""

    def lines(self) -> list[str]:
        """A summary for the terminal, one line per run and one per kind of problem."""
        out = []
        for r in self.runs:
            out.append(
                f"{r.run}: {r.matched} of {r.rows} rows matched ({r.skipped} without a question skipped, "
                f"{r.unmatched} unmatched, {r.duplicates} duplicates); {r.missing} questions missing; "
                f"{len(r.gold_conflicts)} gold conflicts"
                + (f"; {len(r.score_disagreements)} scored otherwise by the tool" if r.score_disagreements else "")
            )
            if r.unmatched_examples:
                out.append(f"  unmatched, first: {' | '.join(r.unmatched_examples)}")
            if r.gold_conflicts:
                first = r.gold_conflicts[0]
                out.append(
                    f"  gold conflicts, first: {first['question_id']} run {first['run_gold']!r} dataset "
                    f"{first['dataset_gold']!r}; the {self.gold_from}'s gold scores the records"
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
        }

    @classmethod
    def from_dict(cls, doc: dict) -> ImportReport:
        """The report as a run log holds it (as_dict)."""
        return cls(**{**doc, "runs": [RunReport(**r) for r in doc.get("runs", [])]})


def _matcher(questions: list[Question]):
    """question text (normalised) -> the questions with it; the options tell twins apart."""
    by_text: dict[str, list[Question]] = {}
    for q in questions:
        by_text.setdefault(_norm(q.text), []).append(q)
    return by_text


def _shown(row: dict, field: str | None, where: str) -> list[str] | None:
    """The options as the run showed them (normalised texts, a leading ``A)`` dropped), when the row has them."""
    value = get(row, field, where, None) if field else row.get("options") or row.get("choices")
    if isinstance(value, dict) and "text" in value:  # ARC's {"text": [...], "label": [...]}
        value = value["text"]
    if isinstance(value, list) and value:
        return [_option_text(v) for v in value]
    return None


def _option_text(value) -> str:
    """An option's text, normalised, without a leading ``A)``."""
    return re.sub(r"^\(?[a-z]\)\s*", "", _norm(value))


def _find(row, where, spec: RunFile, fmt: str, by_id: dict, by_text: dict, shown) -> Question | None:
    id_field = spec.field_of("id", fmt)
    if id_field and (q := by_id.get(str(get(row, id_field, where, "")))) is not None:
        return q
    text = get(row, spec.field_of("question", fmt), where, None)
    hits = by_text.get(_norm(text), []) if text is not None else []
    if len(hits) > 1 and shown is not None:  # twins by text: the same options, in any order
        hits = [q for q in hits if sorted(map(_option_text, q.options.values())) == sorted(shown)] or hits
    return hits[0] if hits else None


def _first(value):
    """lm-eval's responses are lists (one per repeat, each a list of one text): the first."""
    while isinstance(value, list | tuple) and value:
        value = value[0]
    return None if isinstance(value, list | tuple) else value


def _label(value, q: Question, shown: list[str] | None = None, own: list[str] | None = None) -> str | None:
    """A run's answer as a label of the question (or a canonical number); None when it names none. With the options
    as the run showed them, a letter is read as the option it named there, found in the question by its text."""
    value = _first(value)
    if value is None:
        return None
    if not q.options:
        return gold_number(value)
    text = str(value).strip()
    letter = text[:1].upper() if len(text) == 1 or text[1:2] == ")" else None
    own = own if own is not None else [_option_text(v) for v in q.options.values()]
    if shown is not None and own != shown and letter and "A" <= letter <= "Z" and ord(letter) - 65 < len(shown):
        named = [label for label, option in zip(q.options, own) if option == shown[ord(letter) - 65]]
        if len(named) == 1:  # the run showed the options in another order: the letter names its option's text
            return named[0]
    if text in q.options:
        return text
    lowered = {k.lower(): k for k in q.options}
    return lowered.get(text.lower()) or (text[:1] if text[:1] in q.options and text[1:2] in ("", ")") else None)


def _verdict(value) -> bool | None:
    """A tool's own score as correct or not: True/False, 1/0, Inspect's "C"/"I" (partial credit is not correct)."""
    value = _first(value)
    if value is None or value == "":
        return None
    if isinstance(value, str):
        return {"C": True, "I": False}.get(value.upper())
    return float(value) >= 1.0


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
    for where, row in rows:
        unnamed = spec.field_of("question", "table") not in row and not spec.id
        if unnamed or any(c not in row for c in spec.conditions):
            groups.setdefault((), []).append((where, row))  # prompt lines: counted as skipped by the first run
            continue
        groups.setdefault(tuple(str(row[c]) for c in spec.conditions), []).append((where, row))
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
    options: dict
    """question id -> its options' normalised texts"""
    hashes: dict
    """question id -> its content hash"""

    @classmethod
    def of(cls, questions: list[Question]) -> _Known:
        return cls(
            questions, {q.id: q for q in questions}, _matcher(questions),
            {q.id: [_option_text(v) for v in q.options.values()] for q in questions},
            {q.id: question_hash(q) for q in questions},
        )  # fmt: skip


def _records_of(name, model, fmt, rows, run: RunFile, spec: ImportSpec, known: _Known, path, reader):
    report = RunReport(run=name, file=str(path), format=fmt, model=model)
    records, seen = [], set()
    field_of = lambda key: run.field_of(key, fmt)  # noqa: E731
    for where, row in rows:
        report.rows += 1
        id_field = field_of("id")
        if (
            field_of("question") not in row
            and field_of("question").split(".")[0] not in row
            and not (id_field and get(row, id_field, where, None) is not None)
        ):
            report.skipped += 1
            continue
        shown = _shown(row, field_of("choices"), where)
        q = _find(row, where, run, fmt, known.by_id, known.by_text, shown)
        if q is None:
            report.unmatched += 1
            if len(report.unmatched_examples) < EXAMPLES:
                text = get(row, field_of("question"), where, "")
                report.unmatched_examples.append(f"{where}: {str(text)[:60]!r}")
            continue
        repeat = int(get(row, field_of("sample"), where, 0) or 0) if field_of("sample") else 0
        if (q.id, repeat) in seen:
            report.duplicates += 1
            continue
        seen.add((q.id, repeat))
        report.matched += 1
        output = get(row, field_of("output"), where, "") if field_of("output") else ""
        output = _first(output) if isinstance(output, list) else output
        output = str(output or "")
        labels = list(q.options)
        if reader:
            label = reader(output, labels)
        else:
            answer = get(row, field_of("answer"), where, None) if field_of("answer") else None
            label = _label(answer, q, shown, known.options[q.id]) if field_of("answer") else None
        gold = q.gold
        if field_of("gold"):
            theirs = _label(get(row, field_of("gold"), where, None), q, shown, known.options[q.id])
            if theirs != q.gold:
                report.gold_conflicts.append({"question_id": q.id, "run_gold": theirs, "dataset_gold": q.gold})
                gold = theirs if spec.gold_from == "run" and theirs is not None else q.gold
        correct = label is not None and label == gold
        tool = _verdict(get(row, field_of("score"), where, None)) if field_of("score") and not reader else None
        if tool is not None and tool != correct:
            report.score_disagreements.append(
                {"question_id": q.id, "sample": repeat, "tool": tool, "records": correct, "answer": label}
            )
        finish = get(row, field_of("finish_reason"), where, None) if field_of("finish_reason") else None
        finish = "length" if finish in ("max_tokens", "model_length") else finish
        records.append(
            OlaGPTRecord(
                run=name,
                dataset=q.dataset,
                question_id=q.id,
                template=name,
                notes_strategy=IMPORTED,
                n_notes=0,
                sample=repeat,
                model=model,
                prompt_hash=prompt_hash(json.dumps(row, sort_keys=True, default=str)[:10000]),
                raw_output=output,
                extracted=label,
                gold=gold,
                correct=correct,
                finish_reason=finish,
                unparsed_cause="" if label is not None else unparsed_cause(output, labels, finish),
                source=f"{IMPORTED}:{fmt}:{path.name}",
                question_hash=known.hashes[q.id],
            )
        )
    ids = {i for i, _ in seen}
    report.missing = len(known.questions) - len(ids)
    report.missing_examples = [q.id for q in known.questions if q.id not in ids][:EXAMPLES]
    return records, report


def import_runs(spec: ImportSpec, base: Path | None = None) -> tuple[pd.DataFrame, ImportReport]:
    """The records of every run of ``spec`` (files relative to ``base``) and the report of what matched."""
    known = _Known.of(load_questions(spec.dataset, spec.split, spec.data_dir, spec.dataset_map))
    records, reports, names = [], [], set()
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
                records += got
                reports.append(report)
    frame = check_frame(to_frame(records, OlaGPTRecord), "imported runs")
    return frame, ImportReport(dataset=spec.dataset, gold_from=spec.gold_from, runs=reports)


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
        runs.append(run.replace(file=str(file)))
    return spec.replace(runs=runs)
