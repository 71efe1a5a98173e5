"""Toy OlaGPT records for tests whose answers are worked out by hand: every field a test does not name has a neutral
value, so a test states only what its example is about. One builder for every test file (they had one each)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pandas as pd

from olakit.data.records import to_frame
from olakit.types import OlaGPTRecord


def record(qid: str, template: str, extracted: str | None, gold: str = "A", **fields) -> OlaGPTRecord:
    """One record: ``template``'s answer ``extracted`` to question ``qid`` (right when it is ``gold``)."""
    base = dict(
        dataset="toy", question_id=qid, template=template, notes_strategy="zero-shot", n_notes=0, sample=0,
        model="m", prompt_hash="h", raw_output="", extracted=extracted, gold=gold, correct=extracted == gold,
    )  # fmt: skip
    return OlaGPTRecord(**{**base, **fields})


def answers_frame(
    answers: dict[str, list], gold: str | list[str] = "A", per_question: Callable | None = None, **fields
) -> pd.DataFrame:
    """The records of ``answers`` (template -> its label for q0, q1, ...; None: unparsed) as the records frame;
    ``gold`` one label for all or one per question; ``per_question(i, label)`` gives fields that vary by question."""
    rows = []
    for template, labels in answers.items():
        golds = gold if isinstance(gold, list) else [gold] * len(labels)
        for i, (label, g) in enumerate(zip(labels, golds, strict=True)):
            extra = per_question(i, label) if per_question else {}
            rows.append(record(f"q{i}", template, label, g, **{**fields, **extra}))
    return to_frame(rows)


def write_run(folder, records: pd.DataFrame, door: str = "run", kind: str = "olagpt", **log) -> Path:
    """A run's folder as olakit writes one (olakit.result: records, run.json), for tests that need a run on disk."""
    from olakit.result import Result
    from olakit.runlog import make_log

    Result(records, make_log(door, kind=kind, **log)).write(folder)
    return Path(folder)
