"""Counts over the OlaGPT authors' recorded AQuA outputs, computed in plain Python straight from the raw files,
independently of olakit: the expected values of the tests that pin the README's numbers.

The answer rule is the authors' utils/parse_option (the first match of their regex, else no answer). Their vote is a
plurality over the five templates with ties going to the label seen first; ``settings`` names whose vote:
``paper`` (the authors' code: templates in the order dt, dst, pt, st, turbo; an unparsed output votes as its raw
text) or ``olakit`` (DST, DT, PT, ST, turbo; an unparsed output abstains).
"""

import json
import re
from collections import Counter
from functools import lru_cache
from pathlib import Path

AUTHORS_RULE = re.compile(r"\{*?.*?[Aa]nswer[^A-Z]*?([A-F])[^a-zA-Z]+")
FOLDERS = {"DST": "dst", "DT": "dt", "PT": "pt", "ST": "st", "turbo": "turbo"}
ORDER = {"paper": ["DT", "DST", "PT", "ST", "turbo"], "olakit": ["DST", "DT", "PT", "ST", "turbo"]}
SUFFIX = {
    "zero-shot": "",
    "random": "_few_shot_random",
    "retrieval": "_few_shot_retrieval",
    "combine": "_few_shot_combine",
}
N = 254


def _read(path: Path, gold: list) -> list:
    rows = [None] * N
    for p in json.load(open(path))["predictions"]:
        m = AUTHORS_RULE.search(p["output"])
        rows[p["question_id"]] = (m.group(1) if m else None, gold[p["question_id"]], p["output"])
    return rows


@lru_cache(maxsize=4)
def answers(data_dir: Path) -> dict:
    """(template, strategy) -> list of (extracted label or None, gold label, raw output), question order; the
    authors' LLM vote is template "llm_vote", ST with 1 and 5 notes ("ST", strategy, n)."""
    gold = [json.loads(line)["correct"].strip() for line in open(data_dir / "aqua/test.json") if line.strip()]
    root = data_dir / "olagpt/data/predictions"
    out = {}
    for strategy, suffix in SUFFIX.items():
        for template, folder in FOLDERS.items():
            out[template, strategy] = _read(root / folder / f"aqua_predict{suffix}.json", gold)
        out["llm_vote", strategy] = _read(root / f"cos_llm_vote/dst_dt_pt_st_turbo/aqua_predict{suffix}.json", gold)
        if suffix:
            for n in (1, 5):
                out["ST", strategy, n] = _read(root / f"st/few_shot_{n}/aqua_predict{suffix}.json", gold)
    return out


def correct(data_dir: Path, template: str, strategy: str, n: int | None = None) -> int:
    key = (template, strategy) if n is None else (template, strategy, n)
    return sum(a == g for a, g, _ in answers(data_dir)[key])


def per_question(data_dir: Path, strategy: str, settings: str = "paper") -> list[tuple[list, str]]:
    """Per question: the five templates' labels in the settings' vote order, and the gold label."""
    table = answers(data_dir)
    out = []
    for i in range(N):
        labels = []
        for t in ORDER[settings]:
            label, _, raw = table[t, strategy][i]
            labels.append(label if label is not None or settings == "olakit" else "raw:" + raw)
        out.append((labels, table["DST", strategy][i][1]))
    return out


def vote(labels: list) -> str | None:
    """Plurality of the labels (None abstains); a tie goes to the label seen first; None when nothing voted."""
    counts = Counter(a for a in labels if a is not None)
    top = max(counts.values(), default=0)
    return next((a for a in labels if a is not None and counts[a] == top), None)


def vote_correct(data_dir: Path, strategy: str, settings: str = "paper") -> int:
    return sum(vote(labels) == gold for labels, gold in per_question(data_dir, strategy, settings))


def consistency(data_dir: Path, strategy: str, settings: str = "paper") -> Counter:
    """Table 4: questions by the size c of their largest agreeing group (0 when nothing voted)."""
    c = Counter()
    for labels, _ in per_question(data_dir, strategy, settings):
        counts = Counter(a for a in labels if a is not None)
        c[max(counts.values(), default=0)] += 1
    return c


def bounds(data_dir: Path, strategy: str, settings: str = "paper") -> tuple[int, int]:
    """Table 8: (upper, lower) with a = templates right, w = largest wrong group: a >= w and a > 0; a > w."""
    upper = lower = 0
    for labels, gold in per_question(data_dir, strategy, settings):
        a = sum(x == gold for x in labels)
        wrong = Counter(x for x in labels if x is not None and x != gold)
        w = max(wrong.values(), default=0)
        upper += a >= w and a > 0
        lower += a > w
    return upper, lower
