"""Runs side by side (olakit.analysis.compare, `olakit compare`, the linked explorers) on toy runs whose answers are
worked out by hand here, and the numpy vote against olakit.answering.majority's definition on random answer matrices."""

import itertools
import math
import random
import shlex

import numpy as np
import pandas as pd
import pytest

from olakit.analysis.compare import CompareConfig, compare, comparison_tables
from olakit.answering.majority import majority
from olakit.answering.vote import RAW, VoteMatrix
from olakit.data.records import load_records, save_records, to_frame
from olakit.errors import DataError
from olakit.runlog import Role, command, read_log
from olakit.settings import Analysis
from tests.toys import record, write_run

# question -> (T1, T2) of model a, (T1, T2) of model b; gold A everywhere
A = {"q1": ("A", "A"), "q2": ("B", "A"), "q3": ("A", None), "q10": ("A", "B"), "q4": ("C", "C")}
B = {"q1": ("A", "B"), "q2": ("A", "A"), "q3": ("B", "B"), "q10": ("A", "A"), "q4": ("A", "C")}


def run_records(answers, model, drop=()):
    return to_frame(
        [record(q, t, a, dataset="aqua", model=model, raw_output=f"{model} {t} on {q}")
         for q, pair in answers.items() if q not in drop for t, a in zip(("T1", "T2"), pair)]
    )  # fmt: skip


def folder(tmp_path, name, df):
    return write_run(tmp_path / name, df)


def test_two_models_with_the_same_template_names_share_a_file_and_compare_by_model(tmp_path):
    both = pd.concat([run_records(A, "model-a"), run_records(B, "org/model-b")], ignore_index=True)
    back = load_records(save_records(both, tmp_path / "both.parquet"))  # the key has the model: no duplicates
    assert len(back) == 20
    c = compare([back])
    assert c.names == ["model-a/T1", "model-a/T2", "model-b/T1", "model-b/T2"]  # a model by its last path part
    tables = comparison_tables(c, vote_over=["all"], analysis=Analysis(n_boot=50))
    acc = tables["methods"].set_index("method")
    # by hand: model-a T1 right on q1 q3 q10; T2 on q1 q2; model-b T1 on q1 q2 q10 q4, T2 on q2 q10
    assert acc.loc[["model-a/T1", "model-a/T2", "model-b/T1", "model-b/T2"], "correct"].tolist() == [3, 2, 4, 2]
    # the vote over the four, first of a tie in condition order: q1 A, q2 A (3 of 4), q3 A (A, B, B: B wins 2-1
    # -> wrong), q10 A (3 of 4), q4 C (C, A, C: C) -> right on q1 q2 q10
    assert acc.loc["regex_vote", "correct"] == 3
    tests = tables["paired_tests"].set_index(["a", "b"])
    pair = tests.loc[("model-a/T1", "model-b/T1")]
    # a-T1 right & b-T1 wrong: q3; b right & a wrong: q2, q4 -> exact two-sided p = 2 * P(X <= 1 | n=3) = 1.0
    assert (pair["a_only"], pair["b_only"]) == (1, 2) and pair["p_mcnemar"] == pytest.approx(1.0)
    assert len(tests) == math.comb(5, 2)  # four conditions and the vote: every pair, Holm over all of them
    with pytest.raises(DataError, match="template T1 answers question q1 in several runs or models"):
        from olakit.answering.vote import regex_vote

        regex_vote(back)  # a vote within one run: the two models' T1 are not one column


def test_folders_and_specs_side_by_side_with_missing_questions_listed(tmp_path):
    first = folder(tmp_path, "first", run_records(A, "m"))
    second = folder(tmp_path, "second", run_records(B, "m", drop=("q4",)))
    c = compare([first, second])
    assert c.names == ["first/T1", "first/T2", "second/T1", "second/T2"]  # the source tells them apart
    tables = comparison_tables(c, vote_over=["first/T1", "second/T1"], analysis=Analysis(n_boot=50))
    assert tables["left_out"]["question_id"].tolist() == ["q4"]
    acc = tables["methods"].set_index("method")
    assert acc.loc["second/T1", "n"] == 4 and acc.loc["second/T1", "correct"] == 3  # q1 q2 q10
    # the vote over first/T1 and second/T1 only: q1 A; q2 B,A tie -> B (first) wrong; q3 A,B -> A; q10 A
    assert acc.loc["regex_vote", "correct"] == 3
    assert list(tables["holm_matrix"].index) == [*c.names, "regex_vote"]
    with pytest.raises(DataError, match="vote_over names no condition: \\['T9'\\]"):
        comparison_tables(c, vote_over=["T9"])
    with pytest.raises(DataError, match="two sources are labelled 'x'"):
        compare([first, second], labels=["x", "x"])
    other = folder(tmp_path, "other", run_records(A, "m").assign(dataset="ekar_zh"))
    with pytest.raises(DataError, match="several datasets \\(aqua, ekar_zh\\)"):
        compare([first, other])
    changed = folder(tmp_path, "changed", run_records(A, "m").assign(question_hash="0123456789abcdef"))
    first_hashed = folder(tmp_path, "hashed", run_records(A, "m").assign(question_hash="fedcba9876543210"))
    with pytest.raises(DataError, match="other versions of questions \\['q1', 'q2', 'q3'\\]"):
        compare([first_hashed, changed])
    with pytest.raises(DataError, match="nowhere: not a run folder, a records file"):
        compare([tmp_path / "nowhere"])


def test_olakit_compare_writes_tables_and_olakit_again_makes_it_again(tmp_path, capsys):
    from olakit.cli import main

    first = folder(tmp_path, "first", run_records(A, "m"))
    second = folder(tmp_path, "second", run_records(B, "m"))
    out = tmp_path / "cmp"
    assert main(["compare", "--sources", f"{first},{second}", "--out", str(out), "--n-boot", "50"]) == 0
    printed = capsys.readouterr().out
    # four conditions, six pairs: no vote across them unless asked for (one would enter the Holm family)
    assert "second/T1" in printed and "6 pairs, exact McNemar with Holm: 0 differ at 0.05" in printed
    assert "regex vote" not in printed
    log = read_log(out)
    assert log.door == "compare" and log.config["sources"] == [str(first), str(second)]
    assert [s["label"] for s in log.extra["sources"]] == ["first", "second"]
    again = command(log, tmp_path / "again")
    assert main(shlex.split(again)[1:]) == 0
    assert load_records(tmp_path / "again" / "records.parquet").equals(load_records(out / "records.parquet"))
    # the same forms at every door: one source as a scalar is a list of one
    assert CompareConfig(sources=str(first)).sources == [str(first)]


def test_the_numpy_vote_is_majority_on_random_matrices():
    rng = random.Random(5)
    labels = ["A", "B", "C", None, RAW + "x", RAW + "y"]
    rows = [[rng.choice(labels) for _ in range(6)] for _ in range(400)]
    wide = pd.DataFrame(rows, index=pd.Index([f"q{i}" for i in range(400)], name="question_id"), dtype=object)
    matrix = VoteMatrix(wide)
    for tie in ("first", "none", "random"):
        rule = Analysis(tie=tie, analysis_seed=11)
        for subset in [(0, 1, 2, 3, 4, 5), (5, 2), (1, 3, 4), (4,)]:
            from olakit.rng import keyed_rng

            want = []
            for key, row in zip(wide.index, rows):
                got = majority([row[i] for i in subset], tie, keyed_rng(11, key) if tie == "random" else None)
                want.append(None if isinstance(got, str) and got.startswith(RAW) else got)
            assert matrix.vote(subset, rule) == want, (tie, subset)
        # every subset of a size at once (the template-count ablation's way) names the same winners
        for size in (1, 2, 3, 6):
            subsets = [s for s in itertools.permutations(range(6), size)][::7]
            at, won = matrix.winners_many(subsets, rule)
            for j, subset in enumerate(subsets):
                want = [majority([row[i] for i in subset], tie, keyed_rng(11, key) if tie == "random" else None)
                        for key, row in zip(wide.index, rows)]  # fmt: skip
                want = [None if isinstance(w, str) and w.startswith(RAW) else w for w in want]
                got = [row[a] if w else None for row, a, w in zip(rows, at[:, j], won[:, j])]
                assert got == want, (tie, subset)


def test_the_template_count_ablation_samples_beyond_its_limit_and_says_so():
    from olakit.analysis.tables import template_count_ablation

    rng = np.random.default_rng(3)
    names = [f"T{i}" for i in range(10)]
    answers = {t: [str(rng.choice(list("ABC"))) for _ in range(30)] for t in names}
    from tests.toys import answers_frame

    df = answers_frame(answers)
    table = template_count_ablation(df, names, Analysis(), max_subsets=100)
    by_k = table.set_index("k")
    # C(10, k) > 100 for k = 3..7: sampled, 100 subsets each; the others every subset
    assert by_k["sampled"].tolist() == [False, False, True, True, True, True, True, False, False, False]
    assert by_k["n_subsets"].tolist() == [10, 45, 100, 100, 100, 100, 100, 45, 10, 1]
    again = template_count_ablation(df, names, Analysis(), max_subsets=100)
    pd.testing.assert_frame_equal(table, again)  # seeded
    # k = 1: each template alone, its accuracy worked out here
    accs = [np.mean([a == "A" for a in answers[t]]) for t in names]
    assert by_k.loc[1, "max"] == pytest.approx(max(accs)) and by_k.loc[1, "mean"] == pytest.approx(np.mean(accs))


def test_every_pairs_kappa_at_once_is_cohens_kappa_of_that_pair():
    from olakit.analysis.agreement import cohen_kappa, pairwise_kappa

    rng = np.random.default_rng(8)
    values = rng.choice(["A", "B", "C", "unparsed"], size=(60, 5), p=[0.4, 0.3, 0.2, 0.1]).astype(object)
    values[:, 4] = "A"  # one rater constant: kappa is defined against a varying rater, NaN against itself
    kappa, agree = pairwise_kappa(values)
    for i in range(5):
        for j in range(5):
            want = cohen_kappa(values[:, i], values[:, j])
            assert (np.isnan(want) and np.isnan(kappa[i, j])) or kappa[i, j] == pytest.approx(want, abs=1e-12)
            assert agree[i, j] == pytest.approx(np.mean(values[:, i] == values[:, j]))


def test_replicates_give_the_noise_floor_and_a_changed_fingerprint_is_flagged_on_the_pairs(tmp_path):
    def run_folder(name, answers, prints):
        return write_run(tmp_path / name, run_records(answers, "m"), roles={"answerer": Role(model="m",
                         system_fingerprints=tuple(prints))})  # fmt: skip

    c = compare([run_folder("first", A, ["fp_1"]), run_folder("second", B, ["fp_2"]), run_folder("third", A, [])])
    tables = comparison_tables(c, analysis=Analysis(n_boot=50))
    rep = tables["replicates"].set_index(["a", "b"])
    # the same cell of the same model in two sources is a replicate. By hand, first vs second: T1 A,B,A,A,C against
    # A,A,B,A,A differs on q2 q3 q4; T2 A,A,-,B,C against B,A,B,A,C on q1 q3 q10. first vs third: the same answers.
    assert rep.loc[("first/T1", "second/T1"), "answers_differ"] == 3
    assert rep.loc[("first/T2", "second/T2"), "answers_differ"] == 3
    assert rep.loc[("first/T1", "third/T1"), "answers_differ"] == 0 and len(rep) == 6  # 3 pairs of runs x 2 cells
    assert rep.loc[("first/T1", "second/T1"), "share_differ"] == pytest.approx(3 / 5)
    tests = tables["paired_tests"].set_index(["a", "b"])
    assert tests.loc[("first/T1", "second/T1"), "fingerprint_change"] == "fp_1 vs fp_2"
    assert tests.loc[("first/T1", "first/T2"), "fingerprint_change"] == ""  # one run, one backend
    assert tests.loc[("first/T1", "third/T1"), "fingerprint_change"] == ""  # third recorded none: nothing known


def test_conditions_named_voted_and_counted_by_hand(tmp_path):
    """What compare makes of its sources (a hand mutation pass over olakit.analysis.compare: 14 of 20 mutants
    survived the tests before): a lone condition is named by its cell; two sources of two models are told apart by
    the source (the model is dropped first; the cell they share is not named); a default vote leaves out what is
    itself a vote or a baseline; a vote over one condition is none; repeats (samples past the first) are counted and
    never compared; each condition's answers are its own."""
    from olakit.analysis.compare import voters

    one = folder(tmp_path, "one", run_records(A, "m").query("template == 'T1'"))
    assert compare([one]).names == ["T1"]
    first = folder(tmp_path, "first", run_records(A, "m1").query("template == 'T1'"))
    second = folder(tmp_path, "second", run_records(B, "m2").query("template == 'T1'"))
    assert compare([first, second]).names == ["first", "second"]  # not "m1", "m2"
    given = {"T1": "AB", "T2": "AA", "llm_vote": "AA", "SC": "BA"}
    rows = [record(f"q{i + 1}", t, a, dataset="aqua") for t, answers in given.items() for i, a in enumerate(answers)]
    rows += [record("q1", "T1", "B", dataset="aqua", sample=1), record("q2", "SC", "B", dataset="aqua", sample=1)]
    c = compare([to_frame(rows)], labels=["run"])
    assert voters(c) == ["T1", "T2"] and c.repeats == 2
    assert c.conditions.set_index("condition")["answers"].to_dict() == {"T1": 2, "T2": 2, "llm_vote": 2, "SC": 2}
    tables = comparison_tables(c, vote_over=["T1"], analysis=Analysis(n_boot=20))
    methods = tables["methods"].set_index("method")
    assert "regex_vote" not in methods.index and (methods.loc["T1", "n"], methods.loc["T1", "correct"]) == (2, 1)


def test_replicates_pair_one_models_cell_and_share_over_the_questions_either_answered():
    """a and b are one cell of model m (a rerun), c the same cell of model n: one pair, a-b; they differ on q2 of
    the 3 questions either answered (q4 is c's only): 1/3."""
    from olakit.analysis.compare import fingerprint_change, replicates

    answers = {"a": "AAB", "b": "ABB", "c": "CCCC"}
    records = to_frame([record(f"q{i + 1}", t, x) for t, xs in answers.items() for i, x in enumerate(xs)])
    conditions = pd.DataFrame({"condition": ["a", "b", "c"], "model": ["m", "m", "n"], "cell": ["ST"] * 3})
    r = replicates(records, conditions)
    assert r[["a", "b", "n", "answers_differ"]].values.tolist() == [["a", "b", 3, 1]]
    assert r["share_differ"].tolist() == [pytest.approx(1 / 3)]
    assert fingerprint_change("fp1, fp2", "fp3") == "the backend changed within a run: fp1, fp2; fp3"
    assert fingerprint_change("fp1", "fp1, fp3") == "the backend changed within a run: fp1; fp1, fp3"
    assert (fingerprint_change("fp1", "fp2"), fingerprint_change("fp1", "fp1"), fingerprint_change("", "fp2")) == (
        "fp1 vs fp2", "", "")  # fmt: skip
