"""Your own dataset: a question file (JSON Lines, JSON, CSV, Parquet; from a notebook a pandas DataFrame or a
``datasets.Dataset``) and a small mapping that says which field is what (DatasetMap). The common layouts are
recognised without a mapping (``recognise``): GSM8K (``question``, ``answer`` ending ``#### N``), CommonsenseQA
(``question.stem``, ``question.choices[].label/text``, ``answerKey``), ARC/E-KAR (``choices.label/text``), the
OpenCompass/EvalScope columns (``question, A, B, C, D, answer[, explanation]``), AQuA (``options: ["A)..."]``,
``correct``), and yes/no or numeric answers beside a ``question``.

A field is named by its path: ``question.stem``; ``question.choices[].text`` takes ``text`` from every element of
the list ``question.choices``. Every row is checked as it is read; a bad one is one DataError naming the file, the
line (or row) and the field, and nothing is returned:

``load_file("gsm8k/test.jsonl")`` -> 1319 numeric Questions, gold ``"18"``, rationale the worked solution.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import string
import unicodedata
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

from pydantic import field_validator

from olakit.answering.read import read_number, read_yes_no
from olakit.config import Config, ConfigError
from olakit.data.files import read_json, read_jsonl
from olakit.errors import DataError
from olakit.names import DATASET_FORMATS
from olakit.types import Question

FORMATS = DATASET_FORMATS
ANSWER_FORMS = ("auto", "label", "index", "option_text", "yes_no", "number", "text")
"""How a row's answer field is given: an option ``label``, a 0-based ``index`` into the options, the option's
text (``option_text``), a ``yes_no`` (true/false, yes/no), a ``number`` (or a solution ending ``#### N``), free
``text``; ``auto`` tells them apart (a label first, then an index, then an option's text)."""
SPLIT_WORDS = {"test", "dev", "train", "validation", "val", "eval"}


class DatasetMap(Config):
    """Which field of a question file is what. Every field but ``question`` and ``answer`` is optional."""

    name: str | None = None
    """The dataset's name in the records (default: the file's name, or its folder's when the file is named after a
    split, so gsm8k/test.jsonl is ``gsm8k``)."""
    id: str | None = None
    """The id field (default: ``id``, ``qid`` or ``question_id`` when there is one, else the row's position), or a
    pattern of ``{index}`` (the position) and ``{split}`` (AQuA's ``{split}-{index}``)."""
    question: str | tuple[str, ...] = "question"
    """The question text's field (kept as given, whitespace included: the prompts, and so the cache, see it so), or
    several fields joined by ``question_join`` (SVAMP's ``[Body, Question]``)."""
    question_join: str = " "
    """What joins a question given as several fields."""
    choices: str | tuple[str, ...] | None = None
    """The options: a field holding a list (labelled A, B, C, ...; ``"A)text"`` items keep their labels), a label ->
    text mapping, or with ``labels`` the texts; or several column names, one per option (empty cells skipped)."""
    labels: str | None = None
    """The field of the option labels, parallel to ``choices`` (``choices.label``)."""
    scores: str | None = None
    """A field of option text -> score (BIG-bench's ``target_scores``): the options are its texts, in order,
    labelled A, B, ...; the gold is the one highest-scored (``answer`` is not read)."""
    answer: str = "answer"
    """The answer's field."""
    answer_form: Literal["auto", "label", "index", "option_text", "yes_no", "number", "text"] = "auto"
    """How the answer is given (ANSWER_FORMS)."""
    rationale: str | None = None
    """The explanation's field (the notes' explanation when a library is built from the dataset)."""
    rationale_join: str = "\n"
    """What joins a rationale given as a list (StrategyQA's facts: a space)."""
    meta: tuple[str, ...] = ()
    """Further fields to keep with each question (``Question.meta``), by path."""
    cluster: str | None = None
    """The field naming the group a question belongs to (a shared passage, a source, a question type): answers
    within a group are not independent, and every door's tables give the cluster-robust standard errors beside the
    independent ones (``Question.meta["cluster"]``; docs/statistics.md)."""

    @field_validator("question", mode="before")
    @classmethod
    def _joined(cls, value):
        return tuple(value) if isinstance(value, list) else value

    @field_validator("choices", mode="before")
    @classmethod
    def _columns(cls, value):
        """``A|B|C|D`` or a list names one column per option; a single path stays a path."""
        if isinstance(value, str) and "|" in value:
            return tuple(v.strip() for v in value.split("|") if v.strip())
        return tuple(value) if isinstance(value, list) else value


def parse_map(text: str | dict | None) -> DatasetMap | None:
    """A mapping given as ``question=question.stem,answer=answerKey``, YAML/JSON text, a YAML/JSON file's path, or
    a dict; None when none is given."""
    if text is None or isinstance(text, DatasetMap):
        return text
    if isinstance(text, dict):
        return DatasetMap(**text)
    import yaml

    if Path(text).is_file():
        text = Path(text).read_text(encoding="utf-8")
        value = yaml.safe_load(text)
    elif text.strip().startswith("{"):
        value = yaml.safe_load(text)
    else:
        value = {}
        for part in re.split(r",(?![^\[]*\])", text):
            key, sep, val = part.partition("=")
            if not sep:
                raise ConfigError(f"dataset map {text!r}: {part!r} is not NAME=FIELD")
            value[key.strip()] = yaml.safe_load(val.strip()) if val.strip().startswith("[") else val.strip()
    if not isinstance(value, dict):
        raise ConfigError(f"dataset map {text[:60]!r}: give NAME=FIELD pairs or a mapping")
    return DatasetMap(**value)


def map_beside(path: Path) -> Path:
    """Where a file's own mapping is kept: ``<file>.map.yaml`` beside it (``test.jsonl.map.yaml``)."""
    return path.with_name(path.name + ".map.yaml")


# ---- reading rows


def read_rows(source, header: bool = True) -> tuple[str, list[tuple[str, dict]]]:
    """(a name for messages, [(where, row)]) from a file path, a DataFrame or a datasets.Dataset; a CSV file
    without a ``header`` (MMLU's) has its columns named by position, ``0``, ``1``, ..."""
    if isinstance(source, str | os.PathLike):
        path = Path(source)
        fmt = FORMATS.get(path.suffix.lower())
        if fmt is None:
            raise DataError(f"{path}: unknown dataset format {path.suffix!r}; use one of {', '.join(FORMATS)}")
        if not path.is_file():
            raise DataError(f"{path}: dataset file not found")
        if fmt == "jsonl" or (fmt == "json" and _is_json_lines(path)):  # AQuA's test.json: JSON Lines as .json
            at = f"{path} line "
            rows = [(at + str(n), obj) for n, obj in read_jsonl(path)]
        elif fmt == "json":
            data = read_json(path)
            if isinstance(data, dict):  # {"data": [...]}, or a BIG-bench task's {"examples": [...]}
                data = data.get("data", data.get("examples", data))
            if not isinstance(data, list) or not all(isinstance(x, dict) for x in data):
                raise DataError(
                    f"{path}: expected a JSON array of objects (or {{'data': [...]}}, {{'examples': [...]}})"
                )
            rows = [(f"{path} item {i}", obj) for i, obj in enumerate(data)]
        else:
            import pandas as pd

            try:
                if fmt == "csv":
                    df = pd.read_csv(path, dtype=str, keep_default_na=False, header=0 if header else None)
                    df.columns = [str(c) for c in df.columns]
                else:
                    df = pd.read_parquet(path)
            except Exception as exc:  # pandas raises many types for a malformed file
                raise DataError(f"{path}: not a readable {fmt} file ({exc})") from None
            first = 2 if fmt == "csv" and header else 1 if fmt == "csv" else 0  # a CSV's header is line 1
            rows = [(f"{path} {'line' if fmt == 'csv' else 'row'} {i + first}", r) for i, r in enumerate(_records(df))]
        where = str(path)
    else:
        df = source.to_pandas() if hasattr(source, "to_pandas") and not hasattr(source, "iloc") else source
        if not hasattr(df, "iloc"):
            raise DataError(f"a dataset is a file path, a pandas DataFrame or a datasets.Dataset, not {type(source)}")
        where = "the DataFrame"
        rows = [(f"DataFrame row {i}", r) for i, r in enumerate(_records(df))]
    if not rows:
        raise DataError(f"{where}: no questions in it")
    return where, rows


def _is_json_lines(path: Path) -> bool:
    """Whether a .json file holds one object per line (its first line a whole object; a JSON array's is ``[``)."""
    with open(path, encoding="utf-8") as fh:
        first = fh.readline()
    try:
        obj = json.loads(first)
    except ValueError:
        return False
    wrapped = isinstance(obj, dict) and any(isinstance(obj.get(k), list) for k in ("data", "examples"))
    return isinstance(obj, dict) and not (wrapped and not _has_second_line(path))


def _has_second_line(path: Path) -> bool:
    """Whether a file has a second non-empty line."""
    with open(path, encoding="utf-8") as fh:
        fh.readline()
        return any(line.strip() for line in fh)


def _records(df) -> list[dict]:
    """Rows as plain Python data (numpy arrays and scalars from Parquet become lists and numbers)."""
    out = json.loads(df.to_json(orient="records", force_ascii=False))
    return out


_MISSING = object()


_INDEX = re.compile(r"^(.*?)\[(\d+)\]$")


@lru_cache(maxsize=4096)
def _parts(path: str) -> tuple[str, ...]:
    """A path's steps: ``a.b``, ``a[].b`` (each element), ``a[0]`` and ``a.0`` (the list's element 0)."""
    parts = []
    for part in path.split("."):
        indexes = []
        while (m := _INDEX.match(part)) is not None:
            part, indexes = m[1], [m[2], *indexes]
        parts += ([part] if part else []) + indexes
    return tuple(parts)


def getter(path: str):
    """``get`` for one path, made once: ``getter(path)(row, where, default)`` is ``get(row, path, where, default)``
    (a plain field with a default is a dict lookup; a reader of many rows makes its getters once)."""
    parts = _parts(path)
    if len(parts) == 1 and not parts[0].endswith("[]"):
        key = parts[0]

        def plain(row, where, default=_MISSING):
            if default is not _MISSING and type(row) is dict:
                return row.get(key, default)
            return get(row, path, where, default)

        return plain
    return lambda row, where, default=_MISSING: get(row, path, where, default)


def get(row: dict, path: str, where: str, default=_MISSING):
    """The value at ``path`` (``a.b``, ``a[].b``: ``b`` of every element of the list ``a``; ``a[0]`` or ``a.0``:
    its first element); DataError naming the field when it is missing.

    >>> get({"lSolutions": [39.0], "q": {"a": [{"b": 1}, {"b": 2}]}}, "lSolutions[0]", "row 1"), get(
    ...     {"q": {"a": [{"b": 1}, {"b": 2}]}}, "q.a.1.b", "row 1")
    (39.0, 2)
    """
    parts = _parts(path)
    if len(parts) == 1 and default is not _MISSING and type(row) is dict and not parts[0].endswith("[]"):
        return row.get(parts[0], default)  # a plain field with a default: most lookups
    value: Any = row
    for i, part in enumerate(parts):
        each = part.endswith("[]")
        key = part[:-2] if each else part
        if isinstance(value, list) and key.isdigit():
            if int(key) < len(value):
                value = value[int(key)]
                continue
            if default is not _MISSING:
                return default
            raise DataError(f"{where}: field {path!r}: {'.'.join(parts[:i]) or 'the row'} has {len(value)} "
                            f"element(s), no element {key}")  # fmt: skip
        if not isinstance(value, dict) or key not in value:
            if default is not _MISSING:
                return default
            found = ", ".join(sorted(map(str, value))) if isinstance(value, dict) else f"a {type(value).__name__}"
            at = "row" if i == 0 else repr(".".join(parts[:i]))
            raise DataError(f"{where}: field {'.'.join(parts[: i + 1]).removesuffix('[]')!r} missing (the {at} "
                            f"has: {found or 'no fields'})")  # fmt: skip
        value = value[key]
        if each:
            if not isinstance(value, list):
                raise DataError(f"{where}: field {key!r} is not a list")
            rest = ".".join(parts[i + 1 :])
            return [get(v, rest, where) if rest else v for v in value]
    return value


# ---- layouts


def recognise(row: dict, where: str) -> DatasetMap:
    """The mapping of a layout olakit knows, from a file's first row; DataError naming the fields when none fits."""
    keys = set(row)
    ident = next((k for k in ("id", "qid", "question_id") if k in keys), None)
    q = row.get("question")
    if isinstance(q, dict) and "stem" in q and "choices" in q:  # CommonsenseQA
        meta = tuple(f"question.{k}" for k in q if k not in ("stem", "choices"))
        return DatasetMap(id=ident, question="question.stem", choices="question.choices[].text",
                          labels="question.choices[].label", answer="answerKey", meta=meta)  # fmt: skip
    text_field = next((k for k in ("question", "problem", "input") if isinstance(row.get(k), str)), None)
    if text_field is None:
        raise _unknown(row, where)
    if isinstance(row.get("target_scores"), dict):  # BIG-bench multiple choice: option text -> score
        return DatasetMap(id=ident, question=text_field, scores="target_scores")
    answer = next((k for k in ("answerKey", "answer", "correct", "label", "target", "gold") if k in keys), None)
    rationale = next((k for k in ("rationale", "explanation", "solution") if k in keys), None)
    base = {"id": ident, "question": text_field, "rationale": rationale}
    if answer is None:
        raise _unknown(row, where)
    if isinstance(row.get("choices"), dict) and {"label", "text"} <= set(row["choices"]):  # ARC, E-KAR
        return DatasetMap(**base, choices="choices.text", labels="choices.label", answer=answer)
    for field in ("options", "choices"):
        if isinstance(row.get(field), list | dict):  # AQuA's "A)12" items, a list, or label -> text
            return DatasetMap(**base, choices=field, answer=answer)
    letters = [c for c in string.ascii_uppercase if c in keys]
    if len(letters) >= 2 and letters == list(string.ascii_uppercase[: len(letters)]):  # OpenCompass / EvalScope
        return DatasetMap(**base, choices=tuple(letters), answer=answer)
    value = row[answer]
    if read_yes_no(value).value is not None:
        return DatasetMap(**base, answer=answer, answer_form="yes_no")
    if read_number(value).value is not None:  # a number, or GSM8K's worked solution ending "#### N"
        solution = isinstance(value, str) and "####" in value
        return DatasetMap(**{**base, "rationale": rationale or (answer if solution else None)}, answer=answer,
                          answer_form="number")  # fmt: skip
    return DatasetMap(**base, answer=answer)  # a free-text answer


def _unknown(row: dict, where: str) -> DataError:
    fields = ", ".join(sorted(row)) or "none"
    names = [str(k) for k in row]
    data_like = [k for k in names if k.rstrip().endswith("?") or len(k.split()) >= 5]
    if data_like and " line " in where:  # a CSV whose first row is a question, not column names (MMLU's files)
        return DataError(
            f"{where.rsplit(' line ', 1)[0]} line 1: its first row looks like data, not column names (a field named "
            f"{data_like[0][:60]!r}): the file has no header; name its columns by position, e.g. --dataset-map "
            f"'question=0,choices=1|2|3|4,answer={len(names) - 1}'"
        )
    return DataError(
        f"{where}: a layout olakit does not recognise (fields: {fields}); say which field is what, e.g. "
        "--dataset-map 'question=FIELD,answer=FIELD,choices=FIELD' (or choices=A|B|C|D for one column per option), "
        "or put the same as YAML in a .map.yaml file beside the data file"
    )


# ---- questions


def load_file(
    source, mapping: DatasetMap | str | dict | None = None, *, name: str | None = None, split: str = ""
) -> list[Question]:
    """Every question of a dataset file (or DataFrame / datasets.Dataset): by ``mapping``, or the mapping file
    beside the data file, or the layout recognised from its first row. DataError on the first bad row; a
    duplicate id is refused too."""
    mapping = parse_map(mapping)
    if mapping is None and isinstance(source, str | os.PathLike) and map_beside(Path(source)).is_file():
        mapping = parse_map(str(map_beside(Path(source))))
    positional = mapping is not None and all(str(p).split(".")[0].removesuffix("[]").isdigit() for p in _paths(mapping))
    where, rows = read_rows(source, header=not positional)  # a mapping by column numbers: the CSV has no header
    if mapping is None:  # a recognised layout keeps the fields it does not use as the questions' meta
        mapping = recognise(rows[0][1], rows[0][0])
        used = {str(p).split(".")[0].removesuffix("[]") for p in _paths(mapping)}
        mapping = mapping.replace(meta=mapping.meta or tuple(k for k in rows[0][1] if k not in used))
    dataset = name or mapping.name or dataset_name(source)
    out, seen = [], {}
    for index, (at, row) in enumerate(rows):
        q = _question(row, at, index, mapping, dataset, split)
        if q.id in seen:
            raise DataError(f"{at}: duplicate id {q.id!r} (first at {seen[q.id]})")
        seen[q.id] = at
        out.append(q)
    return out


def _paths(m: DatasetMap) -> list[str]:
    """Every field path a mapping reads."""
    choices = list(m.choices) if isinstance(m.choices, tuple) else [m.choices]
    questions = list(m.question) if isinstance(m.question, tuple) else [m.question]
    answer = m.scores or m.answer
    return [p for p in (m.id, *questions, m.labels, answer, m.rationale, *choices, *m.meta) if p]


def dataset_name(source) -> str:
    """A file's dataset name: its stem, or its folder's name when the stem is a split word (gsm8k/test.jsonl)."""
    if not isinstance(source, str | os.PathLike):
        return "dataframe"
    path = Path(source)
    stem = path.name.split(".")[0]
    first = re.split(r"[_\-.]", stem.lower())[0]
    return path.parent.name if first in SPLIT_WORDS and path.parent.name else stem


def _question(row: dict, where: str, index: int, m: DatasetMap, dataset: str, split: str = "") -> Question:
    fields = m.question if isinstance(m.question, tuple) else (m.question,)
    for field in fields:
        part = get(row, field, where)
        if not isinstance(part, str) or not part.strip():
            raise DataError(f"{where}: field {field!r} is empty or not text")
    text = m.question_join.join(str(get(row, field, where)).strip() for field in fields) if len(fields) > 1 else part
    if m.id and "{" in m.id:
        ident = m.id.format(index=index, split=split)
    elif m.id:
        ident = get(row, m.id, where)
    else:
        ident = next((row[k] for k in ("id", "qid", "question_id") if k in row), index)
    alternatives = None
    if m.scores:
        options, kind, gold = _scored(row, where, m.scores)
    else:
        options = _options(row, where, m)
        raw = get(row, m.answer, where)
        if isinstance(raw, list):  # several accepted answers (BIG-bench's target list): the first is the gold
            alternatives, raw = [str(x) for x in raw], raw[0] if raw else None
        if raw is None or (isinstance(raw, str) and not raw.strip()):
            raise DataError(f"{where}: field {m.answer!r} (the answer) is empty")
        kind, gold = _gold(raw, options, m.answer_form, where, m.answer)
    if kind == "yes_no":
        options = {"yes": "yes", "no": "no"}
    rationale = get(row, m.rationale, where, "") if m.rationale else ""
    if isinstance(rationale, list):
        rationale = m.rationale_join.join(map(str, rationale))
    rationale = str(rationale or "")
    if kind == "number" and "####" in rationale:
        rationale = rationale.rsplit("####", 1)[0].strip()
    meta = {p.split(".")[-1]: get(row, p, where, None) for p in m.meta} | _cluster(row, where, m)
    if alternatives and len(alternatives) > 1:
        meta["alternatives"] = alternatives
    return Question(id=str(ident), dataset=dataset, text=text, options=options, gold=gold,
                    rationale=rationale, meta=meta, kind=kind)  # fmt: skip


def _cluster(row: dict, where: str, m: DatasetMap) -> dict:
    """``{"cluster": GROUP}`` where the mapping names a cluster field (DataError when a row's is empty), else {}."""
    if not m.cluster:
        return {}
    group = get(row, m.cluster, where)
    if group is None or (isinstance(group, str) and not group.strip()):
        raise DataError(f"{where}: field {m.cluster!r} (the cluster) is empty")
    return {"cluster": str(group)}


def _scored(row: dict, where: str, field: str) -> tuple[dict[str, str], str, str]:
    """(options, kind, gold) of a row whose options are a text -> score mapping: labelled A, B, ... in its order,
    the gold the one highest-scored."""
    scores = get(row, field, where)
    if not isinstance(scores, dict) or len(scores) < 2:
        raise DataError(f"{where}: field {field!r} is not a mapping of at least 2 options to scores")
    try:
        values = [float(v) for v in scores.values()]
    except (TypeError, ValueError):
        raise DataError(f"{where}: field {field!r}: a score is not a number ({list(scores.values())})") from None
    best = [i for i, v in enumerate(values) if v == max(values)]
    if len(best) != 1:
        raise DataError(f"{where}: field {field!r}: {len(best)} options share the highest score; one gold is needed")
    options = {string.ascii_uppercase[i]: str(text) for i, text in enumerate(list(scores)[:26])}
    return options, "choice", string.ascii_uppercase[best[0]]


def _options(row: dict, where: str, m: DatasetMap) -> dict[str, str]:
    if m.choices is None:
        return {}
    if isinstance(m.choices, tuple):  # one column per option; an empty cell is no option
        missing = [col for col in m.choices if col not in row]
        if missing:
            named = ", ".join(map(repr, missing))
            raise DataError(f"{where}: option column(s) {named} missing (the row has: {', '.join(map(str, row))})")
        # a column named by its position (a file without a header) is labelled by its place among them: A, B, ...
        label = {col: string.ascii_uppercase[i] if col.isdigit() else col for i, col in enumerate(m.choices[:26])}
        options = {label[col]: str(row[col]).strip() for col in m.choices if str(row[col] or "").strip()}
    else:
        options = _listed_options(row, where, m)
    if len(options) < 2:
        raise DataError(f"{where}: {len(options)} option(s) in {m.choices!r}; a choice needs at least 2")
    return options


def _listed_options(row: dict, where: str, m: DatasetMap) -> dict[str, str]:
    value = get(row, m.choices, where)
    if m.labels:
        labels = get(row, m.labels, where)
        if not isinstance(labels, list) or not isinstance(value, list) or len(labels) != len(value):
            raise DataError(f"{where}: {m.labels!r} and {m.choices!r} are not two lists of one length")
        options = {str(label): str(text) for label, text in zip(labels, value)}
    elif isinstance(value, dict):
        options = {str(k): str(v) for k, v in value.items()}
    elif isinstance(value, list):
        lettered = [re.match(r"^\s*([A-Z])\s*\)\s*(.*)$", str(v), re.S) for v in value]
        if value and all(lettered):
            options = {mm.group(1): mm.group(2).strip() for mm in lettered}
        else:
            options = {string.ascii_uppercase[i]: str(v) for i, v in enumerate(value[:26])}
    else:
        raise DataError(f"{where}: field {m.choices!r} is not a list or a mapping of options")
    return options


def _gold(raw, options: dict[str, str], form: str, where: str, field: str) -> tuple[str, str]:
    """(kind, gold) of a row's answer."""
    yes_no = read_yes_no(raw).value
    if form in ("yes_no", "auto") and not options and yes_no is not None:
        return "yes_no", yes_no
    if form == "yes_no":
        raise DataError(f"{where}: answer {raw!r} in {field!r} is not yes/no (true/false)")
    if form in ("number", "auto") and not options:
        number = read_number(raw).value
        if number is not None:
            return "number", number
        if form == "number":
            raise DataError(f"{where}: answer {raw!r} in {field!r} is not a number")
    if form == "text" or (form == "auto" and not options):
        return "text", str(raw).strip()
    value = str(raw).strip()
    if form in ("label", "auto") and value in options:
        return "choice", value
    if form in ("index", "auto") and re.fullmatch(r"\d+", value) and int(value) < len(options):
        return "choice", list(options)[int(value)]
    if form in ("option_text", "auto"):
        hits = [label for label, text in options.items() if _norm(text) == _norm(value)]
        if len(hits) == 1:
            return "choice", hits[0]
    raise DataError(f"{where}: answer {raw!r} in {field!r} is not among its options {sorted(options)}")


def _norm(text) -> str:
    return re.sub(r"\s+", " ", unicodedata.normalize("NFKC", str(text))).strip().strip(".").lower()


def question_hash(q: Question) -> str:
    """A content hash of a question (its normalised text and options, not its id or gold): the same question
    under another id, or a changed one under the same id, is told apart. 16 hex digits of sha256."""
    shown = _norm(q.text) + "\n" + "\n".join(f"{k}\t{_norm(v)}" for k, v in q.options.items())
    return hashlib.sha256(shown.encode("utf-8")).hexdigest()[:16]


def check_versions(records, questions: dict, where: str = "records") -> None:
    """DataError when records answer another version of a question than ``questions`` hold (their question_hash
    differs: the dataset file changed since the run), so two versions are never silently mixed in one table."""
    if "question_hash" not in records.columns:
        return
    changed = sorted(
        {
            qid
            for qid, h in zip(records["question_id"], records["question_hash"])
            if h and qid in questions and question_hash(questions[qid]) != h
        }
    )
    if changed:
        raise DataError(
            f"{where}: {len(changed)} question(s) changed since these records were made (first: {changed[0]}); the "
            "dataset file is not the one the run read (its sha256 is in the run log): rerun on this file, or use "
            "that one"
        )
