"""Runs made elsewhere, imported into records: per-question outputs from tidy tables (JSON Lines, JSON, CSV,
Parquet; one file per run), matched to a dataset's questions by id or by question text, so olakit's analysis
(votes across runs, bounds, kappa, McNemar + Holm, heatmaps, explorers) serves them as it serves its own.

An import spec names the dataset and the runs (ImportSpec, one RunFile each); each imported run becomes one
``template`` of the records (its name), ``notes_strategy`` ``imported``, ``source`` ``imported:<file>``:

    dataset: aqua
    runs:
      - {file: pot/outputs/aqua_s0_e-1_11_06_18_38.jsonl, run: PoT, answer: prediction, output: generated, gold: answer}

What does not match is reported, never dropped silently (ImportReport): rows without the question field (prompt or
demonstration lines), rows whose question is not in the dataset, questions of the dataset a run lacks, and every
gold that disagrees with the dataset's; which gold scores the records is the spec's stated choice (``gold_from``).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Annotated, Literal

import pandas as pd
from pydantic import Field

from olakit.config import Config, OwnDataset, read_config_file
from olakit.data.datasets import _norm, get, question_hash, read_rows
from olakit.data.loaders import load_questions, note_read, resolve_data_dir
from olakit.data.records import check_frame, prompt_hash, to_frame
from olakit.errors import DataError
from olakit.extract import EXTRACTORS, get_extractor, gold_number, unparsed_cause
from olakit.types import OlaGPTRecord, Question

IMPORTED = "imported"
"""The ``notes_strategy`` of imported records (their condition is the run, their ``template``)."""
EXAMPLES = 3


class RunFile(Config):
    """One run's file and which of its fields is what."""

    file: str
    """The run's per-question outputs (JSON Lines, JSON, CSV or Parquet)."""
    run: str | None = None
    """The run's name in the records and tables (default: the file's name)."""
    model: str = ""
    """The model that made the run, when known."""
    question: str = "question"
    """The field holding the question text, matched to the dataset's (normalised: case, spacing)."""
    id: str | None = None
    """An id field matched to the dataset's ids instead of the text."""
    answer: str | None = None
    """The run's own extracted answer (an option label, yes/no, or a number)."""
    output: str | None = None
    """The output text (kept in the records; read by ``reextract`` when given)."""
    gold: str | None = None
    """The run's gold, compared with the dataset's."""
    reextract: str | None = None
    """Read the answer from ``output`` with this olakit extractor instead of taking ``answer``."""


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


def _matcher(questions: list[Question]):
    """question text (normalised) -> the questions with it; the options tell twins apart."""
    by_text: dict[str, list[Question]] = {}
    for q in questions:
        by_text.setdefault(_norm(q.text), []).append(q)
    return by_text


def _options_of(row: dict) -> list[str] | None:
    value = row.get("options") or row.get("choices")
    if isinstance(value, list):
        return [_norm(str(v)).split(")", 1)[-1] for v in value]
    return None


def _find(row: dict, where: str, spec: RunFile, by_id: dict, by_text: dict) -> Question | None:
    if spec.id:
        return by_id.get(str(get(row, spec.id, where)))
    hits = by_text.get(_norm(get(row, spec.question, where)), [])
    if len(hits) > 1:
        options = _options_of(row)
        hits = [q for q in hits if options is not None and [_norm(v) for v in q.options.values()] == options] or hits
    return hits[0] if hits else None


def _label(value, q: Question) -> str | None:
    """A run's answer as a label of the question (or a canonical number); None when it names none."""
    if value is None:
        return None
    if not q.options:
        return gold_number(value)
    text = str(value).strip()
    if text in q.options:
        return text
    lowered = {k.lower(): k for k in q.options}
    return lowered.get(text.lower()) or (text[:1] if text[:1] in q.options and text[1:2] in ("", ")") else None)


def import_runs(spec: ImportSpec, base: Path | None = None) -> tuple[pd.DataFrame, ImportReport]:
    """The records of every run of ``spec`` (files relative to ``base``) and the report of what matched."""
    questions = load_questions(spec.dataset, spec.split, spec.data_dir, spec.dataset_map)
    by_id, by_text = {q.id: q for q in questions}, _matcher(questions)
    records, reports, names = [], [], set()
    for run in spec.runs:
        path = Path(run.file) if base is None or Path(run.file).is_absolute() else base / run.file
        name = run.run or path.stem
        if name in names:
            raise DataError(f"two runs are named {name!r}; give each a distinct 'run'")
        names.add(name)
        report = RunReport(run=name, file=str(path))
        _, rows = read_rows(path)
        note_read(path)  # the run log keeps its sha256
        seen: set[str] = set()
        reader = get_extractor(run.reextract) if run.reextract else None
        for where, row in rows:
            report.rows += 1
            if not run.id and run.question not in row:
                report.skipped += 1
                continue
            q = _find(row, where, run, by_id, by_text)
            if q is None:
                report.unmatched += 1
                if len(report.unmatched_examples) < EXAMPLES:
                    report.unmatched_examples.append(f"{where}: {str(row.get(run.question, ''))[:60]!r}")
                continue
            if q.id in seen:
                report.duplicates += 1
                continue
            seen.add(q.id)
            report.matched += 1
            output = get(row, run.output, where) if run.output else ""
            output = "\n".join(map(str, output)) if isinstance(output, list) else str(output or "")
            labels = list(q.options)
            label = (
                reader(output, labels)
                if reader
                else _label(get(row, run.answer, where, None), q)
                if run.answer
                else None
            )
            gold = q.gold
            if run.gold:
                theirs = _label(get(row, run.gold, where, None), q)
                if theirs != q.gold:
                    report.gold_conflicts.append({"question_id": q.id, "run_gold": theirs, "dataset_gold": q.gold})
                    gold = theirs if spec.gold_from == "run" and theirs is not None else q.gold
            records.append(
                OlaGPTRecord(
                    dataset=q.dataset,
                    question_id=q.id,
                    template=name,
                    notes_strategy=IMPORTED,
                    n_notes=0,
                    sample=0,
                    model=run.model,
                    prompt_hash=prompt_hash(json.dumps(row, sort_keys=True, default=str)[:10000]),
                    raw_output=output,
                    extracted=label,
                    gold=gold,
                    correct=label is not None and label == gold,
                    unparsed_cause="" if label is not None else unparsed_cause(output, labels),
                    source=f"{IMPORTED}:{path.name}",
                    question_hash=question_hash(q),
                )
            )
        report.missing = len(questions) - len(seen)
        report.missing_examples = [q.id for q in questions if q.id not in seen][:EXAMPLES]
        reports.append(report)
    frame = check_frame(to_frame(records, OlaGPTRecord), "imported runs")
    return frame, ImportReport(dataset=spec.dataset, gold_from=spec.gold_from, runs=reports)


def load_import_spec(path: str | Path) -> ImportSpec:
    """An import spec file (YAML or JSON); a run's file is found beside the spec, else in the data directory."""
    path = Path(path)
    spec = read_config_file(ImportSpec, path, "import spec")
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
