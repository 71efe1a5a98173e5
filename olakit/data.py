"""Dataset loaders (AQuA, E-KAR zh, StrategyQA, OlaGPT notes) and data-directory resolution.

Every loader validates as it reads: a malformed line, a question without options or a gold label that is
not among the options raises DataError naming the file and line.
"""
from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any, Iterator

from olakit.errors import DataError, lookup
from olakit.types import Question

REPO_ROOT = Path(__file__).resolve().parent.parent
FETCHED_DIR = REPO_ROOT / "data" / "raw"
"""Where ``olakit data fetch`` puts downloads by default (git-ignored)."""
SHARED_DIR = REPO_ROOT.parent / "shared" / "data"
"""The workplace copy of the same files, next to the checkout."""
ENV_DATA_DIR = "OLAKIT_DATA_DIR"


def resolve_data_dir(data_dir: str | os.PathLike | None = None) -> Path:
    """Find the data directory: the argument, else $OLAKIT_DATA_DIR, else data/raw, else ../shared/data.

    Raises DataError when the chosen directory does not exist or none is found.
    """
    if data_dir is None:
        data_dir = os.environ.get(ENV_DATA_DIR) or None
    if data_dir is not None:
        path = Path(data_dir).expanduser()
        if not path.is_dir():
            raise DataError(f"data directory {path} does not exist; run `olakit data fetch --dest {path}` "
                            f"or point --data-dir / ${ENV_DATA_DIR} at the data")
        return path
    for candidate in (FETCHED_DIR, SHARED_DIR):
        if (candidate / "aqua" / "test.json").is_file():
            return candidate
    raise DataError(f"no data directory found (looked at ${ENV_DATA_DIR}, {FETCHED_DIR}, {SHARED_DIR}); "
                    "run `olakit data fetch` or set --data-dir")


def data_file(data_dir: str | os.PathLike | None, rel: str) -> Path:
    """Path of ``rel`` inside the data directory; DataError if the file is missing."""
    path = resolve_data_dir(data_dir) / rel
    if not path.is_file():
        raise DataError(f"{path}: file not found; the data directory is incomplete "
                        "(run `olakit data fetch` to download it)")
    return path


def write_atomic(path: str | os.PathLike, write) -> Path:
    """Call ``write(tmp)`` on a temporary file beside ``path``, then rename it into place: a crash leaves the old
    file or none, never half a file. ``write_atomic(p, lambda t: t.write_text("x"))`` -> ``p``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    write(tmp)
    os.replace(tmp, path)
    return path


def read_jsonl(path: Path) -> Iterator[tuple[int, dict]]:
    """Yield (line number, object) for each non-blank line of a JSON Lines file."""
    with open(path, encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                raise DataError(f"{path} line {lineno}: malformed JSON ({exc.msg} at column {exc.colno})") from None
            if not isinstance(obj, dict):
                raise DataError(f"{path} line {lineno}: expected a JSON object, got {type(obj).__name__}")
            yield lineno, obj


def read_json(path: Path) -> Any:
    """Load a whole JSON file; a syntax error names file and line."""
    try:
        with open(path, encoding="utf-8") as fh:
            return json.load(fh)
    except json.JSONDecodeError as exc:
        raise DataError(f"{path} line {exc.lineno}: malformed JSON ({exc.msg} at column {exc.colno})") from None


def require(obj: dict, key: str, where: str):
    """``obj[key]`` or DataError naming the missing field and where."""
    if key not in obj:
        raise DataError(f"{where}: field {key!r} missing")
    return obj[key]


def make_question(where: str, *, id: str, dataset: str, text: str, options: dict[str, str], gold: str,
                  rationale: str = "", meta: dict | None = None) -> Question:
    """Build a Question after checking it has options and a gold label among them."""
    if not options:
        raise DataError(f"{where}: question {id!r} has no options")
    if gold not in options:
        raise DataError(f"{where}: gold label {gold!r} of question {id!r} is not among the options "
                        f"{sorted(options)}")
    return Question(id=id, dataset=dataset, text=text, options=dict(options), gold=gold,
                    rationale=rationale, meta=meta or {})


_AQUA_OPTION = re.compile(r"^\s*([A-Z])\s*\)\s*(.*)$", re.S)


def parse_aqua_options(options: list, where: str) -> dict[str, str]:
    """``["A)12", "B)13"]`` -> ``{"A": "12", "B": "13"}``."""
    out: dict[str, str] = {}
    for opt in options:
        m = _AQUA_OPTION.match(str(opt))
        if not m:
            raise DataError(f"{where}: option {opt!r} is not of the form 'A)text'")
        out[m.group(1)] = m.group(2).strip()
    return out


def load_aqua(split: str = "test", data_dir=None) -> list[Question]:
    """AQuA-RAT ``test`` or ``dev`` (254 questions each, 5 options A-E). Ids are ``"{split}-{index}"``."""
    if split not in ("test", "dev"):
        raise DataError(f"AQuA split {split!r} not available here; use 'test' or 'dev'")
    path = data_file(data_dir, f"aqua/{split}.json")
    questions = []
    for index, (lineno, obj) in enumerate(read_jsonl(path)):
        where = f"{path} line {lineno}"
        options = parse_aqua_options(require(obj, "options", where), where)
        questions.append(make_question(
            where, id=f"{split}-{index}", dataset="aqua", text=require(obj, "question", where).strip(),
            options=options, gold=str(require(obj, "correct", where)).strip(),
            rationale=obj.get("rationale", "")))
    return questions


def load_ekar(split: str = "validation", data_dir=None) -> list[Question]:
    """E-KAR Chinese ``train`` (1155) or ``validation`` (165): 4 options A-D, Chinese text.

    The blind test splits have no gold labels and are refused.
    """
    if split not in ("train", "validation"):
        raise DataError(f"E-KAR split {split!r} has no gold labels here; use 'train' or 'validation'")
    path = data_file(data_dir, f"ekar_chinese/{split}.json")
    questions = []
    for lineno, obj in read_jsonl(path):
        where = f"{path} line {lineno}"
        choices = require(obj, "choices", where)
        labels, texts = choices.get("label", []), choices.get("text", [])
        if len(labels) != len(texts):
            raise DataError(f"{where}: {len(labels)} choice labels but {len(texts)} choice texts")
        explanation = obj.get("explanation") or []
        questions.append(make_question(
            where, id=require(obj, "id", where), dataset="ekar_zh", text=require(obj, "question", where),
            options=dict(zip(labels, texts)), gold=require(obj, "answerKey", where),
            rationale="\n".join(explanation) if isinstance(explanation, list) else str(explanation),
            meta={"relation": obj.get("relation")}))
    return questions


def load_strategyqa(split: str = "dev", data_dir=None) -> list[Question]:
    """StrategyQA ``train`` (2061) or ``dev`` (229): yes/no questions with options ``{"yes", "no"}``."""
    if split not in ("train", "dev"):
        raise DataError(f"StrategyQA split {split!r} not available here; use 'train' or 'dev'")
    path = data_file(data_dir, f"strategyqa/{split}.json")
    items = read_json(path)
    if not isinstance(items, list):
        raise DataError(f"{path}: expected a JSON array of questions")
    questions = []
    for index, obj in enumerate(items):
        where = f"{path} item {index}"
        answer = require(obj, "answer", where)
        if not isinstance(answer, bool):
            raise DataError(f"{where}: answer {answer!r} is not true/false")
        questions.append(make_question(
            where, id=require(obj, "qid", where), dataset="strategyqa", text=require(obj, "question", where),
            options={"yes": "yes", "no": "no"}, gold="yes" if answer else "no",
            rationale=" ".join(obj.get("facts", [])),
            meta={"term": obj.get("term"), "decomposition": obj.get("decomposition", [])}))
    return questions


LOADERS = {"aqua": load_aqua, "ekar_zh": load_ekar, "strategyqa": load_strategyqa}


def load_questions(dataset: str, split: str, data_dir=None) -> list[Question]:
    """Load a dataset by name: ``load_questions("aqua", "test")``."""
    return lookup(LOADERS, dataset, "dataset")(split, data_dir=data_dir)


def load_olagpt_notes(data_dir=None) -> list[dict]:
    """The OlaGPT AQuA notes library (81 notes from AQuA train, each with an LLM-labelled ``llm_task_type``).

    Returns dicts in the paper's note schema: id, source, question, options, answer, error_reason,
    model_expert, explanation, llm_task_type. The repository has no error_reason (empty here).
    """
    path = data_file(data_dir, "olagpt/notes/note_data/llm_data/aqua.json")
    notes = []
    for index, (lineno, obj) in enumerate(read_jsonl(path)):
        where = f"{path} line {lineno}"
        raw = require(obj, "question", where)
        m = re.match(r"\s*question:\s*(.*?)\n\s*choices:\s*\n(.*)", raw, re.S)
        if not m:
            raise DataError(f"{where}: note question is not of the form 'question: ...\\n\\nchoices: ...'")
        options = parse_aqua_options([ln for ln in m.group(2).splitlines() if ln.strip()], where)
        answer = require(obj, "answer", where)
        if not options or answer[:1] not in options:
            raise DataError(f"{where}: note answer {answer!r} is not among the options {sorted(options)}")
        notes.append({"id": f"olagpt-aqua-{index}", "source": "olagpt", "question": m.group(1).strip(),
                      "options": options, "answer": answer, "error_reason": "",
                      "model_expert": obj.get("expert", ""), "explanation": obj.get("explanation", ""),
                      "llm_task_type": require(obj, "llm_task_type", where)})
    return notes
