"""The statistics beyond the paper, each against an answer worked out by hand: exact McNemar, the paired bootstrap,
Holm, Cohen's and Fleiss' kappa, leave-one-out, the Pareto front and the similarity bands."""

import numpy as np
import pytest

from olakit.analysis.agreement import agreement, cohen_kappa, fleiss_kappa, leave_one_out, pairwise
from olakit.analysis.cost import cost_accuracy
from olakit.analysis.inference import holm, mcnemar_exact, paired_bootstrap
from olakit.analysis.similarity import SHOWN_NOTES, similarity_bands
from olakit.config import Stats
from olakit.data.records import to_frame
from tests.toys import record


def rec(qid, template, extracted, gold="A", prompt_tokens=None, completion_tokens=None, note_sims=()):
    return record(qid, template, extracted, gold, raw_output="x", cost=0.0, note_sims=tuple(note_sims),
                  prompt_tokens=prompt_tokens, completion_tokens=completion_tokens)  # fmt: skip


def test_mcnemar_exact_by_hand():
    # 3 questions only a gets right, 1 only b, 2 both, 1 neither: discordant 3 vs 1.
    a = [1, 1, 1, 0, 1, 1, 0]
    b = [0, 0, 0, 1, 1, 1, 0]
    # exact two-sided: 2 * P(X <= 1), X ~ Binomial(4, 1/2) = 2 * (1 + 4) / 16
    assert mcnemar_exact(a, b) == (3, 1, pytest.approx(10 / 16))
    assert mcnemar_exact([1, 0], [1, 0]) == (0, 0, 1.0)  # no discordant pair: nothing to test


def test_paired_bootstrap_by_hand():
    diff, lo, hi, p = paired_bootstrap([1, 1, 1, 1], [0, 0, 0, 0], Stats(n_boot=200))
    assert (diff, lo, hi, p) == (1.0, 1.0, 1.0, 0.0)  # every resample differs by exactly 1
    diff, lo, hi, p = paired_bootstrap([1, 0, 1], [1, 0, 1], Stats(n_boot=200))
    assert (diff, p) == (0.0, 1.0)
    diff, lo, hi, _ = paired_bootstrap([1, 0, 1, 0, 1], [0, 0, 1, 0, 0], Stats(analysis_seed=1))
    # differences 1, 0, 0, 0, 1: mean 0.4; a resample's mean lies on the grid 0, .2, ..., 1
    assert diff == pytest.approx(0.4) and 0.0 <= lo <= 0.4 <= hi <= 1.0
    assert lo * 5 == pytest.approx(round(lo * 5)) and hi * 5 == pytest.approx(round(hi * 5))


def test_holm_by_hand():
    # sorted 0.01, 0.03, 0.04 times 3, 2, 1 = 0.03, 0.06, 0.04; made monotone: 0.03, 0.06, 0.06
    assert holm([0.01, 0.04, 0.03]).tolist() == pytest.approx([0.03, 0.06, 0.06])
    assert holm([0.5, 0.9]).tolist() == pytest.approx([1.0, 1.0])


def test_cohen_and_fleiss_kappa_by_hand():
    # T1 A A B B, T2 A B B B: observed 3/4, expected .5 * .25 + .5 * .75 = .5, kappa = .25 / .5
    assert cohen_kappa("AABB", "ABBB") == pytest.approx(0.5)
    assert np.isnan(cohen_kappa("AAAA", "AAAA"))
    answers = {"q1": "AAA", "q2": "AAB", "q3": "BBB", "q4": "ABB"}
    df = to_frame([rec(q, f"T{i + 1}", a) for q, labels in answers.items() for i, a in enumerate(labels)])
    out = agreement(df, ["T1", "T2", "T3"])
    # Fleiss: per-question agreement 1, 1/3, 1, 1/3 -> mean 2/3; category shares .5/.5 -> chance .5;
    # kappa = (2/3 - 1/2) / (1 - 1/2) = 1/3
    assert out["fleiss_kappa"]["fleiss_kappa"].item() == pytest.approx(1 / 3)
    k = out["cohen_kappa"].set_index(["a", "b"])
    # T1 A A B A vs T3 A B B B: observed 2/4; expected .75 * .25 + .25 * .75 = .375; kappa = .125 / .625
    assert k.loc[("T1", "T3"), "cohen_kappa"] == pytest.approx(0.2)
    # gold A: both wrong where both say B: T1 and T3 on q3 only; wrong by either: q2, q3, q4
    ov = out["error_overlap"].set_index(["a", "b"])
    assert ov.loc[("T1", "T3"), "both_wrong"] == 1 and ov.loc[("T1", "T3"), "jaccard_wrong"] == pytest.approx(1 / 3)


def test_agreement_counts_unparsed_as_a_label_reads_sample_0_and_says_nan_where_undefined():
    """Worked by hand (a hand mutation pass over olakit.analysis.agreement, 13 mutants: 9 survived the files that
    use it; this test kills 8, the 9th is equivalent: an unparsed answer's label never equals a gold label). Gold A;
    sample 0: T1 A A B -, T2 A A B -, T3 A B A A (- unparsed); a second sample of T3, all B, is read by none of
    them. T1 and T2 agree on all four (unparsed is a label) and are both wrong on q2 and q3 (an unparsed answer is
    wrong): both_wrong 2 of 2 wrong by either; T3 agrees with each on q0 alone, and shares no wrong question. A pair
    neither of which is ever wrong has no overlap share (nan, not 0); one rater, or one label from every rater, has
    no Fleiss' kappa (nan, and no warning)."""
    import warnings

    said = {"T1": ["A", "A", "B", None], "T2": ["A", "A", "B", None], "T3": ["A", "B", "A", "A"]}
    rows = [record(f"q{i}", t, a) for t, labels in said.items() for i, a in enumerate(labels)]
    rows += [record(f"q{i}", "T3", "B", sample=1) for i in range(4)]
    df = to_frame(rows)
    m = pairwise(df, ["T1", "T2", "T3"], "zero-shot")
    assert m.loc["T1", "T2"] == m.loc["T2", "T1"] == 1.0
    assert m.loc["T1", "T3"] == m.loc["T3", "T1"] == m.loc["T3", "T2"] == 0.25
    out = agreement(df, ["T1", "T2", "T3"])
    overlap = out["error_overlap"].set_index(["a", "b"])
    assert overlap["both_wrong"].to_dict() == {("T1", "T2"): 2, ("T1", "T3"): 0, ("T2", "T3"): 0}
    assert overlap["jaccard_wrong"].to_dict() == {("T1", "T2"): 1.0, ("T1", "T3"): 0.0, ("T2", "T3"): 0.0}
    kappa = out["cohen_kappa"].set_index(["a", "b"])
    assert kappa.loc[("T1", "T2"), "cohen_kappa"] == 1.0 and kappa.loc[("T1", "T3"), "agreement"] == 0.25
    loo = leave_one_out(df, ["T1", "T2", "T3"]).set_index("left_out")
    assert loo.loc["T3", "vote_without"] == 0.5  # without T3, T1 and T2 vote A A B -: 2 of 4 right

    right = to_frame([record(f"q{i}", t, "A") for t in ("T1", "T2") for i in range(2)])
    overlap = agreement(right, ["T1", "T2"])["error_overlap"]
    assert overlap["both_wrong"].tolist() == [0] and np.isnan(overlap["jaccard_wrong"].iloc[0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert np.isnan(fleiss_kappa(np.array([["A"], ["B"]])))
        assert np.isnan(fleiss_kappa(np.array([["A", "A"], ["A", "A"]])))


def test_leave_one_out_by_hand():
    # gold A; ties go to the template first in order. Votes with all three / without T1 / T2 / T3:
    # q1 A A B: A / A(A,B tie) / A / A      q2 A B B: B / B / A(tie) / A(tie)
    # q3 B A A: A / A / B(tie) / B(tie)      q4 A A C: A / A(tie) / A(tie) / A
    answers = {"q1": "AAB", "q2": "ABB", "q3": "BAA", "q4": "AAC"}
    df = to_frame([rec(q, f"T{i + 1}", a) for q, labels in answers.items() for i, a in enumerate(labels)])
    loo = leave_one_out(df, ["T1", "T2", "T3"]).set_index("left_out")
    assert loo["vote_all"].tolist() == [0.75, 0.75, 0.75]
    assert loo["vote_without"].to_dict() == {"T1": 0.75, "T2": 0.75, "T3": 0.75}
    assert loo["adds_least"].all()
    # q2 B A B: all B / without T1 A(tie) / without T2 B / without T3 B(tie): only leaving T1 out helps
    answers["q2"] = "BAB"
    df = to_frame([rec(q, f"T{i + 1}", a) for q, labels in answers.items() for i, a in enumerate(labels)])
    loo = leave_one_out(df, ["T1", "T2", "T3"]).set_index("left_out")
    assert loo.loc["T1", "vote_without"] == 1.0 and loo.loc["T1", "delta"] == pytest.approx(-0.25)
    assert loo["adds_least"].to_dict() == {"T1": True, "T2": False, "T3": False}


def test_pareto_front_by_hand():
    # 2 questions, gold A. T1 A A (acc 1, 10 tokens), T2 A B (.5, 5 tokens), T3 B A (.5, 20 tokens);
    # the vote: A A B -> A, A B A -> A (acc 1, 35 tokens). Front: T2 (cheapest) and T1 (best at 10 tokens).
    rows = []
    for t, labels, tokens in (("T1", "AA", 10), ("T2", "AB", 5), ("T3", "BA", 20)):
        rows += [rec(f"q{i}", t, a, prompt_tokens=tokens - 2, completion_tokens=2) for i, a in enumerate(labels)]
    out = cost_accuracy(to_frame(rows), ["T1", "T2", "T3"]).set_index("method")
    assert out["tokens_per_question"].to_dict() == {"T1": 10, "T2": 5, "T3": 20, "regex_vote": 35}
    assert out["accuracy"].to_dict() == {"T1": 1.0, "T2": 0.5, "T3": 0.5, "regex_vote": 1.0}
    assert out["pareto"].to_dict() == {"T1": True, "T2": True, "T3": False, "regex_vote": False}
    assert set(out["tokens_source"]) == {"reported"}


def test_cost_by_hand_with_a_price_two_strategies_a_tie_on_the_front_and_estimated_tokens():
    """cost_accuracy's other branches, worked by hand: a price in USD per million (prompt, completion) tokens, each
    strategy's cells costed from its own records only, a vote the sum of its templates per question, two cells equal
    in tokens and accuracy both on the front (neither is better in either), and records with no reported tokens
    estimated at 4 characters a token for the prompt and the output, their cost the records' own."""
    toks = {("T1", "zero-shot"): (100, 20), ("T2", "zero-shot"): (50, 10), ("T1", "random"): (300, 60),
            ("T2", "random"): (50, 10)}  # fmt: skip
    said = {("T1", "zero-shot"): "AA", ("T2", "zero-shot"): "BA", ("T1", "random"): "AB", ("T2", "random"): "BA"}
    rows = [
        record(f"q{i}", t, a, notes_strategy=s, prompt_tokens=toks[t, s][0], completion_tokens=toks[t, s][1])
        for (t, s), labels in said.items()
        for i, a in enumerate(labels)
    ]
    out = cost_accuracy(to_frame(rows), ["T1", "T2"], price=(1.0, 2.0)).set_index(["method", "notes_strategy"])
    # per question: T1 120 tokens (100 x $1 + 20 x $2 per million), T2 60, T1 on random 360; each vote the sum
    want_tokens = {("T1", "zero-shot"): 120, ("T2", "zero-shot"): 60, ("T1", "random"): 360, ("T2", "random"): 60,
                   ("regex_vote", "zero-shot"): 180, ("regex_vote", "random"): 420}  # fmt: skip
    want_usd = {("T1", "zero-shot"): 140e-6, ("T2", "zero-shot"): 70e-6, ("T1", "random"): 420e-6,
                ("T2", "random"): 70e-6, ("regex_vote", "zero-shot"): 210e-6,
                ("regex_vote", "random"): 490e-6}  # fmt: skip
    assert out["tokens_per_question"].to_dict() == want_tokens
    assert out["usd_per_question"].to_dict() == pytest.approx(want_usd)
    cells = [("T1", "zero-shot"), ("T2", "zero-shot"), ("T1", "random"), ("T2", "random")]
    assert out.loc[cells, "accuracy"].tolist() == [1.0, 0.5, 0.5, 0.5]
    # the front: T1 (120, 1.0) and both T2 cells (60, 0.5), equal to each other; T1 on random and the votes, more
    # tokens for no more accuracy than a cheaper cell, are off it (whatever each vote's tie gives)
    front = {k for k, v in out["pareto"].items() if v}
    assert front == {("T1", "zero-shot"), ("T2", "zero-shot"), ("T2", "random")}
    assert set(out["tokens_source"]) == {"reported"}

    unreported = [record(f"q{i}", "T1", "A", prompt_chars=400, raw_output="x" * 80, cost=0.25) for i in range(2)]
    est = cost_accuracy(to_frame(unreported), ["T1"]).set_index("method").loc["T1"]
    assert (est["tokens_per_question"], est["usd_per_question"]) == (400 / 4 + 80 / 4, 0.25)
    assert est["tokens_source"] == "estimated (prompt and output chars / 4)"
    mixed = [unreported[0], record("q1", "T1", "A", prompt_tokens=100, completion_tokens=20)]  # one estimate is enough
    assert set(cost_accuracy(to_frame(mixed), ["T1"])["tokens_source"]) == {"estimated (prompt and output chars / 4)"}


def test_similarity_bands_by_hand():
    rows = [
        rec("q1", "T1", "A", note_sims=[0.2]),
        rec("q2", "T1", "B", note_sims=[0.5, 0.4]),
        rec("q3", "T1", "A", note_sims=[0.7]),
        rec("q4", "T1", "C", note_sims=[0.65]),
        rec("q5", "T1", "A"),
    ]
    out = similarity_bands(to_frame(rows), analysis=Stats(n_boot=50)).set_index("band")
    # q1 .2 in (-1, .3]; q2 mean .45 in (.3, .45]; q3 .7 and q4 .65 in (.6, 1]; q5 has no notes: left out
    assert out["n"].to_dict() == {"(-1.001, 0.3]": 1, "(0.3, 0.45]": 1, "(0.6, 1.0]": 2}
    assert out["accuracy"].to_dict() == {"(-1.001, 0.3]": 1.0, "(0.3, 0.45]": 0.0, "(0.6, 1.0]": 0.5}
    assert set(out["similarity_measure"]) == {SHOWN_NOTES}
    # records whose first is the most similar, and a second template: each template's bands in the edges' order
    # (they once came in the records' order: (0.6, 1.0] first)
    again = rows[::-1] + [rec(q, "T2", "A", note_sims=[s]) for q, s in (("q6", 0.9), ("q7", 0.5), ("q8", 0.1))]
    out = similarity_bands(to_frame(again), edges=(-1.0, 0.3, 0.6, 1.0), analysis=Stats(n_boot=50))
    assert out[["method", "band", "n"]].values.tolist() == [
        ["T1", "(-1.001, 0.3]", 1], ["T1", "(0.3, 0.6]", 1], ["T1", "(0.6, 1.0]", 2],
        ["T2", "(-1.001, 0.3]", 1], ["T2", "(0.3, 0.6]", 1], ["T2", "(0.6, 1.0]", 1],
    ]  # fmt: skip


def test_similarity_bands_from_each_questions_nearest_note_by_hand():
    """The recorded runs' path: a similarity per question id (a question without one is left out, not put in the
    lowest band), first samples only, and the mean similarity of a band (0.61, 0.62 and 0.9: 0.71, their median
    0.62)."""
    import pandas as pd

    from olakit.analysis.similarity import NEAREST_NOTE

    rows = [rec(q, "T1", "A") for q in ("q1", "q2", "q3", "q4", "q5")]
    rows += [record("q1", "T1", "B", sample=1)]  # a second sample, wrong: not counted
    sims = pd.Series({"q1": 0.61, "q2": 0.62, "q3": 0.9, "q4": 0.1})  # q5: none
    out = similarity_bands(to_frame(rows), sims, edges=(-1.0, 0.5, 1.0), analysis=Stats(n_boot=50))
    assert out[["band", "n", "correct"]].values.tolist() == [["(-1.001, 0.5]", 1, 1], ["(0.5, 1.0]", 3, 3]]
    assert out["mean_similarity"].tolist() == pytest.approx([0.1, (0.61 + 0.62 + 0.9) / 3], abs=1e-12)
    assert set(out["similarity_measure"]) == {NEAREST_NOTE}


def test_all_pairs_at_once_match_each_pair_alone():
    """paired_tests resamples each cell once for all its pairs; every pair's numbers must be exactly those of
    paired_bootstrap and mcnemar_exact on that pair alone, also where cells miss different questions."""
    import pandas as pd

    from olakit.analysis.inference import paired_tests

    rng = np.random.default_rng(3)
    outcomes = pd.DataFrame(rng.random((60, 4)) < [0.3, 0.5, 0.6, 0.8], columns=list("abcd")).astype(object)
    outcomes.iloc[:7, 1] = None  # b misses 7 questions, d 3 others
    outcomes.iloc[50:53, 3] = None
    got = paired_tests(outcomes, analysis=Stats(n_boot=500, analysis_seed=4)).set_index(["a", "b"])
    assert len(got) == 6
    for (a, b), row in got.iterrows():
        both = outcomes[[a, b]].dropna().astype(bool)
        diff, lo, hi, p = paired_bootstrap(both[a], both[b], Stats(n_boot=500, analysis_seed=4))
        assert (row["n"], row["diff"], row["diff_ci_low"], row["diff_ci_high"], row["p_bootstrap"]) == (
            len(both),
            diff,
            lo,
            hi,
            p,
        )
        assert (row["a_only"], row["b_only"], row["p_mcnemar"]) == mcnemar_exact(both[a], both[b])


def test_exact_mcnemar_agrees_with_statsmodels():
    """statsmodels' mcnemar(exact=True) is an independent implementation of the same test."""
    from statsmodels.stats.contingency_tables import mcnemar

    rng = np.random.default_rng(5)
    for _ in range(200):
        n = int(rng.integers(1, 60))
        a, b = rng.random(n) < rng.random(), rng.random(n) < rng.random()
        table = [[int((a & b).sum()), int((a & ~b).sum())], [int((~a & b).sum()), int((~a & ~b).sum())]]
        n10, n01, p = mcnemar_exact(a, b)
        assert (n10, n01) == (table[0][1], table[1][0])
        want = 1.0 if n10 + n01 == 0 else float(mcnemar(table, exact=True).pvalue)
        assert p == pytest.approx(want, rel=1e-12)


def holm_by_hand(p) -> list[float]:
    """Holm's adjusted p-values from the definition, in plain Python: the i-th smallest (0-based) of m times
    (m - i), made non-decreasing in that order, at most 1, back in the given order."""
    m = len(p)
    order = sorted(range(m), key=lambda j: p[j])
    adjusted, running = [0.0] * m, 0.0
    for i, j in enumerate(order):
        running = max(running, min(1.0, (m - i) * float(p[j])))
        adjusted[j] = running
    return adjusted


@pytest.mark.slow
def test_holm_and_kappas_agree_with_statsmodels_and_scikit_learn():
    """olakit computes Holm and both kappas with numpy; statsmodels and scikit-learn are independent references."""
    from sklearn.metrics import cohen_kappa_score
    from statsmodels.stats.inter_rater import aggregate_raters
    from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss
    from statsmodels.stats.multitest import multipletests

    from olakit.analysis.agreement import fleiss_kappa

    rng = np.random.default_rng(8)
    for i in range(50):
        p = rng.random(int(rng.integers(1, 40))) ** 3
        p[rng.random(p.size) < 0.2] = p[0]  # ties
        assert holm(p) == pytest.approx(holm_by_hand(p), abs=1e-15)
        if i < 6:  # statsmodels' Holm calls gc.collect() every time: 0.5-1 s each in a test process this large
            assert holm(p) == pytest.approx(multipletests(p, method="holm")[1], abs=1e-15)
        n, raters = int(rng.integers(3, 50)), int(rng.integers(2, 6))
        labels = rng.choice(["A", "B", "C", "unparsed"], size=(n, raters), p=[0.5, 0.2, 0.2, 0.1])
        counts, _ = aggregate_raters(labels)
        want = sm_fleiss(counts, method="fleiss")
        assert fleiss_kappa(labels) == pytest.approx(want, abs=1e-12, nan_ok=True)
        a, b = labels[:, 0], labels[:, 1]
        if len(set(a)) > 1 or len(set(b)) > 1:
            assert cohen_kappa(a, b) == pytest.approx(cohen_kappa_score(a, b), abs=1e-12)


def test_paired_tests_intervals_are_paired_bootstraps_pair_by_pair():
    """paired_tests computes every pair's interval at once; each equals paired_bootstrap on that pair alone, bit for
    bit (the same resamples, the same quantiles), questions a cell left out dropped pair by pair."""
    import numpy as np
    import pandas as pd

    from olakit.analysis.inference import paired_tests

    rng = np.random.default_rng(1)
    df = pd.DataFrame(rng.random((300, 6)) < 0.5, columns=list("abcdef")).astype(object)
    df.iloc[::7, 2] = None
    tests = paired_tests(df)
    assert len(tests) == 15
    for _, r in tests.iterrows():
        keep = df[[r["a"], r["b"]]].notna().all(axis=1)
        _, lo, hi, p = paired_bootstrap(df.loc[keep, r["a"]].astype(bool), df.loc[keep, r["b"]].astype(bool))
        assert (lo, hi, p) == (r["diff_ci_low"], r["diff_ci_high"], r["p_bootstrap"]), (r["a"], r["b"])


def test_the_cases_a_hand_mutation_pass_of_the_paired_tests_found_unchecked():
    """18 hand-made mutants of olakit.analysis.inference against this file, test_analysis, test_variance,
    test_paper_numbers and test_power: 8 killed, 10 survived; the lines below kill six, each of which also survives
    the whole fast tier without them. The others are equivalent:
    mid-p's cap at 1 (its largest value, at k = n / 2, is exactly 1), the bootstrap p of a pair that never differs
    (every resampled difference is 0, so the p is 1 anyway), the fill of cells a question lacks (a pair reads only
    the questions both answered), and the pivot's first-of-duplicates (one record per question and cell at sample 0)."""
    import pandas as pd

    from olakit.analysis.inference import cell_outcomes, paired_tests, tie_group
    from tests.toys import answers_frame

    # one pair, 5 discordant answers all one way: exact p = 2 / 2**5 = 1/16, the Holm p of a family of one; at an
    # alpha of exactly 1/16 it is not below alpha, so not significant, and the cell is tied with the best
    outcomes = pd.DataFrame({"A": [1, 1, 1, 1, 1, 0], "B": [0, 0, 0, 0, 0, 0]}, dtype=object)
    tests = paired_tests(outcomes, analysis=Stats(alpha=1 / 16, n_boot=50))
    assert tests["p_mcnemar_holm"].tolist() == [1 / 16] and tests["significant"].tolist() == [False]
    tied = tie_group(tests, {"A": 5 / 6, "B": 0.0}, Stats(alpha=1 / 16)).set_index("cell")["tied_with_best"]
    assert tied.to_dict() == {"A": True, "B": True}
    # the bootstrap's p-values are Holm-corrected over the pairs too
    rng = np.random.default_rng(4)
    many = pd.DataFrame(rng.integers(0, 2, (40, 4)), columns=list("PQRS"), dtype=object)
    t = paired_tests(many, analysis=Stats(n_boot=200))
    assert np.allclose(t["p_bootstrap_holm"], holm_by_hand(t["p_bootstrap"].tolist()))
    # a cell with no paired test against the best is not shown to differ: tied; the first of equal bests is the best
    group = tie_group(tests, {"A": 0.5, "B": 0.5, "C": 0.1}).set_index("cell")
    assert bool(group.loc["A", "best"]) and group["tied_with_best"].to_dict() == {"A": True, "B": True, "C": True}
    # a template's cell is its answers at sample 0: the sample-1 answer given first in the records is not it
    df = answers_frame({"T1": ["A", "B"], "T2": ["A", "A"]}, gold=["A", "A"])
    resampled = df[df["template"] == "T1"].assign(sample=1, extracted="B", correct=False)
    out = cell_outcomes(pd.concat([resampled, df], ignore_index=True), ["T1", "T2"], vote=False)
    assert out["T1 | zero-shot"].tolist() == [True, False]
