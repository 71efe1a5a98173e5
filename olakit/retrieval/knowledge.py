"""Knowledge corpora (GEEK's and the facts tool's): JSON Lines of ``{"id", "title", "text"}``, one paragraph a line.

Built in: ``strategyqa-facts``, the annotated facts of all 2,290 StrategyQA questions (train and dev), one paragraph
per fact (id ``{qid}-{i}``, title the question's term), in two settings named after a colon:
``strategyqa-facts:oracle`` (each question's own facts present: an upper bound, labelled so everywhere) and
``strategyqa-facts:open`` (a question's own facts are never retrieved for it). A user's corpus is named by its path
(``my/wiki.jsonl``, optionally ``:open`` or ``:oracle``, which mean the same for a corpus without question ids).

``load_corpus("strategyqa-facts:open").setting -> "open"``.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from olakit.data.files import read_json, read_jsonl
from olakit.data.loaders import data_file
from olakit.errors import DataError
from olakit.retrieval.corpus import Corpus
from olakit.retrieval.retrievers import make_retriever

SETTINGS = ("oracle", "open")
BUILTIN = "strategyqa-facts"
OWN_FACTS = "dataset-facts"


def strategyqa_facts(data_dir=None, setting: str = "oracle") -> Corpus:
    """The facts of every StrategyQA question, one paragraph each."""
    ids, titles, texts, owner = [], [], [], []
    for split in ("train", "dev"):
        path = data_file(data_dir, f"strategyqa/{split}.json")
        for item in read_json(path):
            for i, fact in enumerate(item.get("facts", [])):
                ids.append(f"{item['qid']}-{i}")
                titles.append(str(item.get("term") or ""))
                texts.append(str(fact).strip())
                owner.append(item["qid"])
    return Corpus(BUILTIN, ids, titles, texts, setting, owner)


def read_corpus(path: str | Path, setting: str = "oracle") -> Corpus:
    """A user's corpus: JSON Lines with id, title and text; errors name the file and line."""
    path = Path(path)
    if not path.is_file():
        raise DataError(f"{path}: corpus file not found")
    ids, titles, texts = [], [], []
    seen = set()
    for lineno, obj in read_jsonl(path):
        where = f"{path} line {lineno}"
        missing = [k for k in ("id", "title", "text") if k not in obj]
        if missing:
            raise DataError(f"{where}: paragraph lacks {missing}; each line needs id, title and text")
        pid = str(obj["id"])
        if pid in seen:
            raise DataError(f"{where}: duplicate paragraph id {pid!r}")
        seen.add(pid)
        ids.append(pid)
        titles.append(str(obj["title"]))
        texts.append(str(obj["text"]))
    return Corpus(path.stem, ids, titles, texts, setting)


def parse_spec(spec: str) -> tuple[str, str]:
    """(name, setting) of a corpus spec; a path without a setting is ``oracle`` (no question ids to hide)."""
    name, _, setting = spec.rpartition(":") if spec.rsplit(":", 1)[-1] in SETTINGS else (spec, "", "oracle")
    return name, setting


def dataset_facts(questions, setting: str = "oracle") -> Corpus:
    """A dataset file's own facts (each question's ``meta["facts"]``, a list or one text), one paragraph each."""
    ids, titles, texts, owner = [], [], [], []
    for q in questions:
        facts = q.meta.get("facts") or []
        for i, fact in enumerate([facts] if isinstance(facts, str) else facts):
            ids.append(f"{q.id}-{i}")
            titles.append(str(q.meta.get("term") or ""))
            texts.append(str(fact).strip())
            owner.append(q.id)
    if not ids:
        raise DataError(
            f"corpus {OWN_FACTS}: the dataset's questions carry no facts; map its facts field (--dataset-map "
            "...,meta=[FIELD] with FIELD named facts) or give a corpus file"
        )
    return Corpus(OWN_FACTS, ids, titles, texts, setting, owner)


def load_corpus(spec: str, data_dir=None, questions=None) -> Corpus:
    """A corpus by name: ``strategyqa-facts:oracle``, ``strategyqa-facts:open``, ``dataset-facts:...`` (the facts
    of ``questions``, a dataset file's) or ``PATH[:setting]``."""
    name, setting = parse_spec(spec)
    if setting not in SETTINGS:
        raise DataError(f"corpus setting {setting!r}: use one of {', '.join(SETTINGS)}")
    if name == BUILTIN:
        return strategyqa_facts(data_dir, setting)
    if name == OWN_FACTS:
        return dataset_facts(questions or [], setting)
    if not name.endswith(".jsonl") and not Path(name).exists():
        raise DataError(f"unknown corpus {spec!r}: use {BUILTIN}:oracle, {BUILTIN}:open or a JSON Lines path")
    return read_corpus(name, setting)


@lru_cache(maxsize=8)
def _retriever(spec: str, retriever: str, data_dir: str | None):
    return make_retriever(retriever, load_corpus(spec, data_dir))


def search_facts(query: str, corpus: str = f"{BUILTIN}:oracle", retriever: str = "bm25", k: int = 3,
                 data_dir: str | None = None) -> str:  # fmt: skip
    """The ``facts`` tool: the ``k`` paragraphs of ``corpus`` that best match ``query`` (the kit's retrievers), as
    text. Its default corpus, the StrategyQA facts in the oracle setting, holds each question's own facts (an upper
    bound): a tool does not know which question asks, so the open setting cannot leave them out; give another
    corpus (a JSON Lines file of paragraphs) in the tool's settings."""
    if not query.strip():
        return "no query given: write what to look up"
    found = _retriever(corpus, retriever, data_dir)
    hits = found.search(query, min(k, len(found.corpus)))
    return "\n".join(f"[{i}] {found.corpus.titles[p]}: {found.corpus.texts[p]}" for i, (p, _) in enumerate(hits, 1))
