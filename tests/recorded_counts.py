"""Counts over the OlaGPT authors' recorded AQuA outputs, computed in plain Python straight from the raw files,
independently of olakit: the expected values of the tests that pin the README's numbers.

The answer rule is the authors' utils/parse_option (the first match of their regex, else no answer); their vote
is a plurality over the five templates with ties going to the label seen first in the order given here.
"""

import json
import re
from collections import Counter
from functools import lru_cache
from pathlib import Path

AUTHORS_RULE = re.compile(r"\{*?.*?[Aa]nswer[^A-Z]*?([A-F])[^a-zA-Z]+")
FOLDERS = {"DST": "dst", "DT": "dt", "PT": "pt", "ST": "st", "turbo": "turbo"}  # olakit's default vote order
SUFFIX = {
    "zero-shot": "",
    "random": "_few_shot_random",
    "retrieval": "_few_shot_retrieval",
    "combine": "_few_shot_combine",
}
N = 254


@lru_cache(maxsize=4)
def answers(data_dir: Path) -> dict:
    """(template, strategy) -> list of (extracted label or None, gold label), question order."""
    gold = [json.loads(line)["correct"].strip() for line in open(data_dir / "aqua/test.json") if line.strip()]
    out = {}
    for template, folder in FOLDERS.items():
        for strategy, suffix in SUFFIX.items():
            preds = json.load(open(data_dir / f"olagpt/data/predictions/{folder}/aqua_predict{suffix}.json"))
            rows = [None] * N
            for p in preds["predictions"]:
                m = AUTHORS_RULE.search(p["output"])
                rows[p["question_id"]] = (m.group(1) if m else None, gold[p["question_id"]])
            out[template, strategy] = rows
    return out


def correct(data_dir: Path, template: str, strategy: str) -> int:
    return sum(a == g for a, g in answers(data_dir)[template, strategy])


def per_question(data_dir: Path, strategy: str) -> list[tuple[list, str]]:
    """Per question: the five templates' labels (vote order) and the gold label."""
    table = answers(data_dir)
    return [([table[t, strategy][i][0] for t in FOLDERS], table["DST", strategy][i][1]) for i in range(N)]


def vote(labels: list) -> str | None:
    """Plurality of the parsed labels; a tie goes to the label seen first; None when nothing parsed."""
    counts = Counter(a for a in labels if a is not None)
    top = max(counts.values(), default=0)
    return next((a for a in labels if a is not None and counts[a] == top), None)


def vote_correct(data_dir: Path, strategy: str) -> int:
    return sum(vote(labels) == gold for labels, gold in per_question(data_dir, strategy))


def consistency(data_dir: Path, strategy: str) -> Counter:
    """Table 4: questions by the size c of their largest agreeing group (0 when nothing parsed)."""
    c = Counter()
    for labels, _ in per_question(data_dir, strategy):
        counts = Counter(a for a in labels if a is not None)
        c[max(counts.values(), default=0)] += 1
    return c


def bounds(data_dir: Path, strategy: str) -> tuple[int, int]:
    """Table 8: (upper, lower) with a = templates right, w = largest wrong group: a >= w and a > 0; a > w."""
    upper = lower = 0
    for labels, gold in per_question(data_dir, strategy):
        a = sum(x == gold for x in labels)
        wrong = Counter(x for x in labels if x is not None and x != gold)
        w = max(wrong.values(), default=0)
        upper += a >= w and a > 0
        lower += a > w
    return upper, lower
