"""Importers of recorded runs: the OlaGPT authors' gpt-3.5 outputs on AQuA become records, so the analysis code
serves recorded and live runs alike.
"""

from __future__ import annotations

import ast
import contextlib
import hashlib
import json
import os

import pandas as pd

from olakit.answering.extract import get_extractor, unparsed_cause
from olakit.data.datasets import question_hash
from olakit.data.files import read_json, require, sha256_cached
from olakit.data.loaders import data_file, load_questions
from olakit.data.provenance import source_digest
from olakit.data.records import check_frame, load_records, prompt_hash, save_records, to_frame
from olakit.env import index_dir
from olakit.errors import DataError
from olakit.names import LLM_VOTE, RECORDED_READER, TURBO, ZERO_SHOT
from olakit.types import OlaGPTRecord

OLAGPT_TEMPLATES = {"dst": "DST", "dt": "DT", "pt": "PT", "st": "ST", "turbo": TURBO}
"""Folder name in olagpt/data/predictions -> template name. Order = OlaGPT's vote order."""
OLAGPT_STRATEGIES = {
    "zero-shot": "",
    "random": "_few_shot_random",
    "retrieval": "_few_shot_retrieval",
    "combine": "_few_shot_combine",
}
"""Note strategy -> file-name suffix of aqua_predict{suffix}.json."""
OLAGPT_TOP_N = 3
"""Notes per prompt in the OlaGPT runs (their utils/configs.py: notes.top_n = 3)."""


RECORDED_TEMPLATES = list(OLAGPT_TEMPLATES.values())
"""The template names of the recorded records, in the order of the folders."""
CANDIDATE_ORDER = ["dt", "dst", "pt", "st", "turbo"]
"""The order of the templates' outputs in every recorded LLM-vote input (and so of the authors' regex vote)."""
PARTS = ("templates", "llm_vote", "st_notes_count")
"""What import_olagpt can read: the 5 templates x 4 strategies (n = 3 notes), the authors' LLM vote over them
(cos_llm_vote/dst_dt_pt_st_turbo), and ST with 1 and 5 notes (st/few_shot_1, st/few_shot_5)."""


RECORDED_SOURCE = "olagpt-recorded"
"""What a run log says the OlaGPT recorded outputs are (no call was made for them)."""
RECORDED_MODEL = "gpt-3.5-turbo"
"""The model that made them."""


def _files(parts) -> list[tuple[str, str, str, int]]:
    """(relative path, template, strategy, n_notes) of every recorded file of ``parts``."""
    unknown = sorted(set(parts) - set(PARTS))
    if unknown:
        raise DataError(f"unknown recorded parts {unknown}; known: {', '.join(PARTS)}")
    out = []
    root = "olagpt/data/predictions"
    for strategy, suffix in OLAGPT_STRATEGIES.items():
        n = 0 if strategy == ZERO_SHOT else OLAGPT_TOP_N
        if "templates" in parts:
            out += [(f"{root}/{f}/aqua_predict{suffix}.json", t, strategy, n) for f, t in OLAGPT_TEMPLATES.items()]
        if "llm_vote" in parts:
            out.append((f"{root}/cos_llm_vote/dst_dt_pt_st_turbo/aqua_predict{suffix}.json", LLM_VOTE, strategy, n))
        if "st_notes_count" in parts and strategy != ZERO_SHOT:
            out += [(f"{root}/st/few_shot_{k}/aqua_predict{suffix}.json", "ST", strategy, k) for k in (1, 5)]
    return out


def _check_candidate_order(pred: dict, where: str) -> None:
    """A recorded LLM vote must list its candidates in CANDIDATE_ORDER (the vote order depends on it)."""
    cands = require(pred, "candidate_outputs", where)
    if isinstance(cands, str):  # some copies hold the list's Python text
        try:
            cands = ast.literal_eval(cands)
        except (ValueError, SyntaxError):
            cands = None
    if not isinstance(cands, list):
        raise DataError(f"{where}: field 'candidate_outputs' is not a list of outputs")
    order = [str(c).split(":", 1)[0].strip() for c in cands]
    if order != CANDIDATE_ORDER:
        raise DataError(
            f"{where}: candidates in the order {order}, expected {CANDIDATE_ORDER} (the order the "
            "authors' vote depends on)"
        )


def import_olagpt(data_dir=None, extractor: str = RECORDED_READER, parts=("templates",)) -> pd.DataFrame:
    """The OlaGPT gpt-3.5 outputs on AQuA test as records: by default the 5 templates x 4 note strategies x 254;
    ``parts`` adds the authors' LLM vote (template ``llm_vote``) and ST with 1 and 5 notes (n_notes 1 and 5).

    Each prediction is checked against aqua/test.json (same question text, same gold answer) so that a shifted or
    edited file is caught rather than scored against the wrong gold label; a recorded LLM vote must list its
    candidates in the order dt, dst, pt, st, turbo.

    The records are kept (index_dir()/recorded, Parquet) under a key of every input's sha256, the extractor, the
    parts and olakit's own source: the next import with the same files and code reads them back (50 ms, not 1 s:
    five notebooks of a sweep read them)."""
    get_extractor(extractor)  # an unknown name is an error before anything is read
    inputs = [data_file(data_dir, "aqua/test.json"), *(data_file(data_dir, rel) for rel, *_ in _files(parts))]
    key = hashlib.sha256(
        json.dumps([extractor, list(parts), source_digest(), [sha256_cached(p) for p in inputs]]).encode()
    ).hexdigest()
    kept = index_dir() / "recorded" / f"{key[:32]}.parquet"
    if kept.is_file():
        with contextlib.suppress(DataError, OSError):  # unreadable (a disk fault): read the files again
            records = load_records(kept, apply_overrides=False)
            os.utime(kept)  # the most recently used are the ones kept
            return records
    records = _import_olagpt(data_dir, extractor, parts)
    with contextlib.suppress(OSError):  # a read-only cache directory costs the next import its second
        save_records(records, kept)
        for old in sorted(kept.parent.glob("*.parquet"), key=lambda p: p.stat().st_mtime)[:-KEEP]:
            old.unlink(missing_ok=True)  # each edit of olakit's code is a new key: the oldest go
    return records


KEEP = 8
"""How many imports of the recorded outputs index_dir()/recorded keeps (the most recently used)."""


def _import_olagpt(data_dir, extractor: str, parts) -> pd.DataFrame:
    fn = get_extractor(extractor)
    questions = load_questions("aqua", "test", data_dir)
    hashes = {q.id: question_hash(q) for q in questions}  # once a question, not once a record
    records = []
    for rel, template, strategy, n_notes in _files(parts):
        path = data_file(data_dir, rel)
        doc = read_json(path)
        preds = doc.get("predictions") if isinstance(doc, dict) else None
        if not isinstance(preds, list):
            raise DataError(f'{path}: expected {{"predictions": [...]}}')
        if len(preds) != len(questions):
            raise DataError(f"{path}: {len(preds)} predictions, expected {len(questions)} (one per AQuA test question)")
        for index, pred in enumerate(preds):
            where = f"{path} prediction {index}"
            qid = require(pred, "question_id", where)
            if not isinstance(qid, int) or not 0 <= qid < len(questions):
                raise DataError(f"{where}: question_id {qid!r} is not an AQuA test index 0..{len(questions) - 1}")
            q = questions[qid]
            answer = str(require(pred, "answer", where))
            if answer[:1] != q.gold:
                raise DataError(
                    f"{where}: answer {answer!r} disagrees with aqua/test.json gold {q.gold!r} for question {qid}"
                )
            prompt = require(pred, "input", where)
            try:
                recorded_q = json.loads(prompt).get("question", "")
            except (json.JSONDecodeError, AttributeError):
                raise DataError(f"{where}: field 'input' is not a JSON object string") from None
            if " ".join(recorded_q.replace("question:", "", 1).split()) != " ".join(q.text.split()):
                raise DataError(f"{where}: question text differs from aqua/test.json question {qid}")
            if template == LLM_VOTE:
                _check_candidate_order(pred, where)
            raw = require(pred, "output", where)
            if not isinstance(raw, str):
                raise DataError(f"{where}: field 'output' is not text")
            got = fn(raw, list(q.options))
            cause = "" if got is not None else unparsed_cause(raw, list(q.options))
            records.append(
                OlaGPTRecord(
                    dataset="aqua",
                    question_id=q.id,
                    template=template,
                    notes_strategy=strategy,
                    n_notes=n_notes,
                    sample=0,
                    model=RECORDED_MODEL,
                    prompt_hash=prompt_hash(prompt),
                    prompt_chars=len(prompt),
                    raw_output=raw,
                    extracted=got,
                    gold=q.gold,
                    correct=got == q.gold,
                    unparsed_cause=cause,
                    source=RECORDED_SOURCE,
                    question_hash=hashes[q.id],
                )
            )
    return check_frame(to_frame(records), "OlaGPT predictions")
