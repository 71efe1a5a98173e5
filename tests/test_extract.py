"""Extraction: OlaGPT's rule on their real recorded outputs, and the strict extractor for live runs."""

import json

import pytest

from olakit.answering.extract import extract_olagpt, extract_strict, get_extractor
from olakit.errors import UnknownNameError
from tests import recorded_counts as raw


def _outputs(data_dir, folder="dst", suffix=""):
    path = data_dir / f"olagpt/data/predictions/{folder}/aqua_predict{suffix}.json"
    return [p["output"] for p in json.loads(path.read_text())["predictions"]]


def test_olagpt_rule_on_recorded_outputs(data_dir):
    outs = _outputs(data_dir)
    # question 0 ends "...Answer: {Answer: D}\n"
    assert outs[0].rstrip().endswith("{Answer: D}") and extract_olagpt(outs[0]) == "D"
    # question 2 is cut off in a list of numbers; 32 answers "{Answer: None}": neither names an option
    assert outs[2].rstrip().endswith("3162") and extract_olagpt(outs[2]) is None
    assert outs[32].rstrip().endswith("{Answer: None}") and extract_olagpt(outs[32]) is None
    # like the authors' rule, it ignores the question's labels: an F on a five-option question is extracted
    assert extract_olagpt("so {Answer: F}\n", ["A", "B", "C", "D", "E"]) == "F"


def test_recorded_records_keep_every_unparsed_answer_unparsed(olagpt_records, data_dir):
    """Every record's extracted label is what the authors' rule, written out in tests/recorded_counts.py, gives
    for the raw output: nothing the rule leaves unparsed is guessed."""
    want = raw.answers(data_dir)
    for (template, strategy), g in olagpt_records.groupby(["template", "notes_strategy"]):
        got = [None if x is None else x for x in g.sort_values("question_id", key=_index)["extracted"]]
        assert got == [a for a, _, _ in want[template, strategy]], (template, strategy)
    n_unparsed = sum(
        a is None for key, rows in want.items() if len(key) == 2 and key[0] != "llm_vote" for a, _, _ in rows
    )
    assert n_unparsed > 0 and olagpt_records["extracted"].isna().sum() == n_unparsed


def _index(ids):
    return ids.str.split("-").str[1].astype(int)


def test_strict_agrees_with_olagpt_on_clean_recorded_outputs(data_dir):
    outs = [t for folder in ("dt", "st") for t in _outputs(data_dir, folder)]
    both = [(extract_olagpt(t), extract_strict(t)) for t in outs]
    parsed = [(a, b) for a, b in both if a is not None and b is not None]
    agree = sum(a == b for a, b in parsed) / len(parsed)
    assert len(parsed) > 0.9 * len(outs) and agree > 0.95


@pytest.mark.parametrize(
    "text, want",
    [
        ('The result is 12. {"Answer": "C)12"}', "C"),
        ("Answer: C", "C"),
        ("{Answer: B}", "B"),
        ("Therefore the answer is (B).", "B"),
        ("so we get \\boxed{D}", "D"),
        ("\\boxed{(E)}", "E"),
        ("因此，答案是C。", "C"),
        ("答案：（B）", "B"),
        ("long reasoning\nso the final pick is (E)", "E"),
        ("Answer: B\nOn second thought, Answer: D", "D"),
        ("I think it is B", None),
        ("The answer is A certain amount of money", None),
        ("Step 1: compute 12 * 3 = 36. Step 2: divide by", None),  # cut off
        ("Answer: F", None),  # not an option
        ("", None),
    ],
)
def test_strict_extractor(text, want):
    assert extract_strict(text, ["A", "B", "C", "D", "E"]) == want


def test_strict_yes_no_labels():
    assert extract_strict("So the answer is Yes.", ["yes", "no"]) == "yes"
    assert extract_strict('{"Answer": "no"}', ["yes", "no"]) == "no"
    assert extract_strict("Nobody knows", ["yes", "no"]) is None


def test_unknown_extractor_name():
    with pytest.raises(UnknownNameError, match="unknown extractor 'fuzzy'; known: olagpt, option_mark, strict"):
        get_extractor("fuzzy")


# Yes/no answers of the embedded Qwen2.5-Coder-0.5B in a live GEEK run on StrategyQA dev (records of
# `olakit geek --n 5`), with the label a person reads in each, and crafted variants of the same styles.
REAL_YES_NO = [
    ("So the answer is yes.", "yes"),
    (
        "So the answer is yes. Mount Fuji is indeed a significant landmark in Japan, standing out from the Sea of "
        "Japan in several ways. Firstly, it is a major waterway, connecting Japan to the Pacific Ocean.",
        "yes",
    ),
    ("Yes, the Albany in Georgia could reach a hundred thousand occupants before the one in New York.", None),
    ("Yes", None),
    ("There is a significant difference in the number of children in Julius Caesar and Genghis Khan.", None),
    ("Albany, GA has about 75,000 people, so it is smaller.\nSo the answer is no.", "no"),
    ("The answer is no, since musicians are not police.\n\nTherefore, the answer (yes or no) is yes.", "yes"),
    ('{"Answer": "No"}', "no"),
]


@pytest.mark.parametrize("text, want", REAL_YES_NO)
def test_yes_no_strict_on_real_outputs(text, want):
    """The last explicit answer statement counts; a bare "Yes" opening a sentence is not a statement, so it stays
    unparsed (counted wrong and reported), never guessed."""
    assert extract_strict(text, ["yes", "no"]) == want


def test_linear_olagpt_search_finds_what_the_authors_pattern_finds(data_dir):
    """extract_olagpt uses a linear-time pattern; the authors' own pattern, searched as they did, must agree on
    every recorded output and on texts built to probe the difference (answers across lines, braces, capitals)."""
    import random
    import re

    authors = re.compile(r"\{*?.*?[Aa]nswer[^A-Z]*?([A-F])[^a-zA-Z]+")  # utils/parse_option, copied as written

    def theirs(text):
        m = authors.search(text)
        return m.group(1) if m else None

    texts = [o for folder in ("dt", "dst", "pt", "st", "turbo") for o in _outputs(data_dir, folder)]
    rng = random.Random(0)
    pieces = ["answer", "Answer", "ANSWER", "{", "}", ":", " ", "\n", "A", "B", "F", "G", "x", "a", ")", ".", "1"]
    texts += ["".join(rng.choice(pieces) for _ in range(rng.randint(0, 14))) for _ in range(20000)]
    texts += ["Answer: Because B) is\nanswer: C.", "the answer\nis B.", "answer B", "answer Bx answer C."]
    assert [extract_olagpt(t) for t in texts] == [theirs(t) for t in texts]
    assert [extract_olagpt(t) for t in texts[-4:]] == ["C", "B", None, "C"]


@pytest.mark.parametrize(
    ("text", "labels", "finish", "want"),
    [
        ("Adding them up, \\boxed{F}", "ABCDE", "stop", "not_an_option"),  # once no_answer
        ("所以答案是F", "ABCD", "stop", "not_an_option"),  # once no_answer
        ('{"Answer": "G)12"}', "ABCDE", "stop", "not_an_option"),
        ("So the answer is yes.", "ABCDE", "stop", "not_an_option"),
        ("Answer: A lot of work went into this.", "ABCDE", "stop", "no_answer"),  # "A lot" is no statement
        ("\\boxed{42}", "ABCDE", "stop", "no_answer"),
        ("I think it is one of them.", "AB", "stop", "no_answer"),
        ("Step 1: 3 + 4 = ", "ABCDE", "length", "cut_off"),
    ],
)
def test_why_an_answer_is_unparsed_follows_the_strict_readers_statements(text, labels, finish, want):
    """An answer statement the strict reader would take, naming a label the question lacks, is not_an_option, in each
    form the reader knows (Answer: X, JSON, \\boxed{X}, 答案是X)."""
    from olakit.answering.extract import unparsed_cause

    assert extract_strict(text, list(labels)) is None
    assert unparsed_cause(text, list(labels), finish) == want
