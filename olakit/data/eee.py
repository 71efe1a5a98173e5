"""Every Eval Ever instance-level files, through its own package (``every_eval_ever``: its pydantic models of the
instance-level schema): olakit's records written as them (``export_eee``, ``olakit export``), so other tools read
olakit runs, and read back as runs to import (``eee_rows``, the ``eee`` format of olakit.data.imported).

One line per record: ``sample_id`` the question's id, ``sample_hash`` its content hash, ``model_id`` the model,
``evaluation_name`` the dataset and the parts of the record's condition that vary in the file (``aqua/ST/zero-shot``,
``aqua/PoT``), the input (the question text, the
gold as reference, the options), the output, the extracted answer as the terminal answer attribution (none when
unparsed), the verdict, token usage and latency where known, and the record's own key, unparsed cause and source as
metadata (``olakit.template``, ...; the schema's metadata values are strings).

The package declares Python >= 3.12 and the dependencies of its other parts (converters, uploads); the two modules
olakit uses (``instance_level_types``, ``schema``) need only pydantic and run on 3.11: ``make setup`` installs it
with ``pip install --no-deps --ignore-requires-python every-eval-ever==0.3.0``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pandas as pd

from olakit.data.files import write_atomic
from olakit.errors import DataError
from olakit.types import Question

PACKAGE = "every-eval-ever==0.3.0"
INSTALL = f"pip install --no-deps --ignore-requires-python {PACKAGE}"


def _package():
    try:
        from every_eval_ever import instance_level_types as types
        from every_eval_ever.schema import get_schema_version
    except ImportError:
        raise DataError(f"Every Eval Ever files need its package: {INSTALL} (make setup installs it)") from None
    return types, get_schema_version()


def export_eee(
    records: pd.DataFrame,
    path: str | os.PathLike,
    questions: dict[str, Question],
    *,
    evaluation_id: str,
    cells: list[str],
) -> Path:
    """Write ``records`` as an Every Eval Ever instance-level JSON Lines file (atomically): each line built and
    validated by the package's ``InstanceLevelEvaluationLog``. ``cells``: the columns that name a record's condition
    (its kind's key after run, model and question); ``questions``: the questions' text and options by id."""
    types, version = _package()
    missing = sorted(set(records["question_id"]) - set(questions))
    if missing:
        raise DataError(f"export: {len(missing)} records' questions are not loaded, first {missing[:3]}")
    named = [c for c in cells if records[c].nunique() > 1] or cells[:1]  # what tells the file's conditions apart
    keyed = ["run", *cells, *(["sample"] if "sample" in records.columns else [])]
    lines = []
    for r in records.itertuples(index=False):
        q = questions[r.question_id]
        name = "/".join([r.dataset, *(str(getattr(r, c)) for c in named)])
        answered = r.extracted is not None and r.extracted == r.extracted
        attribution = (
            [types.AnswerAttributionItem(turn_idx=0, source="output.raw", extracted_value=str(r.extracted),
                                         extraction_method="olakit", is_terminal=True)]
            if answered else []
        )  # fmt: skip
        tokens = None
        thought = getattr(r, "reasoning", "") or ""  # the thinking, in the schema's own field for it
        reasoning_tokens = getattr(r, "reasoning_tokens", None)
        reasoning_tokens = int(reasoning_tokens) if pd.notna(reasoning_tokens) else None
        if pd.notna(r.prompt_tokens) and pd.notna(r.completion_tokens):
            p, c = int(r.prompt_tokens), int(r.completion_tokens)
            tokens = types.TokenUsage(input_tokens=p, output_tokens=c, total_tokens=p + c,
                                      reasoning_tokens=reasoning_tokens)  # fmt: skip
        latency = types.Performance(latency_ms=float(r.latency) * 1000) if pd.notna(r.latency) else None
        key = {c: getattr(r, c) for c in keyed}
        log = types.InstanceLevelEvaluationLog(
            schema_version=version,
            evaluation_id=evaluation_id,
            model_id=r.model or "unknown",
            evaluation_name=name,
            sample_id=r.question_id,
            sample_hash=r.question_hash or None,
            interaction_type=types.InteractionType.single_turn,
            input=types.Input(raw=q.text, reference=[q.gold], choices=list(q.options.values()) or None),
            output=types.Output(raw=[r.raw_output], reasoning_trace=[thought] if thought else None),
            answer_attribution=attribution,
            evaluation=types.Evaluation(score=float(bool(r.correct)), is_correct=bool(r.correct)),
            token_usage=tokens,
            performance=latency,
            # the schema's metadata values are strings: the record's key, why it is unparsed, where it came from
            metadata={f"olakit.{k}": str(v) for k, v in key.items()}
            | {"olakit.unparsed_cause": r.unparsed_cause, "olakit.source": r.source,
               "olakit.labels": json.dumps(list(q.options))},
        )  # fmt: skip
        lines.append(json.dumps(log.model_dump(mode="json", exclude_none=True), ensure_ascii=False, allow_nan=False))
    text = "\n".join(lines) + ("\n" if lines else "")
    return write_atomic(Path(path), lambda tmp: tmp.write_text(text, encoding="utf-8"))


def eee_rows(path: Path) -> list[tuple[str, str, list[tuple[str, dict]]]]:
    """An Every Eval Ever instance-level file, each line read by the package's model: [(run, model, rows)], one run
    per (model, evaluation name); a row has ``id``, ``question``, ``choices``, ``answer`` (the terminal attribution's
    value), ``output``, ``target`` and the file's own verdict ``correct``."""
    types, _ = _package()
    runs: dict[tuple[str, str], list] = {}
    with open(path, encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                log = types.InstanceLevelEvaluationLog.model_validate_json(line)
            except ValueError as exc:
                first = str(exc).splitlines()[:3]
                raise DataError(f"{path} line {n}: not an Every Eval Ever instance ({' / '.join(first)})") from None
            final = [a for a in log.answer_attribution if a.is_terminal]
            repeat = str((log.metadata or {}).get("olakit.sample", ""))  # what olakit's own export adds
            row = {
                "id": log.sample_id,
                "question": log.input.raw,
                "choices": log.input.choices or [],
                "answer": final[-1].extracted_value if final else None,
                "output": log.output.raw[0] if log.output and log.output.raw else "",
                "reasoning": "\n\n".join(log.output.reasoning_trace or []) if log.output else "",
                "reasoning_tokens": log.token_usage.reasoning_tokens if log.token_usage else None,
                "target": log.input.reference[0] if log.input.reference else None,
                "correct": log.evaluation.is_correct,
                "repeat": int(repeat) if repeat.isdigit() else 0,
            }
            runs.setdefault((log.model_id, log.evaluation_name), []).append((f"{path} line {n}", row))
    return [(name, model, rows) for (model, name), rows in runs.items()]
