"""Manual extraction corrections (the paper's "manual inspection and correction").

An override replaces one record's extracted answer, with a reason. Overrides live in a JSON Lines file beside
the records (``records.parquet`` -> ``records.overrides.jsonl``); ``load_records`` applies them, so every
analysis sees them, and ``olakit.analysis.tables.override_effect`` says how many changed a result.

``add_override(path, key, "C", "the model wrote 'option three'")``; a later override of the same record wins;
``label=None`` marks an answer as unparsed.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from olakit.data.files import read_jsonl, write_atomic
from olakit.errors import DataError
from olakit.types import OlaGPTRecord

KEY = list(OlaGPTRecord.KEY)
LATER = {"run": "", "model": None}
"""Key columns added after overrides files were first written: a line without them reads as the run's own (run "")
of whichever model the records hold (model None matches any)."""


def overrides_path(records_path: str | os.PathLike) -> Path:
    """The overrides file beside a records file."""
    p = Path(records_path)
    return p.with_name(p.name.split(".")[0] + ".overrides.jsonl")


def load_overrides(path: str | os.PathLike) -> pd.DataFrame:
    """Overrides as a frame (KEY columns, extracted, reason, created); the last one per record wins."""
    path = Path(path)
    cols = [*KEY, "extracted", "reason", "created"]
    if not path.is_file():
        return pd.DataFrame(columns=cols)
    rows = []
    for lineno, obj in read_jsonl(path):
        missing = [k for k in (*KEY, "extracted", "reason") if k not in obj and k not in LATER]
        if missing:
            raise DataError(f"{path} line {lineno}: override lacks {missing}")
        rows.append({c: obj.get(c, LATER.get(c)) for c in cols})
    df = pd.DataFrame(rows, columns=cols)
    df["n_notes"] = df["n_notes"].astype("int64")
    df["sample"] = df["sample"].astype("int64")
    return df.drop_duplicates(KEY, keep="last").reset_index(drop=True)  # model None lines: see apply_overrides


def add_override(
    path: str | os.PathLike, key: dict, label: str | None, reason: str, labels: Sequence[str] | None = None
) -> dict:
    """Append one override (the file is rewritten atomically: a crash leaves the old file)."""
    if not reason or not reason.strip():
        raise DataError("an override needs a reason (what the model actually answered, and why)")
    if labels is not None and label is not None and label not in labels:
        raise DataError(f"override label {label!r} is not an option of the question ({', '.join(labels)})")
    missing = [k for k in KEY if k not in key]
    if missing:
        raise DataError(f"override key lacks {missing}")
    row = {
        **{k: (int(key[k]) if k in ("n_notes", "sample") else str(key[k])) for k in KEY},
        "extracted": label,
        "reason": reason.strip(),
        "created": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
    }
    path = Path(path)
    old = path.read_text(encoding="utf-8") if path.is_file() else ""
    if old and not old.endswith("\n"):
        old += "\n"
    write_atomic(path, lambda tmp: tmp.write_text(old + json.dumps(row, ensure_ascii=False) + "\n", encoding="utf-8"))
    return row


def apply_overrides(df: pd.DataFrame, overrides: pd.DataFrame) -> pd.DataFrame:
    """Records with overrides applied: extracted and correct replaced; ``overridden`` marks the rows, and
    ``extracted_auto`` keeps what the extractor found. With no overrides, ``df`` itself comes back."""
    if overrides.empty:
        return df
    out = df.copy()
    out["extracted_auto"] = out["extracted"]
    out["overridden"] = False
    # a line naming no model (written before the model was a key) stands for each model's record; then, line by
    # line in file order, the last one for a record wins
    rest = [k for k in KEY if k != "model"]
    models = out[[*rest, "model"]].drop_duplicates()
    overrides = overrides.reset_index(drop=True).assign(_line=lambda d: range(len(d)))
    blank = overrides["model"].isna()
    overrides = pd.concat(
        [overrides[~blank], overrides[blank].drop(columns="model").merge(models, on=rest)], ignore_index=True
    ).sort_values("_line", kind="stable")
    ov = overrides.drop_duplicates(KEY, keep="last").set_index(KEY)
    idx = out.set_index(KEY).index
    hit = idx.isin(ov.index)
    if hit.any():
        new = ov.loc[idx[hit], "extracted"].to_numpy(dtype=object)
        out.loc[hit, "extracted"] = [None if (v is None or v != v) else v for v in new]
        out.loc[hit, "overridden"] = True
        out["correct"] = out["extracted"].eq(out["gold"]) & out["extracted"].notna()
    return out


def without_overrides(df: pd.DataFrame) -> pd.DataFrame:
    """Records as the extractor left them: ``extracted`` back from ``extracted_auto`` and ``correct`` recomputed
    (``df`` itself when no override was applied)."""
    if "extracted_auto" not in df:
        return df
    out = df.assign(extracted=df["extracted_auto"])
    out["correct"] = out["extracted"].eq(out["gold"]) & out["extracted"].notna()
    return out.drop(columns=["extracted_auto", "overridden"])
