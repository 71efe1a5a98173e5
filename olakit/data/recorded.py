"""Importers of recorded runs: the OlaGPT authors' gpt-3.5 outputs on AQuA become records, so the analysis code
serves recorded and live runs alike.
"""

from __future__ import annotations

import json

import pandas as pd

from olakit.data.files import read_json, require
from olakit.data.loaders import data_file, load_aqua
from olakit.data.records import check_frame, prompt_hash, to_frame
from olakit.errors import DataError
from olakit.extract import get_extractor
from olakit.names import TURBO
from olakit.types import Record

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
"""The template names of the recorded records, in OlaGPT's vote order."""


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
                raise DataError(f'{path}: expected {{"predictions": [...]}}')
            if len(preds) != len(questions):
                raise DataError(
                    f"{path}: {len(preds)} predictions, expected {len(questions)} (one per AQuA test question)"
                )
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
                raw = require(pred, "output", where)
                if not isinstance(raw, str):
                    raise DataError(f"{where}: field 'output' is not text")
                got = fn(raw, list(q.options))
                records.append(
                    Record(
                        dataset="aqua",
                        question_id=q.id,
                        template=template,
                        notes_strategy=strategy,
                        n_notes=0 if strategy == "zero-shot" else OLAGPT_TOP_N,
                        sample=0,
                        model="gpt-3.5-turbo",
                        prompt_hash=prompt_hash(prompt),
                        prompt_chars=len(prompt),
                        raw_output=raw,
                        extracted=got,
                        gold=q.gold,
                        correct=got == q.gold,
                        source="olagpt-recorded",
                    )
                )
    return check_frame(to_frame(records), "OlaGPT predictions")
