"""One result, from every door: an OlaGPT run, a GEEK run, a review loop, a notes build, an import, a comparison, the
reproduction of the recorded outputs, each notebook and so each sweep entry returns a ``Result``: its records, its
run log (olakit.runlog) and what its kind adds (typed extras, below). ``result.calls`` has one shape everywhere:
per role, and ``total``.

``result.write(out_dir, tables, figures)`` is the one writer: records, other record files, tables (CSV), figures (PNG
and PDF), the cache keys of its answers and run.json, built in a folder beside ``out_dir`` and put in its place in one
rename, so the folder appears whole or not at all: a failure at any step leaves nothing, and a rerun proceeds. A
rerun of the same run replaces the folder and keeps the earlier logs (runs.jsonl), manual corrections and drafts a
person left there; another run's folder is refused.

    res = run(OlaGPTConfig(n_questions=2, templates=["turbo", "ST"], strategies=["zero-shot"]))
    res.write("results/live", report(res))     # olakit.analysis.report: every table of its kind
"""

from __future__ import annotations

import dataclasses
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from olakit.data.files import recover_folder, replace_folder, staging_folder, write_tables
from olakit.data.imported import ImportReport
from olakit.data.provenance import save_figure
from olakit.data.records import load_records, save_records
from olakit.errors import DataError
from olakit.registration import Registered, registration_of
from olakit.runlog import (
    HISTORY_NAME,
    LOG_NAME,
    RunLog,
    claim_folder,
    history_lines,
    log_text,
    plain,
    read_log,
    read_raw,
    records_summary,
)

ANSWERS = "answers.txt"
"""The cache keys of a result's answers, one a line (what a kept result checks are still in the cache)."""
OUTPUTS = {"records.parquet", LOG_NAME, HISTORY_NAME, ANSWERS, "tables", "figures", "registration.json"}
"""What a writer puts in a folder (besides the kind's own files); anything else there (manual corrections, drafts,
examinations after a registered run) is a person's and goes on to the new folder."""


# ---- what each kind adds, typed; the log's ``extra`` is its JSON form


def _fields(cls) -> set[str]:
    return {f.name for f in dataclasses.fields(cls) if f.metadata.get("log", True)}


@dataclass(frozen=True)
class Extras:
    """Base of the typed extras: ``as_dict`` is the log's ``extra`` (fields marked ``log: False`` stay in memory)."""

    def as_dict(self) -> dict:
        return {f.name: _plain(getattr(self, f.name)) for f in dataclasses.fields(self) if f.metadata.get("log", True)}

    @classmethod
    def from_dict(cls, doc: dict, where: str = "run log"):
        unknown = sorted(set(doc) - _fields(cls))
        if unknown:
            raise DataError(f"{where}: extra keys this olakit does not know for its kind: {', '.join(unknown)} "
                            f"(known: {', '.join(sorted(_fields(cls)))})")  # fmt: skip
        return cls(**{k: _typed_value(cls, k, v) for k, v in doc.items()})


def _plain(value):
    if isinstance(value, ImportReport):
        return value.as_dict()
    if isinstance(value, pd.DataFrame):
        return value.to_dict("records")
    return value


def _typed_value(cls, name, value):
    if cls is ImportExtras and name == "report" and isinstance(value, dict):
        return ImportReport.from_dict(value)
    return value


@dataclass(frozen=True)
class OlaGPTExtras(Extras):
    """A live OlaGPT run: its templates in the vote order, what a dataset file got by default, its replicate."""

    templates: list[str] = field(default_factory=list)
    """The templates, in the run's vote order (the ``first`` tie rule follows it)."""
    question_type_prompt: list[str] = field(default_factory=list)
    answer_kinds: list[str] = field(default_factory=list)
    replicate: dict | None = None
    """OlaGPTConfig.replicate: the questions asked again, the replicate index and each cell's disagreement."""


@dataclass(frozen=True)
class RecordedExtras(Extras):
    """The OlaGPT authors' recorded outputs read as records (and their reproduction)."""

    source: str = ""
    model: str = ""
    templates: list[str] = field(default_factory=list)
    n_notes: list[int] = field(default_factory=list)


@dataclass(frozen=True)
class GeekExtras(Extras):
    """A GEEK run: the retriever's recall@k (oracle setting) and the corpus it read; a judge's verdicts."""

    recall: dict = field(default_factory=dict)
    corpus: str = ""
    judge: dict | None = None


@dataclass(frozen=True)
class ReviewExtras(Extras):
    """A review loop: how its answers are scored, and its histories (in memory; the records' traces hold them)."""

    scored_by: str = ""
    """How a free-text answer is scored: ``exact match (normalised)`` or ``judge: MODEL``; empty without any."""
    histories: list = field(default_factory=list, metadata={"log": False})


@dataclass(frozen=True)
class NotesExtras(Extras):
    """A notes build: the library written, how many notes and pool questions."""

    library: str = "notes.jsonl"
    notes: int = 0
    pool: int = 0
    error_book: int = 0
    """Pool questions wrong in all r answers."""
    checked: int = 0
    passed: int = 0
    """Notes checked (the model, shown the note, answering its own question), and how many it answered right."""
    calls: dict = field(default_factory=dict)
    """Calls per step (question types, error book, self-correction, writing or refining notes, checking notes)."""


@dataclass(frozen=True)
class ImportExtras(Extras):
    """An import: the report (matched, skipped, unmatched, gold conflicts per run) and the runs in order."""

    report: ImportReport | None = None
    templates: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class ComparisonExtras(Extras):
    """A comparison: each source, the conditions, the questions left out, the noise floor, the vote order."""

    sources: list = field(default_factory=list)
    conditions: list = field(default_factory=list)
    left_out: list = field(default_factory=list)
    replicates: list = field(default_factory=list)
    repeats_not_compared: int = 0
    templates: list[str] = field(default_factory=list)


EXTRAS = {
    "olagpt": OlaGPTExtras,
    "recorded": RecordedExtras,
    "reproduction": RecordedExtras,
    "geek": GeekExtras,
    "review": ReviewExtras,
    "notes": NotesExtras,
    "import": ImportExtras,
    "compare": ComparisonExtras,
}
"""The kinds of result and what each adds."""
KINDS = tuple(EXTRAS)


def extras_of(log: RunLog, where: str = "run log"):
    """The typed extras of a log's kind (DataError for a kind or a key this olakit does not know)."""
    if log.kind not in EXTRAS:
        raise DataError(f"{where}: kind {log.kind!r}; this olakit knows {', '.join(KINDS)}")
    return EXTRAS[log.kind].from_dict(log.extra, where)


# ---- the result


def _step(name: str) -> None:
    """A writer's step boundary (records, files, tables, figures, answers, log, swap): where a test interrupts it."""


@dataclass
class Result:
    """What a run made: its records, its run log (``extra`` the JSON form of ``extras``), typed extras, the cache
    keys of its answers, other record files (``files``: name -> records frame) and, once written, its folder."""

    records: pd.DataFrame
    log: RunLog
    extras: Any = None
    answers: frozenset = frozenset()
    """The cache keys of every answer the result used."""
    files: dict = field(default_factory=dict)
    """Other files of the result: name -> a records frame (``replicate.parquet``) or text (``notes.jsonl``)."""
    out_dir: Path | None = None

    def __post_init__(self):
        if self.extras is None:
            self.extras = extras_of(self.log)
        elif not isinstance(self.extras, EXTRAS.get(self.log.kind, ())):
            raise TypeError(f"a {self.log.kind!r} result's extras are {EXTRAS[self.log.kind].__name__}")
        self.log = self.log.replace(extra=plain(self.extras.as_dict()))

    @property
    def kind(self) -> str:
        return self.log.kind

    @property
    def calls(self) -> dict:
        """The calls per role (over the parts too) and ``total`` (every role, with the wall time)."""
        return self.log.summary()

    @property
    def registration(self) -> Registered | None:
        return registration_of(self.log)

    @property
    def templates(self) -> list[str]:
        """The conditions a vote combines, in vote order (OlaGPT templates, imported runs), where the kind has them."""
        return list(getattr(self.extras, "templates", []) or [])

    def replace(self, **changes) -> Result:
        if "extras" in changes and "log" not in changes:
            changes["log"] = self.log
        return dataclasses.replace(self, **changes)

    def with_part(self, name: str, other: Result) -> Result:
        """This result with another run's as its part ``name`` (its log in ``parts``, its answers added)."""
        return self.replace(log=self.log.with_part(name, other.log), answers=self.answers | other.answers)

    def write(
        self,
        out_dir: str | os.PathLike,
        tables: dict[str, pd.DataFrame] | None = None,
        figures: dict | None = None,
        *,
        figures_dir: str | os.PathLike | None = None,
    ) -> Result:
        """Write the result into ``out_dir``, whole or not at all (module docstring); figures are closed, and stamped
        "embedded test model: plumbing, not results" when that model made any part of it; with ``figures_dir``, the
        figures go there instead (named in the log by their absolute paths). Returns the result with the log written."""
        folder = Path(out_dir)
        recover_folder(folder)
        claim_folder(folder, self.log)
        tables, figures = dict(tables or {}), dict(figures or {})
        old = read_raw(folder)
        staging = staging_folder(folder)
        try:
            _step("records")
            save_records(self.records, staging / "records.parquet")
            _step("files")
            for name, content in self.files.items():
                if isinstance(content, pd.DataFrame):
                    save_records(content, staging / name)
                else:
                    (staging / name).write_text(content, encoding="utf-8")
            _step("tables")
            write_tables(tables, staging)
            _step("figures")
            shown = {}
            if self.log.embedded:  # every figure a run of the embedded model made says so, whichever door drew it
                for fig in figures.values():
                    stamp(fig)
            for name, fig in figures.items():
                if figures_dir is None:
                    shown[name] = [str(p.relative_to(staging)) for p in save_figure(fig, staging / "figures", name)]
            _step("answers")
            if self.answers:
                (staging / ANSWERS).write_text("".join(f"{k}\n" for k in sorted(self.answers)))
            _step("log")
            for entry in folder.iterdir() if old is not None else ():  # a person's files go on (corrections, drafts)
                if entry.name not in OUTPUTS | set(self.files) | set((old.get("outputs") or {}).get("files", [])):
                    copy = shutil.copytree if entry.is_dir() else shutil.copy2
                    copy(entry, staging / entry.name)
            if old is not None and old.get("run_id") != self.log.run_id:
                (staging / HISTORY_NAME).write_text(history_lines(folder), encoding="utf-8")
            if figures_dir is not None:
                where = Path(figures_dir).resolve()
                shown = {name: [str(where / f"{name}.{ext}") for ext in ("png", "pdf")] for name in figures}
            outputs = {
                **self.log.outputs,
                "records": records_summary(self.records),
                "files": sorted(self.files),
                "tables": sorted(tables),
                "figures": shown,
                **({"answers": {"file": ANSWERS, "count": len(self.answers)}} if self.answers else {}),
            }
            log = self.log.replace(outputs=outputs)
            (staging / LOG_NAME).write_text(log_text(log), encoding="utf-8")
            _step("swap")
            replace_folder(staging, folder)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
        if figures_dir is not None:  # shared with other runs' figures: each file written whole
            for name, fig in figures.items():
                save_figure(fig, figures_dir, name)
        if figures:
            import matplotlib.pyplot as plt

            for fig in figures.values():
                plt.close(fig)
        return self.replace(log=log, out_dir=folder)


def read_result(folder: str | os.PathLike) -> Result:
    """A written result back: its records (with manual corrections), its log, extras, answers and other files."""
    folder = Path(folder)
    log = read_log(folder)
    if log is None:
        raise DataError(f"{folder}: no run log there ({LOG_NAME}); give a folder a run wrote")
    keys = (folder / ANSWERS).read_text().split() if (folder / ANSWERS).is_file() else []
    files = {}
    for name in log.outputs.get("files", []):
        path = folder / name
        files[name] = load_records(path) if name.endswith(".parquet") else path.read_text(encoding="utf-8")
    return Result(load_records(folder / "records.parquet"), log, answers=frozenset(keys), files=files, out_dir=folder)


EMBEDDED_BANNER = "embedded test model: plumbing, not results"
"""What a figure made (in part) by the embedded 0.5B model says: its accuracies exercise the plumbing only."""


def stamp(fig) -> None:
    """The embedded-model banner across the top of a figure, above its own titles (a figure's own suptitle, such as
    E-KAR's "validation (n) vs the paper's test (335)", stays: the banner is a text of its own above it)."""
    fig.text(0.5, 1.08 if fig.get_suptitle() else 1.04, f"[{EMBEDDED_BANNER}]", ha="center", va="bottom", fontsize=9,
             color="#a00")  # fmt: skip
