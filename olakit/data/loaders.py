"""Datasets by name or by file (the built-in AQuA, E-KAR zh and StrategyQA are descriptions read like a user's own
file, olakit.data.datasets), the OlaGPT notes, and data-directory resolution.

Every file is validated as it is read: a malformed line, a question without options or a gold label that is not
among the options raises DataError naming the file and line.
"""

from __future__ import annotations

import os
import re
import threading
from contextlib import contextmanager
from pathlib import Path

from olakit.config import is_dataset_file
from olakit.data.datasets import DatasetMap, load_file
from olakit.data.files import CHECKOUT, RESOURCES, WORKDIR, read_json, read_jsonl, require, sha256_cached
from olakit.env import environment, user_dir
from olakit.errors import DataError, lookup
from olakit.types import DatasetRef, Question

FETCHED_DIR = CHECKOUT / "data" / "raw" if CHECKOUT else user_dir("data")
"""Where ``olakit data fetch`` puts downloads by default (git-ignored)."""
SHARED_DIR = WORKDIR.parent / "shared" / "data"
"""The workplace copy of the same files, next to the checkout."""
ENV_DATA_DIR = "OLAKIT_DATA_DIR"


def resolve_data_dir(data_dir: str | os.PathLike | None = None) -> Path:
    """Find the data directory: the argument, else $OLAKIT_DATA_DIR, else data/raw, else ../shared/data.

    Raises DataError when the chosen directory does not exist or none is found.
    """
    if data_dir is None:
        data_dir = environment().data_dir
    if data_dir is not None:
        path = Path(data_dir).expanduser()
        if not path.is_dir():
            raise DataError(
                f"data directory {path} does not exist; run `olakit data fetch --dest {path}` "
                f"or point --data-dir / ${ENV_DATA_DIR} at the data"
            )
        return path
    for candidate in (FETCHED_DIR, SHARED_DIR):
        if (candidate / "aqua" / "test.json").is_file():
            return candidate
    raise DataError(
        f"no data directory found (looked at ${ENV_DATA_DIR}, {FETCHED_DIR}, {SHARED_DIR}); "
        "run `olakit data fetch` or set --data-dir"
    )


_SCOPES: list[dict[Path, None]] = []
"""The files read in each open ``reading()`` scope (several may be open: a notebook's run inside its kernel)."""
_LOCK = threading.Lock()


@contextmanager
def reading():
    """Collect the data files read inside the block, in the order first read (the keys of the dict it gives): what
    one run's log hashes (a run that follows another in the same kernel lists only its own).

    >>> with reading() as files:
    ...     pass
    >>> list(files)
    []
    """
    scope: dict[Path, None] = {}
    with _LOCK:
        _SCOPES.append(scope)
    try:
        yield scope
    finally:
        with _LOCK:
            _SCOPES.remove(scope)


def note_read(path: Path) -> None:
    """Note a data file as read, in every open ``reading()`` scope (a dataset or run file of one's own too)."""
    with _LOCK:
        for scope in _SCOPES:
            scope[Path(path).absolute()] = None  # a symlinked data folder kept as reached


def data_file(data_dir: str | os.PathLike | None, rel: str) -> Path:
    """Path of ``rel`` inside the data directory; DataError if the file is missing. The file is noted as read
    (``note_read``)."""
    path = resolve_data_dir(data_dir) / rel
    if not path.is_file():
        raise DataError(
            f"{path}: file not found; the data directory is incomplete (run `olakit data fetch` to download it)"
        )
    note_read(path)
    return path


BUILTIN = read_json(RESOURCES / "datasets.json")
"""The three datasets olakit reads by name, each a description like a user's own (olakit.data.datasets): its
file in the data directory by split, the splits with gold labels, and its field mapping (resources/datasets.json)."""
DEFAULT_SPLIT = {"aqua": "test", "ekar_zh": "validation", "strategyqa": "dev"}
"""The split evaluated when none is named (the one with gold labels that the papers report)."""


def load_builtin(dataset: str, split: str, data_dir=None) -> list[Question]:
    """A built-in dataset's split: AQuA-RAT ``test``/``dev`` (254 each, options A-E, ids ``{split}-{index}``),
    E-KAR Chinese ``train`` (1155)/``validation`` (165; the blind test splits have no gold labels), StrategyQA
    ``train`` (2061)/``dev`` (229; yes/no, facts kept in meta)."""
    spec = lookup(BUILTIN, dataset, "dataset")
    if split not in spec["splits"]:
        raise DataError(
            f"{spec['title']} split {split!r} has no gold labels here (or does not exist); use one of "
            f"{', '.join(spec['splits'])}"
        )
    path = data_file(data_dir, spec["file"].format(split=split))
    return load_file(path, DatasetMap(**spec["map"]), name=dataset, split=split)


def load_questions(dataset: str, split: str | None = None, data_dir=None, mapping=None) -> list[Question]:
    """A dataset's questions: a built-in one by name and split (``load_questions("aqua", "test")``), or a file
    (``load_questions("gsm8k/test.jsonl")``: a path, or one relative to the data directory) read through its
    mapping (olakit.data.datasets). The file is noted as read, so the run log keeps its sha256."""
    if not is_dataset_file(dataset):
        if mapping is not None:
            raise DataError(f"dataset {dataset!r} is built in: a dataset map is for a dataset file")
        return load_builtin(dataset, split or lookup(DEFAULT_SPLIT, dataset, "dataset"), data_dir)
    if split is not None:
        raise DataError(f"dataset {dataset}: a file is its own split; leave split unset (got {split!r})")
    path = Path(dataset).expanduser()
    if not path.is_file() and not path.is_absolute():
        inside = resolve_data_dir(data_dir) / path
        path = inside if inside.is_file() else path
    if not path.is_file():
        raise DataError(f"{dataset}: dataset file not found (nor in the data directory)")
    questions = load_file(path, mapping)
    note_read(path)
    return questions


_NOTE_QUESTION = re.compile(r"\s*question:\s*(.*?)\n\s*choices:\s*\n(.*)", re.S)
_NOTE_OPTION = re.compile(r"\s*([A-Z])\s*[.)]\s*(.*)")
OLAGPT_NOTES = {
    "aqua": "olagpt/notes/note_data/llm_data/aqua.json",
    "ekar_zh": "olagpt/notes/note_data/final_notes.json",
}
"""The OlaGPT repository's notes: 81 AQuA notes from AQuA train, and the 2 E-KAR (Chinese) notes of final_notes.json."""


def load_olagpt_notes(data_dir=None, dataset: str = "aqua") -> list[dict]:
    """The OlaGPT authors' notes for ``aqua`` (81, each with an LLM-labelled ``llm_task_type``) or ``ekar_zh`` (2).

    Returns dicts in the paper's note schema: id, source, dataset, question, options, answer, error_reason,
    model_expert, explanation, llm_task_type. The repository has no error_reason (empty here).
    """
    path = data_file(data_dir, lookup(OLAGPT_NOTES, dataset, "dataset with OlaGPT notes"))
    prefix = "olagpt-aqua" if dataset == "aqua" else "olagpt-ekar"
    notes = []
    for index, (lineno, obj) in enumerate(read_jsonl(path)):
        where = f"{path} line {lineno}"
        m = _NOTE_QUESTION.match(require(obj, "question", where))
        if not m:
            raise DataError(f"{where}: note question is not of the form 'question: ...\\n\\nchoices: ...'")
        options = {}
        for line in m.group(2).splitlines():
            opt = _NOTE_OPTION.match(line)
            if opt:
                options[opt.group(1)] = opt.group(2).strip()
        answer = str(require(obj, "answer", where))
        if not options or answer[:1] not in options:
            raise DataError(f"{where}: note answer {answer!r} is not among the options {sorted(options)}")
        notes.append(
            {
                "id": f"{prefix}-{index}",
                "source": "olagpt",
                "dataset": dataset,
                "question": m.group(1).strip(),
                "options": options,
                "answer": answer[:1],
                "error_reason": "",
                "model_expert": obj.get("expert", ""),
                "explanation": obj.get("explanation", ""),
                "llm_task_type": obj.get("llm_task_type", "")
                if dataset != "aqua"
                else require(obj, "llm_task_type", where),
            }
        )
    return notes


def questions_of(config) -> list[Question]:
    """The questions a config names (its ``dataset``, ``split``, ``data_dir`` and ``dataset_map``), in order."""
    return load_questions(config.dataset, config.split, config.data_dir, getattr(config, "dataset_map", None))


def dataset_file(dataset: str, split: str | None = None, data_dir=None) -> tuple[Path, str | None]:
    """(the file a dataset's questions come from, the split resolved: the usual one where none is named; None for a
    file, its own split)."""
    if not is_dataset_file(dataset):
        spec = lookup(BUILTIN, dataset, "dataset")
        split = split or lookup(DEFAULT_SPLIT, dataset, "dataset")
        return resolve_data_dir(data_dir) / spec["file"].format(split=split), split
    path = Path(dataset).expanduser()
    if not path.is_file() and not path.is_absolute():
        inside = resolve_data_dir(data_dir) / path
        path = inside if inside.is_file() else path
    return path, None


def dataset_ref(dataset: str, split: str | None = None, data_dir=None, mapping=None) -> DatasetRef:
    """What a run's log says of the questions it read: the dataset as named, the split resolved, the map, and the
    file with its sha256 (``dataset_ref("aqua")`` names split ``test``)."""
    path, split = dataset_file(dataset, split, data_dir)
    if not path.is_file():
        raise DataError(f"{dataset}: dataset file {path} not found")
    text = mapping if mapping is None or isinstance(mapping, str) else str(mapping)
    return DatasetRef(dataset, split, text, str(path.absolute()), sha256_cached(path))


def ref_of(config) -> DatasetRef:
    """dataset_ref of a config's dataset, split, data directory and map."""
    return dataset_ref(config.dataset, config.split, config.data_dir, getattr(config, "dataset_map", None))


def questions_of_ref(ref: DatasetRef, data_dir=None) -> list[Question]:
    """The questions a run's log names, read as the run read them: its dataset and resolved split (or its file and
    map); DataError when the file now differs from the one the run read (its sha256), naming both."""
    if is_dataset_file(ref.dataset):
        where = Path(ref.file) if ref.file and Path(ref.file).is_file() else None
        questions = load_questions(str(where or ref.dataset), None, data_dir, ref.map)
        path = where or dataset_file(ref.dataset, None, data_dir)[0]
    else:
        questions = load_questions(ref.dataset, ref.split, data_dir)
        path = dataset_file(ref.dataset, ref.split, data_dir)[0]
    if ref.sha256 and sha256_cached(path) != ref.sha256:
        raise DataError(
            f"{path}: not the file the run read (sha256 {sha256_cached(path)[:12]}, the run's {ref.sha256[:12]}, read "
            f"from {ref.file}); point --data-dir at the data the run read"
        )
    return questions


def run_questions(ref: DatasetRef | None, datasets: list[str], data_dir=None) -> list[Question]:
    """The questions a run answered: those its log's dataset names (questions_of_ref), else, for records without a
    log, the built-in ``datasets`` the records name, each in its usual split."""
    if ref is not None:
        return questions_of_ref(ref, data_dir)
    return [q for d in datasets if not is_dataset_file(d) for q in load_questions(d, None, data_dir)]
