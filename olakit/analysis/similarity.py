"""Accuracy by band of retrieval similarity (how close the shown notes are to the question), with CIs.
Pure pandas/numpy; no LLM calls.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from olakit.analysis.intervals import accuracy_row
from olakit.analysis.tables import sort_rows
from olakit.config import STATS, Stats

SHOWN_NOTES = "mean cosine similarity of the notes shown (note_sims)"
NEAREST_NOTE = "cosine similarity of the question to its nearest library note"


def similarity_bands(
    df: pd.DataFrame,
    similarity: pd.Series | None = None,
    edges: Sequence[float] = (-1.0, 0.3, 0.45, 0.6, 1.0),
    analysis: Stats = STATS,
    similarity_source: str | None = None,
) -> pd.DataFrame:
    """Accuracy per band of retrieval similarity, per method and strategy, with 95% CIs; the bands of each in the
    order of ``edges`` (they once came in the order the records first had them).

    ``similarity``: per question_id (e.g. nearest_note_similarity: the recorded runs did not keep their notes);
    default: the mean of each record's note_sims (live runs). Records without a similarity are left out. The
    ``similarity_measure`` column of the table names which similarity was used (``similarity_source``, default
    SHOWN_NOTES or NEAREST_NOTE).
    """
    source = similarity_source or (SHOWN_NOTES if similarity is None else NEAREST_NOTE)
    d = df[df["sample"] == 0].copy()
    if similarity is None:
        d["similarity"] = d["note_sims"].map(lambda s: float(np.mean(s)) if len(s) else np.nan)
    else:
        d["similarity"] = d["question_id"].map(similarity)
    d = d.dropna(subset=["similarity"])
    bands = pd.cut(d["similarity"], bins=list(edges), include_lowest=True)
    d["band"] = bands.astype(str)
    rows = []
    for (method, strategy, band), g in d.groupby(["template", "notes_strategy", "band"], sort=False):
        row = accuracy_row(method, strategy, g["correct"].to_numpy(), analysis)
        rows.append(
            {**row, "band": band, "mean_similarity": float(g["similarity"].mean()), "similarity_measure": source}
        )
    if not rows:
        return pd.DataFrame()
    order = {"band": bands.cat.categories.astype(str)}
    return sort_rows(pd.DataFrame(rows), ["method", "notes_strategy", "band"], order)


def nearest_note_similarity(questions, library) -> pd.Series:
    """Per question id: cosine similarity to the most similar note of the library (FAISS)."""
    return pd.Series({q.id: library.ranked_notes(q.text)[0][1] for q in questions}, name="similarity")
