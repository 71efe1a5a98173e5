"""Regex majority vote and its tie rules, worked by hand."""

import numpy as np
import pandas as pd
import pytest

from olakit.answering.majority import TIE_RULES, majority
from olakit.answering.vote import answer_matrix, regex_vote
from olakit.data.records import to_frame
from olakit.errors import DataError, UnknownNameError
from olakit.settings import Analysis
from tests.toys import answers_frame, record


def test_majority_by_hand():
    assert majority(["A", "B", "A"]) == "A"
    assert majority(["A", None, None, "C", "C"]) == "C"  # unparsed answers abstain
    assert majority([None, None]) is None
    # a 2-2 tie: "first" takes the label given first in template order (OlaGPT's dict order)
    assert majority(["B", "A", "A", "B", None], tie="first") == "B"
    assert majority(["B", "A", "A", "B"], tie="none") is None
    picks = {majority(["B", "A"], tie="random", rng=np.random.default_rng(s)) for s in range(20)}
    assert picks == {"A", "B"}


def test_unknown_tie_rule():
    with pytest.raises(UnknownNameError, match="unknown tie rule 'last'; known: first, none, random"):
        majority(["A"], tie="last")


def _records(answers: dict[str, list], gold: list[str], strategy="zero-shot"):
    return answers_frame(answers, gold, notes_strategy=strategy)


def test_regex_vote_frame():
    df = _records({"T1": ["A", "B", "C"], "T2": ["A", "C", None], "T3": ["B", "B", "D"]}, gold=["A", "C", "D"])
    for tie in TIE_RULES:
        v = regex_vote(df, analysis=Analysis(tie=tie, unparsed="abstain", analysis_seed=1)).set_index("question_id")
        assert v.loc["q0", "voted"] == "A" and v.loc["q1", "voted"] == "B"  # clear majorities
        assert bool(v.loc["q0", "correct"]) and not bool(v.loc["q1", "correct"])
    # q2: C (T1) vs D (T3), T2 abstains -> tie
    assert regex_vote(df, analysis=Analysis(unparsed="abstain")).set_index("question_id").loc["q2", "voted"] == "C"
    assert (
        regex_vote(df, ["T3", "T1", "T2"], analysis=Analysis(unparsed="abstain"))
        .set_index("question_id")
        .loc["q2", "voted"]
        == "D"
    )
    assert (
        regex_vote(df, analysis=Analysis(tie="none", unparsed="abstain")).set_index("question_id").loc["q2", "voted"]
        is None
    )
    # a random tie-break is fixed by the seed and the question
    assert regex_vote(df, analysis=Analysis(tie="random", unparsed="abstain", analysis_seed=3)).equals(
        regex_vote(df, analysis=Analysis(tie="random", unparsed="abstain", analysis_seed=3))
    )


def test_vote_refuses_missing_templates():
    df = _records({"T1": ["A", "B"], "T2": ["A", "B"]}, gold=["A", "B"])
    with pytest.raises(DataError, match=r"templates \['T9'\] have no records"):
        regex_vote(df, ["T1", "T9"])
    with pytest.raises(DataError, match="lacks records for some of the templates"):
        regex_vote(df.iloc[:-1], ["T1", "T2"])


def test_the_answer_matrix_by_hand():
    """The wide view every vote reads, worked by hand: a row per question in sorted order, a column per template in
    the order given (none given: the order the records first name them), the gold beside; a template that answers a
    question twice (two runs) and a question a template lacks are each one error naming them (mutation testing
    found these unchecked)."""
    df = _records({"T2": ["B", None, "C"], "T1": ["A", "A", "D"]}, gold=["A", "B", "C"])
    wide, gold = answer_matrix(df)
    assert list(wide.columns) == ["T2", "T1"] and wide.columns.name == "template"
    assert list(wide.index.get_level_values("question_id")) == ["q0", "q1", "q2"]
    assert wide.to_numpy().tolist() == [["B", "A"], [None, "A"], ["C", "D"]]
    assert gold.name == "gold" and list(gold) == ["A", "B", "C"] and gold.index.equals(wide.index)
    wide, _, raw = answer_matrix(df, ["T1", "T2"], raw=True)
    assert wide.to_numpy().tolist() == [["A", "B"], ["A", None], ["D", "C"]] and raw.shape == (3, 2)
    runs = df.assign(run="r1")
    again = runs[(runs["template"] == "T1") & (runs["question_id"] == "q1")].assign(run="r2")
    with pytest.raises(DataError, match=r"template T1 answers question q1 in several runs or models \(r1/m, r2/m\)"):
        answer_matrix(pd.concat([runs, again]))
    lacking = df[~((df["template"] == "T2") & (df["question_id"] == "q2"))]
    with pytest.raises(DataError, match=r"'question_id': 'q2'\} lacks records"):
        answer_matrix(lacking, ["T2", "T1"])


def test_a_random_tie_without_a_keyed_generator_is_refused():
    """One default generator for every question picked the same position every time (SC's random tie)."""
    with pytest.raises(ValueError, match="needs a generator keyed per question"):
        majority(["B", "A"], tie="random")


def test_sc_random_ties_are_seeded_per_question():
    """SC's tie="random" got no generator: majority's default_rng(0) per question chose the first tied sample on all
    40 questions. Now each question draws from its own generator: both positions occur, a question's pick does not
    depend on which other questions are voted, and the seed changes the picks."""
    from olakit.analysis.tables import sc_vote

    # every question: two samples, a 1-1 tie between A (sample 0) and B (sample 1)
    df = to_frame([record(f"q{i}", "SC", label, sample=s) for i in range(40) for s, label in enumerate(("A", "B"))])
    rule = Analysis(tie="random", analysis_seed=1)
    picks = sc_vote(df, analysis=rule).set_index("question_id")["voted"]
    assert set(picks) == {"A", "B"}  # all 40 the same has probability 2 * 2**-40
    alone = sc_vote(df[df["question_id"].isin(["q3", "q7"])], analysis=rule).set_index("question_id")["voted"]
    assert alone.to_dict() == picks[["q3", "q7"]].to_dict()
    assert sc_vote(df, analysis=rule)["voted"].tolist() == picks.tolist()  # the same seed, the same picks
    assert sc_vote(df, analysis=rule.replace(analysis_seed=2))["voted"].tolist() != picks.tolist()
    assert set(sc_vote(df)["voted"]) == {"A"}  # the authors' first rule: the first sample's label
