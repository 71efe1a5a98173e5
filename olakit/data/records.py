"""Records: one row per model answer, stored as parquet with a checked format version.

Manual corrections (olakit.data.overrides) are applied on load, so every analysis sees them.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
from collections.abc import Iterable
from operator import attrgetter
from pathlib import Path

import numpy as np
import pandas as pd

from olakit.answering.extract import UNFINISHED, unparsed_cause
from olakit.data import overrides as ov
from olakit.data.datasets import question_hash
from olakit.data.files import write_atomic
from olakit.errors import DataError
from olakit.types import RECORD_KINDS, OlaGPTRecord, Record

FORMAT_VERSION = 8
"""Bumped whenever the record columns change meaning; load_records refuses other versions (4: each method's own
columns, olakit.types; 5: the question's content hash; 6: the run, and the run and model in the key; 7: olakit's and
the source's verdicts and the reading rule; 8: the thinking kept apart, ``reasoning`` and ``reasoning_tokens``),
except 5, 6 and 7: 5's records are one run's, read with an empty run, 5 and 6 read with no second verdict and no
reading rule (olakit's own verdict, as they had), and all three with no thinking apart (none was kept)."""
_VERDICTS = {"olakit_correct": None, "source_correct": None, "read_rule": ""}
_THINKING = {"reasoning": "", "reasoning_tokens": None}
UPGRADES = {
    5: lambda df: df.assign(run="", **_VERDICTS, **_THINKING),
    6: lambda df: df.assign(**_VERDICTS, **_THINKING),
    7: lambda df: df.assign(**_THINKING),
}
"""Earlier versions load_records reads, and how their frame becomes this version's."""
_META_KEY = b"olakit_records_format"
_KIND_KEY = b"olakit_records_kind"


def columns(kind: type[Record]) -> list[str]:
    """A kind's columns: its key first, then the shared answer columns, then its own others.

    >>> from olakit.types import GeekRecord
    >>> columns(GeekRecord)[:8]
    ['run', 'model', 'dataset', 'question_id', 'row', 'corpus', 'retriever', 'k']
    """
    names = [f.name for f in dataclasses.fields(kind)]
    return [*kind.KEY, *[n for n in names if n not in kind.KEY]]


def condition_columns(kind: type[Record]) -> list[str]:
    """The columns that name a run's cell for a record kind: its key without run, model, question and repeat.

    >>> condition_columns(OlaGPTRecord)
    ['template', 'notes_strategy', 'n_notes']
    """
    return [c for c in kind.KEY if c not in ("run", "model", "dataset", "question_id", "sample")]


COLUMNS = columns(OlaGPTRecord)
"""The columns of OlaGPT records (the kind the explorers and most tables read)."""


def kind_of(df: pd.DataFrame, where: str = "records") -> type[Record]:
    """The record kind whose own columns the frame has."""
    for kind in RECORD_KINDS.values():
        if set(kind.KEY) <= set(df.columns):
            return kind
    raise DataError(f"{where}: not a records table of any kind ({', '.join(RECORD_KINDS)}): columns {list(df.columns)}")


def to_frame(records: Iterable[Record], kind: type[Record] | None = None) -> pd.DataFrame:
    """Records of one kind -> DataFrame with one column per field (``kind``: the record type, needed only when
    there are no records; default OlaGPTRecord)."""
    records = list(records)
    kind = kind or (type(records[0]) if records else OlaGPTRecord)
    if any(type(r) is not kind for r in records):
        raise DataError(f"records of several kinds in one table: {sorted({type(r).__name__ for r in records})}")
    cols = columns(kind)
    values = attrgetter(*cols)
    df = pd.DataFrame.from_records([values(r) for r in records], columns=cols, nrows=len(records))
    return normalise(df)


def frame_of(kind: type[Record], n: int, varying: dict[str, list], constant: dict | None = None) -> pd.DataFrame:
    """to_frame's frame of ``n`` records of ``kind`` given by column, without one record object a row (an import
    of 100k rows): ``varying`` maps fields to ``n`` values each, ``constant`` to one value for every row, and the
    other fields take their defaults. A field unknown to the kind, a required one left out, or a column of another
    length is an error."""
    fields = {f.name: f for f in dataclasses.fields(kind)}
    given = {**(constant or {}), **varying}
    unknown = sorted(set(given) - set(fields))
    if unknown:
        raise TypeError(f"{kind.__name__} has no fields {unknown}")
    wrong = {name: len(v) for name, v in varying.items() if len(v) != n}
    if wrong:
        raise ValueError(f"columns of {kind.__name__}: {n} records, but {wrong}")
    data = {}
    for name in columns(kind):
        f = fields[name]
        if name in varying:
            data[name] = varying[name]
            continue
        if name in given:
            value = given[name]
        elif f.default is not dataclasses.MISSING:
            value = f.default
        elif f.default_factory is not dataclasses.MISSING:
            value = f.default_factory()
        else:
            raise TypeError(f"{kind.__name__}: field {name!r} is required")
        data[name] = (
            [value] * n if not isinstance(value, tuple | list | dict) else [type(value)(value) for _ in range(n)]
        )
    return normalise(pd.DataFrame(data, columns=columns(kind)))


_DTYPES = {
    "n_notes": "int64",
    "sample": "int64",
    "k": "int64",
    "iteration": "int64",
    "correct": "bool",
    "cached": "bool",
    "prompt_tokens": "Int64",
    "prompt_chars": "Int64",
    "completion_tokens": "Int64",
    "reasoning_tokens": "Int64",
    "answer_stage": "int64",
    "cost": "Float64",
    "latency": "Float64",
}


def _lists(column, convert) -> list[list]:
    """Each value of ``column`` as a list of ``convert``ed items (each row its own list; the empty ones, most rows of
    an import, made without a loop in Python over their items)."""
    values = list(column)
    out = [[] for _ in values]
    for i in np.flatnonzero(np.fromiter(map(len, values), dtype=np.int64, count=len(values))):
        out[i] = [convert(x) for x in values[i]]
    return out


def normalise(df: pd.DataFrame) -> pd.DataFrame:
    """Give the record columns their canonical dtypes (so a parquet round trip is exact)."""
    df = df.astype({c: t for c, t in _DTYPES.items() if c in df.columns})
    df["extracted"] = df["extracted"].astype(object).where(df["extracted"].notna(), None)
    df["finish_reason"] = df["finish_reason"].astype(object).where(df["finish_reason"].notna(), None)
    if "note_ids" in df.columns:
        df["note_ids"] = pd.Series(_lists(df["note_ids"], str), index=df.index, dtype=object)
        df["note_sims"] = pd.Series(_lists(df["note_sims"], float), index=df.index, dtype=object)
        df["question_type"] = df["question_type"].fillna("").astype(str)
    for col in ("olakit_correct", "source_correct"):
        df[col] = pd.Series([v if v is None or v is pd.NA or v != v else bool(v) for v in df[col]], index=df.index,
                            dtype=object).where(df[col].notna(), None)  # fmt: skip
    for col in ("stage2_output", "unparsed_cause", "trace", "read_rule", "reasoning"):
        df[col] = df[col].fillna("").astype(str)
    return df


def check_frame(df: pd.DataFrame, where: str = "records") -> pd.DataFrame:
    """Check columns and key uniqueness for the frame's kind; return df."""
    kind = kind_of(df, where)
    missing = [c for c in columns(kind) if c not in df.columns]
    if missing:
        raise DataError(f"{where}: columns missing: {missing}")
    key = list(kind.KEY)
    dup = df.duplicated(key)
    if dup.any():
        first = df.loc[dup, key].iloc[0].to_dict()
        raise DataError(f"{where}: {int(dup.sum())} duplicate records, first {first}")
    return df


def _total(values):
    """The sum of known values; None when one is unknown."""
    values = list(values)
    return None if any(v is None for v in values) else sum(values)


def _cause(first, labels) -> str:
    """Why the first output gave no answer: ``unfinished`` when it was cut off while thinking (olakit.llm.response),
    else as olakit.answering.extract.unparsed_cause reads it."""
    if getattr(first, "unfinished", False):
        return UNFINISHED
    return unparsed_cause(first.text, labels, first.finish_reason)


def _known_total(values):
    """The sum of the values reported; None when none was."""
    known = [v for v in values if v is not None]
    return sum(known) if known else None


def answer_record(
    kind: type[Record], question, prompt: str, first, answer, *, model: str, calls=None, correct=None, **own
):
    """The one constructor of a live answer's record: the question, the prompt sent, the first call's result (its
    text and finish reason), the answer read from it (``label``, ``stage`` and the ``second`` call of
    olakit.answering.second_stage, or None when nothing was read), and ``calls``, every result whose usage the record
    counts (default: the first and second calls). ``correct``: the verdict where the question's kind does not make
    it (a free-text answer: exact match or a judge's). ``own``: the kind's own columns."""
    label = answer.label if answer is not None else None
    second = answer.second if answer is not None else None
    calls = [r for r in (calls if calls is not None else (first, second)) if r is not None]
    stage = answer.stage if answer is not None else 1
    labels = list(question.options)
    open_ended = question.kind == "text"
    unparsed = open_ended or (stage == 1 and label is not None)
    if correct is None:
        correct = label is not None and label == question.gold
    return kind(
        dataset=question.dataset,
        question_id=question.id,
        model=model,
        prompt_hash=prompt_hash(prompt),
        prompt_chars=len(prompt),
        raw_output=first.text or "",
        extracted=label,
        gold=question.gold,
        correct=correct,
        prompt_tokens=_total(r.prompt_tokens for r in calls),
        completion_tokens=_total(r.completion_tokens for r in calls),
        cost=_total(r.cost for r in calls),
        reasoning=getattr(first, "reasoning", "") or "",
        reasoning_tokens=_known_total(getattr(r, "reasoning_tokens", None) for r in calls),
        latency=_total(r.latency for r in calls),
        cached=all(r.cached for r in calls),
        finish_reason=first.finish_reason,
        answer_stage=stage,
        stage2_output=(second.text or "") if second is not None else "",
        unparsed_cause="" if unparsed else _cause(first, labels),
        source="live",
        question_hash=question_hash(question),
        **own,
    )


def save_records(df: pd.DataFrame, path: str | os.PathLike) -> Path:
    """Write records as parquet (atomically: a crash leaves the old file or none, never half a file)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = Path(path)
    kind = kind_of(check_frame(df, str(path)), str(path))
    df = ov.without_overrides(df)  # overrides stay in their own file; the records keep what the extractor found
    table = pa.Table.from_pandas(df[columns(kind)], preserve_index=False)
    meta = {_META_KEY: str(FORMAT_VERSION).encode(), _KIND_KEY: kind.KIND.encode()}
    table = table.replace_schema_metadata({**(table.schema.metadata or {}), **meta})
    return write_atomic(path, lambda tmp: pq.write_table(table, tmp))


def load_records(path: str | os.PathLike, apply_overrides: bool = True) -> pd.DataFrame:
    """Read records written by save_records; DataError on a missing file or another format version.

    Manual corrections in the overrides file beside it (``records.overrides.jsonl``) are applied: the frame
    then has ``overridden`` and ``extracted_auto`` columns too (see olakit.overrides)."""
    import pyarrow.parquet as pq

    path = Path(path)
    if not path.is_file():
        raise DataError(f"{path}: records file not found")
    try:
        table = pq.read_table(path)
    except Exception as exc:  # pyarrow raises several types for a corrupt file
        raise DataError(f"{path}: not a readable parquet file ({exc})") from None
    version = (table.schema.metadata or {}).get(_META_KEY)
    if version is None:
        raise DataError(f"{path}: not an olakit records file (no format version)")
    version = int(version)
    if version != FORMAT_VERSION and version not in UPGRADES:
        raise DataError(
            f"{path}: records format version {version}, this olakit reads {FORMAT_VERSION} (and "
            f"{', '.join(map(str, UPGRADES))}); re-create the records with this version"
        )
    df = table.to_pandas()
    df = UPGRADES[version](df) if version in UPGRADES else df
    kind = kind_of(df, str(path))
    df = check_frame(normalise(df[columns(kind)]), str(path))
    if apply_overrides and kind_of(df) is OlaGPTRecord:
        df = ov.apply_overrides(df, ov.load_overrides(ov.overrides_path(path)))
    return df


def answers_differ(both: pd.DataFrame) -> tuple[int, int]:
    """(the questions, of a two-column frame of extracted answers by question, that either column answered; on how
    many of them the two differ): one cell answered twice (a replicate, a rerun). An unparsed answer is an answer
    of its own ("" against a label differs; two unparsed agree).

    >>> answers_differ(pd.DataFrame({"a": ["A", "B", None, None], "b": ["A", "C", "D", None]}))
    (3, 2)
    """
    seen = both.dropna(how="all")
    return len(seen), int((seen.iloc[:, 0].fillna("") != seen.iloc[:, 1].fillna("")).sum())


REPLICATE_CELL = ["template", "notes_strategy", "n_notes"]
"""What a replicate's disagreement is counted per (its first sample)."""


def replicate_disagreement(first: pd.DataFrame, again: pd.DataFrame) -> pd.DataFrame:
    """Per cell (REPLICATE_CELL) of a run's records and a replicate of some of its questions (olakit.llm.answerer
    .Replicate): the questions asked twice, those with an answer parsed at least once (``n``), how many of these got
    another extracted answer and their share, and how many changed from right to wrong or back: the run-to-run
    disagreement a difference between cells must clear."""
    rows = []
    mine = first[(first["sample"] == 0) & first["question_id"].isin(set(again["question_id"]))]
    theirs = again[again["sample"] == 0].set_index([*REPLICATE_CELL, "question_id"])
    for cell, g in mine.groupby(REPLICATE_CELL, sort=False):
        g = g.set_index([*REPLICATE_CELL, "question_id"])
        shared = g.index.intersection(theirs.index)
        both = pd.DataFrame({"first": g.loc[shared, "extracted"], "again": theirs.loc[shared, "extracted"]})
        n, differ = answers_differ(both)
        flips = int((g.loc[shared, "correct"].astype(bool) != theirs.loc[shared, "correct"].astype(bool)).sum())
        named = {k: v.item() if hasattr(v, "item") else v for k, v in zip(REPLICATE_CELL, cell)}  # JSON for the log
        rows.append({**named, "asked": len(shared), "n": n, "answers_differ": differ,
                     "share_differ": differ / n if n else 0.0, "correct_changed": flips})  # fmt: skip
    columns = [*REPLICATE_CELL, "asked", "n", "answers_differ", "share_differ", "correct_changed"]
    return pd.DataFrame(rows, columns=columns)


def prompt_hash(text: str) -> str:
    """sha256 hex digest of a prompt text."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
