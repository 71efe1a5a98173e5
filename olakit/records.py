"""Records: one row per model answer, stored as parquet with a checked format version.

Also the importer that turns the OlaGPT authors' recorded gpt-3.5 outputs into records, so the analysis
code serves recorded and live runs alike.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from pathlib import Path
from typing import Iterable

import pandas as pd

from olakit.data import data_file, load_aqua, read_json, require, write_atomic
from olakit.errors import DataError
from olakit.extract import get_extractor
from olakit.types import Record

FORMAT_VERSION = 2
"""Bumped whenever the record columns change meaning; load_records refuses other versions."""
_META_KEY = b"olakit_records_format"
COLUMNS = [f.name for f in dataclasses.fields(Record)]
KEY = ["dataset", "question_id", "template", "notes_strategy", "n_notes", "sample"]

OLAGPT_TEMPLATES = {"dst": "DST", "dt": "DT", "pt": "PT", "st": "ST", "turbo": "turbo"}
"""Folder name in olagpt/data/predictions -> template name. Order = OlaGPT's vote order."""
OLAGPT_STRATEGIES = {"zero-shot": "", "random": "_few_shot_random", "retrieval": "_few_shot_retrieval",
                     "combine": "_few_shot_combine"}
"""Note strategy -> file-name suffix of aqua_predict{suffix}.json."""
OLAGPT_TOP_N = 3
"""Notes per prompt in the OlaGPT runs (their utils/configs.py: notes.top_n = 3)."""


def to_frame(records: Iterable[Record]) -> pd.DataFrame:
    """Records -> DataFrame with one column per Record field."""
    rows = [dataclasses.asdict(r) for r in records]
    df = pd.DataFrame(rows, columns=COLUMNS)
    return normalise(df)


_DTYPES = {"n_notes": "int64", "sample": "int64", "correct": "bool", "cached": "bool",
           "prompt_tokens": "Int64", "completion_tokens": "Int64", "cost": "Float64", "latency": "Float64"}


def normalise(df: pd.DataFrame) -> pd.DataFrame:
    """Give the record columns their canonical dtypes (so a parquet round trip is exact)."""
    df = df.astype(_DTYPES)
    df["extracted"] = df["extracted"].astype(object).where(df["extracted"].notna(), None)
    df["note_ids"] = df["note_ids"].map(lambda ids: [str(i) for i in ids])
    df["note_sims"] = df["note_sims"].map(lambda sims: [float(x) for x in sims])
    df["question_type"] = df["question_type"].fillna("").astype(str)
    return df


def check_frame(df: pd.DataFrame, where: str = "records") -> pd.DataFrame:
    """Check columns and key uniqueness; return df."""
    missing = [c for c in COLUMNS if c not in df.columns]
    if missing:
        raise DataError(f"{where}: columns missing: {missing}")
    dup = df.duplicated(KEY)
    if dup.any():
        first = df.loc[dup, KEY].iloc[0].to_dict()
        raise DataError(f"{where}: {int(dup.sum())} duplicate records, first {first}")
    return df


def save_records(df: pd.DataFrame, path: str | os.PathLike) -> Path:
    """Write records as parquet (atomically: a crash leaves the old file or none, never half a file)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = Path(path)
    check_frame(df, str(path))
    if "extracted_auto" in df:  # overrides stay in their own file; the records keep what the extractor found
        df = df.assign(extracted=df["extracted_auto"])
        df["correct"] = df["extracted"].eq(df["gold"]) & df["extracted"].notna()
    table = pa.Table.from_pandas(df[COLUMNS], preserve_index=False)
    table = table.replace_schema_metadata({**(table.schema.metadata or {}),
                                           _META_KEY: str(FORMAT_VERSION).encode()})
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
        raise DataError(f"{path}: records format version {int(version)}, this olakit reads {FORMAT_VERSION}; "
                        "re-create the records with this version")
    df = check_frame(normalise(table.to_pandas()), str(path))
    if apply_overrides:
        from olakit import overrides as ov

        df = ov.apply_overrides(df, ov.load_overrides(ov.overrides_path(path)))
    return df


def reextract(df: pd.DataFrame, extractor: str, labels: dict[str, list[str]] | None = None) -> pd.DataFrame:
    """Re-run extraction on raw_output with another extractor; returns a new frame.

    ``labels`` maps question_id -> option labels (default A-E).
    """
    fn = get_extractor(extractor)
    out = df.copy()
    default = ["A", "B", "C", "D", "E"]
    out["extracted"] = [fn(text, (labels or {}).get(qid, default))
                        for text, qid in zip(out["raw_output"], out["question_id"])]
    out["correct"] = out["extracted"].eq(out["gold"]) & out["extracted"].notna()
    return out


def prompt_hash(text: str) -> str:
    """sha256 hex digest of a prompt text."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def import_olagpt(data_dir=None, extractor: str = "olagpt") -> pd.DataFrame:
    """The OlaGPT gpt-3.5 outputs on AQuA test (5 templates x 4 note strategies x 254) as records.

    Each prediction is checked against aqua/test.json (same question text, same gold answer) so that a
    shifted or edited file is caught rather than scored against the wrong gold label.
    """
    fn = get_extractor(extractor)
    questions = load_aqua("test", data_dir)
    records = []
    for folder, template in OLAGPT_TEMPLATES.items():
        for strategy, suffix in OLAGPT_STRATEGIES.items():
            path = data_file(data_dir, f"olagpt/data/predictions/{folder}/aqua_predict{suffix}.json")
            doc = read_json(path)
            preds = doc.get("predictions") if isinstance(doc, dict) else None
            if not isinstance(preds, list):
                raise DataError(f"{path}: expected {{\"predictions\": [...]}}")
            if len(preds) != len(questions):
                raise DataError(f"{path}: {len(preds)} predictions, expected {len(questions)} (one per AQuA "
                                "test question)")
            for index, pred in enumerate(preds):
                where = f"{path} prediction {index}"
                qid = require(pred, "question_id", where)
                if not isinstance(qid, int) or not 0 <= qid < len(questions):
                    raise DataError(f"{where}: question_id {qid!r} is not an AQuA test index 0..{len(questions) - 1}")
                q = questions[qid]
                answer = str(require(pred, "answer", where))
                if answer[:1] != q.gold:
                    raise DataError(f"{where}: answer {answer!r} disagrees with aqua/test.json gold {q.gold!r} "
                                    f"for question {qid}")
                prompt = require(pred, "input", where)
                try:
                    recorded_q = json.loads(prompt).get("question", "")
                except (json.JSONDecodeError, AttributeError):
                    raise DataError(f"{where}: field 'input' is not a JSON object string") from None
                if " ".join(recorded_q.replace("question:", "", 1).split()) != " ".join(q.text.split()):
                    raise DataError(f"{where}: question text differs from aqua/test.json question {qid}")
                raw = require(pred, "output", where)
                if not isinstance(raw, str):
                    raise DataError(f"{where}: field 'output' is not text")
                got = fn(raw, list(q.options))
                records.append(Record(
                    dataset="aqua", question_id=q.id, template=template, notes_strategy=strategy,
                    n_notes=0 if strategy == "zero-shot" else OLAGPT_TOP_N, sample=0, model="gpt-3.5-turbo",
                    prompt_hash=prompt_hash(prompt), raw_output=raw, extracted=got, gold=q.gold,
                    correct=got == q.gold, source="olagpt-recorded"))
    return check_frame(to_frame(records), "OlaGPT predictions")
