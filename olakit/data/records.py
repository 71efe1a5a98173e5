"""Records: one row per model answer, stored as parquet with a checked format version.

Manual corrections (olakit.data.overrides) are applied on load, so every analysis sees them.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
from collections.abc import Iterable
from pathlib import Path

import pandas as pd

from olakit.data import overrides as ov
from olakit.data.files import write_atomic
from olakit.errors import DataError
from olakit.extract import get_extractor
from olakit.types import RECORD_KEY, Record

FORMAT_VERSION = 3
"""Bumped whenever the record columns change meaning; load_records refuses other versions."""
_META_KEY = b"olakit_records_format"
COLUMNS = [f.name for f in dataclasses.fields(Record)]


def to_frame(records: Iterable[Record]) -> pd.DataFrame:
    """Records -> DataFrame with one column per Record field (a shallow copy: normalise makes the list columns
    new lists)."""
    rows = [{name: getattr(r, name) for name in COLUMNS} for r in records]
    df = pd.DataFrame(rows, columns=COLUMNS)
    return normalise(df)


_DTYPES = {
    "n_notes": "int64",
    "sample": "int64",
    "correct": "bool",
    "cached": "bool",
    "prompt_tokens": "Int64",
    "prompt_chars": "Int64",
    "completion_tokens": "Int64",
    "answer_stage": "int64",
    "cost": "Float64",
    "latency": "Float64",
}


def normalise(df: pd.DataFrame) -> pd.DataFrame:
    """Give the record columns their canonical dtypes (so a parquet round trip is exact)."""
    df = df.astype(_DTYPES)
    df["extracted"] = df["extracted"].astype(object).where(df["extracted"].notna(), None)
    df["note_ids"] = df["note_ids"].map(lambda ids: [str(i) for i in ids])
    df["note_sims"] = df["note_sims"].map(lambda sims: [float(x) for x in sims])
    df["question_type"] = df["question_type"].fillna("").astype(str)
    df["finish_reason"] = df["finish_reason"].astype(object).where(df["finish_reason"].notna(), None)
    for col in ("stage2_output", "unparsed_cause", "trace"):
        df[col] = df[col].fillna("").astype(str)
    return df


def check_frame(df: pd.DataFrame, where: str = "records") -> pd.DataFrame:
    """Check columns and key uniqueness; return df."""
    missing = [c for c in COLUMNS if c not in df.columns]
    if missing:
        raise DataError(f"{where}: columns missing: {missing}")
    dup = df.duplicated(RECORD_KEY)
    if dup.any():
        first = df.loc[dup, RECORD_KEY].iloc[0].to_dict()
        raise DataError(f"{where}: {int(dup.sum())} duplicate records, first {first}")
    return df


def save_records(df: pd.DataFrame, path: str | os.PathLike) -> Path:
    """Write records as parquet (atomically: a crash leaves the old file or none, never half a file)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = Path(path)
    check_frame(df, str(path))
    df = ov.without_overrides(df)  # overrides stay in their own file; the records keep what the extractor found
    table = pa.Table.from_pandas(df[COLUMNS], preserve_index=False)
    table = table.replace_schema_metadata({**(table.schema.metadata or {}), _META_KEY: str(FORMAT_VERSION).encode()})
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
    if int(version) != FORMAT_VERSION:
        raise DataError(
            f"{path}: records format version {int(version)}, this olakit reads {FORMAT_VERSION}; "
            "re-create the records with this version"
        )
    df = check_frame(normalise(table.to_pandas()), str(path))
    if apply_overrides:
        df = ov.apply_overrides(df, ov.load_overrides(ov.overrides_path(path)))
    return df


def reextract(df: pd.DataFrame, extractor: str, labels: dict[str, list[str]] | None = None) -> pd.DataFrame:
    """Re-run extraction on raw_output with another extractor; returns a new frame.

    ``labels`` maps question_id -> option labels (default A-E).
    """
    fn = get_extractor(extractor)
    out = df.copy()
    default = ["A", "B", "C", "D", "E"]
    out["extracted"] = [
        fn(text, (labels or {}).get(qid, default)) for text, qid in zip(out["raw_output"], out["question_id"])
    ]
    out["correct"] = out["extracted"].eq(out["gold"]) & out["extracted"].notna()
    return out


def prompt_hash(text: str) -> str:
    """sha256 hex digest of a prompt text."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
