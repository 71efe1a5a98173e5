"""Consistency, bounds, template statistics and CIs on a small example worked out by hand."""

import numpy as np
import pandas as pd
import pytest

from olakit.analysis import tables as analysis
from olakit.answering.vote import regex_vote
from olakit.data.records import to_frame
from olakit.settings import Analysis
from tests.toys import answers_frame, record

# 5 templates x 4 questions, gold "A" everywhere.
#        T1    T2    T3    T4    T5
# q0     A     A     A     B     C      3 right, largest wrong group 1, plurality 3
# q1     A     A     B     B     C      2 right vs 2 wrong (B): a tie, plurality 2
# q2     B     B     B     A     -      1 right vs 3 wrong, plurality 3
# q3     -     -     -     -     -      nothing parsed, plurality 0
ANSWERS = {
    "T1": ["A", "A", "B", None],
    "T2": ["A", "A", "B", None],
    "T3": ["A", "B", "B", None],
    "T4": ["B", "B", "A", None],
    "T5": ["C", "C", None, None],
}


ABSTAIN = Analysis(unparsed="abstain")
"""The example is worked out with unparsed answers left out of the vote (the authors' rule, "raw", is tested in
tests/test_paper_numbers.py against their own files)."""


def toy(strategy="zero-shot"):
    # q3 is cut off at the limit for every template; T5's unparsed q2 finished without an answer
    def stops(i, label):
        cause = "" if label else ("cut_off" if i == 3 else "no_answer")
        return {"finish_reason": "length" if i == 3 else "stop", "unparsed_cause": cause}

    return answers_frame(ANSWERS, per_question=stops, notes_strategy=strategy)


def test_answer_counts_by_hand():
    s = analysis.answer_counts(toy(), rule=ABSTAIN).set_index("question_id")
    assert s["n_correct"].tolist() == [3, 2, 1, 0]
    assert s["n_wrong_top"].tolist() == [1, 2, 3, 0]
    assert s["n_plurality"].tolist() == [3, 2, 3, 0]
    assert s["n_unparsed"].tolist() == [0, 0, 1, 5]
    # under the authors' rule an unparsed answer votes as its raw text, and is still counted as unparsed (a hand
    # mutation pass over olakit.answering.vote found nothing here that checked it; test_widgets' filters do too)
    raw = analysis.answer_counts(toy(), rule=Analysis(unparsed="raw")).set_index("question_id")
    assert raw["n_unparsed"].tolist() == [0, 0, 1, 5]


def test_consistency_table_by_hand():
    t = analysis.consistency_table(analysis.answer_counts(toy(), rule=ABSTAIN))
    assert t["zero-shot"].to_dict() == {0: 1, 1: 0, 2: 1, 3: 2, 4: 0, 5: 0}


def test_bounds_by_hand():
    df = toy()
    stats = analysis.answer_counts(df, rule=ABSTAIN)
    b = analysis.bounds_long(stats, regex_vote(df, analysis=ABSTAIN), Analysis(n_boot=50)).set_index("method")[
        "accuracy"
    ]
    assert b["regex_upper"] == 2 / 4  # q0 (3 >= 1) and q1 (2 >= 2); q3 has nobody right
    assert b["regex_lower"] == 1 / 4  # only q0 (3 > 1)
    assert b["regex_vote"] == 2 / 4  # q0 A; q1 tie A/B -> A (first in template order)
    b_none = analysis.bounds_long(
        stats, regex_vote(df, analysis=ABSTAIN.replace(tie="none")), Analysis(n_boot=50)
    ).set_index("method")["accuracy"]
    assert b_none["regex_vote"] == 1 / 4  # the tie on q1 gives no answer: the lower bound


def test_accuracy_and_precision_tables_by_hand():
    long = analysis.accuracy_long(toy(), analysis=ABSTAIN.replace(n_boot=50))
    acc = analysis.accuracy_wide(long)["zero-shot"]
    assert acc.to_dict() == {"T1": 0.5, "T2": 0.5, "T3": 0.25, "T4": 0.25, "T5": 0.0, "regex_vote": 0.5}
    p = analysis.precision_table(long)["zero-shot"]
    assert p["Range"] == pytest.approx(0.5) and p["Mean"] == pytest.approx(0.3)
    assert list(long.columns) == ["method", "notes_strategy", "n", "correct", "accuracy", "ci_low", "ci_high"]


def test_template_count_by_hand():
    t = analysis.template_count_ablation(toy(), analysis=ABSTAIN).set_index("k")
    assert t["n_subsets"].tolist() == [5, 10, 10, 5, 1]
    assert t.loc[1, "mean"] == pytest.approx(0.3) and t.loc[1, "min"] == 0 and t.loc[1, "max"] == 0.5
    assert t.loc[5, "mean"] == 0.5 and t.loc[5, "best_subset"] == "T1+T2+T3+T4+T5"
    # T1+T5: q0 A/C tie -> A right, q1 A/C tie -> A right, q2 B wrong, q3 none: 0.5;
    # T3+T4 (q0 A/B -> A, q1 B, q2 B/A -> B, q3 -) is 0.25; the k=2 max is T1+T2: A, A, B, - = 0.5
    assert t.loc[2, "max"] == 0.5


def test_extraction_audit():
    a = analysis.extraction_audit(toy()).set_index("template")
    assert a["unparsed"].to_dict() == {"T1": 1, "T2": 1, "T3": 1, "T4": 1, "T5": 2}
    assert a["cut_off"].to_dict() == {"T1": 1, "T2": 1, "T3": 1, "T4": 1, "T5": 1}
    assert a["no_answer"].to_dict() == {"T1": 0, "T2": 0, "T3": 0, "T4": 0, "T5": 1}
    assert a["not_an_option"].sum() == 0 and a["second_stage"].sum() == 0 and a["cut_off_outputs"].eq(1).all()


def test_a_single_proportion_gets_wilsons_interval():
    """The percentile bootstrap gave [0, 0] for 0 of 3 correct and [1, 1] for 2 of 2. Known answers: statsmodels'
    proportion_confint(method="wilson"), and 0 of 3 worked by hand (z = 1.96: centre = (z^2/6) / (1 + z^2/3),
    half = z * sqrt(z^2/36) / (1 + z^2/3), so the interval is [0, (z^2/3) / (1 + z^2/3)] = [0, 0.5615])."""
    from statsmodels.stats.proportion import proportion_confint

    from olakit.analysis.intervals import accuracy_row, wilson_ci
    from olakit.config import Stats

    z2 = 1.959963984540054**2
    assert wilson_ci(0, 3) == (0.0, pytest.approx((z2 / 3) / (1 + z2 / 3)))
    for k, n, level in ((0, 3, 0.95), (2, 2, 0.95), (60, 100, 0.95), (60, 100, 0.9), (7, 254, 0.99)):
        want = proportion_confint(k, n, alpha=1 - level, method="wilson")
        got = wilson_ci(k, n, Stats(level=level))
        assert got == (pytest.approx(want[0]), pytest.approx(want[1])), (k, n, level)
    lo, hi = wilson_ci(2, 2)
    assert 0.3 < lo < 1.0 and hi == 1.0  # 2 of 2 is not certainty
    row = accuracy_row("ST", "zero-shot", [1, 1, 0], Analysis(level=0.9))
    assert (row["ci_low"], row["ci_high"]) == wilson_ci(2, 3, Stats(level=0.9))


def test_wilsons_interval_is_exact_at_the_ends():
    """None right gives a lower bound of exactly 0 and all right an upper bound of exactly 1, at every n and level
    (by hand: at k = 0 the centre and the half-width are both (z^2/2n) / (1 + z^2/n); at k = n, centre + half is 1),
    as statsmodels' proportion_confint gives them. In floating point the closed form misses by an ulp either way: it
    gave 0.9999999999999999 for 12 of 12 at 80%, and, unclamped, a lower bound below 0 at 282 of n = 1..2,999 at 95%
    (the first at n = 21). Found by a hand mutation pass over olakit.analysis.intervals: the suite's n of 2 and 3
    never met one, and dropping either clamp survived it."""
    from olakit.analysis.intervals import wilson_ci
    from olakit.config import Stats

    for level in (0.8, 0.9, 0.95, 0.99):
        stats = Stats(level=level)
        for n in range(1, 120):
            assert wilson_ci(0, n, stats)[0] == 0.0, (n, level)
            assert wilson_ci(n, n, stats)[1] == 1.0, (n, level)


def test_no_judgement_has_no_shares():
    """A judge with no verdicts gives shares of nan, not 0 (a share of nothing is not a share of none), and no
    position bias (a hand mutation pass over olakit.analysis.intervals)."""
    import math

    from olakit.analysis.intervals import verdict_shares

    s = verdict_shares([], labels=("loop", "direct"))
    assert s["n"] == 0
    assert all(math.isnan(s[name]) for name in ("loop", "tie", "direct", "unclear", "position_bias_first"))
    assert all(math.isnan(lo) and math.isnan(hi) for lo, hi in (s[f"{n}_ci"] for n in ("loop", "tie", "direct")))


def test_compare_with_paper():
    ours = {"table3": pd.DataFrame({"zero-shot": [0.5]}, index=["ST"])}
    paper = {"table3": {"ST": {"zero-shot": 0.52, "random": None}, "SC": {"zero-shot": 0.3}}}
    c = analysis.compare_with_paper(ours, paper)
    assert c.loc[0, ["row", "paper", "recomputed"]].tolist() == ["ST", 0.52, 0.5]
    assert c.loc[0, "diff"] == pytest.approx(-0.02) and np.isnan(c.loc[1, "recomputed"]) and len(c) == 2


def test_recorded_olagpt_tables(olagpt_records):
    """The real recorded data: 20 cells of 254, and the vote rows over all five templates."""
    assert olagpt_records.groupby(["template", "notes_strategy"]).size().eq(254).all()
    assert len(olagpt_records) == 5 * 4 * 254
    stats = analysis.answer_counts(olagpt_records)
    t4 = analysis.consistency_table(stats)
    assert t4.sum().eq(254).all() and list(t4.columns) == ["zero-shot", "random", "retrieval", "combine"]


def test_review_iterations_plot_has_whole_number_iterations_and_keeps_zero_in_view():
    import matplotlib

    matplotlib.use("Agg")
    from olakit.analysis.figures import accuracy_by_iteration

    table = pd.DataFrame(
        {
            "method": ["direct", "review-lite@0", "review-lite@1", "review-lite@2"],
            "iteration": [None, 0, 1, 2],
            "n": [4] * 4,
            "accuracy": [0.5, 0.0, 0.25, 1.0],
            "ci_low": [0.1, 0.0, 0.0, 1.0],
            "ci_high": [0.9, 0.0, 0.7, 1.0],
        }
    )
    ax = accuracy_by_iteration(table)
    assert list(ax.get_xticks()) == [0, 1, 2]
    low, high = ax.get_ylim()
    assert low < 0 and high > 1  # the points at 0 and 1 are drawn inside the axes, not on their edge


def test_fig7_labels_its_error_bars_as_95_percent_cis():
    import matplotlib

    matplotlib.use("Agg")
    from olakit.analysis.figures import before_after_voting

    rows = [
        {"method": m, "notes_strategy": "zero-shot", "n": 10, "accuracy": a, "ci_low": a - 0.1, "ci_high": a + 0.1}
        for m, a in (("DT", 0.3), ("ST", 0.4), ("regex_vote", 0.5), ("llm_vote", 0.45))
    ]
    ax = before_after_voting(pd.DataFrame(rows))
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "regex vote (95% CI)" in labels and "llm vote (95% CI)" in labels


def test_holm_matrix_orders_every_methods_rows_by_strategy_and_the_figure_gives_n():
    """Cells first seen in another order (the vote's rows came out random before zero-shot) follow the paper's
    strategy order within each method."""
    import matplotlib

    matplotlib.use("Agg")
    from olakit.analysis.inference import holm_matrix
    from olakit.notebook.ablations import note_strategy_figures

    cells = ["DT | zero-shot", "DT | random", "regex_vote | random", "regex_vote | zero-shot"]
    pairs = [(a, b) for i, a in enumerate(cells) for b in cells[i + 1 :]]
    tests = pd.DataFrame({"a": [a for a, _ in pairs], "b": [b for _, b in pairs], "p_mcnemar_holm": 0.5, "n": 37})
    m = holm_matrix(tests)
    assert list(m.index) == ["DT | zero-shot", "DT | random", "regex_vote | zero-shot", "regex_vote | random"]
    kappas = pd.DataFrame(
        [
            {"notes_strategy": s, "a": a, "b": b, "cohen_kappa": 0.5}
            for s in ("zero-shot", "random", "retrieval", "combine")
            for a, b in (("DT", "ST"), ("DT", "PT"), ("PT", "ST"))
        ]
    )
    cost = pd.DataFrame(
        {
            "method": ["DT"],
            "notes_strategy": ["zero-shot"],
            "tokens_per_question": [100.0],
            "tokens_source": ["estimated"],
            "accuracy": [0.3],
            "pareto": [True],
        }
    )
    figs = note_strategy_figures(tests, kappas, cost)
    assert "(n = 37)" in figs["table3_holm_matrix"].axes[0].get_title()
    fig_k = figs["template_kappa"]
    panels = [ax for ax in fig_k.axes if ax.get_title()]
    assert len(panels) == 4 and len(fig_k.axes) == 5  # four panels, one colour bar
    sizes = {t.get_fontsize() for ax in panels for t in ax.texts}
    assert sizes and min(sizes) >= 9


def test_precision_table_of_a_run_with_the_turbo_baseline_only():
    """`olakit run --templates turbo` once failed after its calls: Table 7 leaves turbo out and had no column."""
    from olakit.analysis.tables import precision_table

    long = pd.DataFrame(
        {
            "method": ["turbo", "turbo", "regex_vote"],
            "notes_strategy": ["retrieval", "zero-shot", "zero-shot"],
            "accuracy": [0.1, 0.2, 0.3],
        }
    )
    t = precision_table(long)
    assert list(t.columns) == ["zero-shot", "retrieval"] and t.isna().all().all()
    long = pd.DataFrame(
        {"method": ["DT", "ST", "DT", "ST"], "notes_strategy": ["zero-shot", "zero-shot", "random", "random"],
         "accuracy": [0.1, 0.2, 0.3, 0.6]}
    )  # fmt: skip
    t = precision_table(long)
    assert t.loc["Range"].tolist() == pytest.approx([0.1, 0.3]) and t.loc["Mean"].tolist() == pytest.approx(
        [0.15, 0.45]
    )


def test_the_question_explorers_views_by_hand():
    """What the question explorer filters and says, and Fig 12's grid, on four templates' answers worked by hand
    (gold A): q0 AAAA, q1 AAB-, q2 BBB-, q3 BBAC, q4 ---- (-: unread); a second sample of q0 and another strategy's
    q0, both all wrong, are in the records and in neither view."""
    from olakit.analysis.questions import agreement_summary, fig12_grid, filter_questions, question_tables
    from olakit.data.records import to_frame
    from tests.toys import record

    answers = {"q0": "AAAA", "q1": "AAB-", "q2": "BBB-", "q3": "BBAC", "q4": "----"}
    templates = ["T1", "T2", "T3", "T4"]
    rows = [record(q, t, None if a == "-" else a) for q, said in answers.items() for t, a in zip(templates, said)]
    rows += [record("q0", t, "B", sample=1) for t in templates]
    rows += [record("q0", t, "B", notes_strategy="random") for t in templates]
    counts, vote = question_tables(to_frame(rows), templates)
    zero = (counts["notes_strategy"] == "zero-shot").to_numpy()
    ids = counts["question_id"].to_numpy()

    def shown(kind):
        return sorted(ids[zero & filter_questions(counts, vote, kind).to_numpy()])

    assert shown("all") == ["q0", "q1", "q2", "q3", "q4"]
    # split: the largest group below the templates that answered (q2's three Bs are all that answered)
    assert shown("split") == ["q1", "q3"]
    assert shown("unparsed") == ["q1", "q2", "q4"]
    assert shown("vote_wrong_some_right") == ["q3"]  # q2's vote is wrong too, but no template is right
    # Fig 12: (largest wrong group, templates right) per question: q0 (0, 4), q1 (1, 2), q2 (3, 0), q3 (2, 1),
    # q4 (4, 0): under the authors' rule an unread answer is the label of its raw text, here the same empty text
    # for all four; the other strategy's q0 (4, 0) is not counted
    want = [[0] * 5 for _ in range(5)]
    for w, a in ((0, 4), (1, 2), (3, 0), (2, 1), (4, 0)):
        want[w][a] += 1
    assert fig12_grid(counts, "zero-shot").values.tolist() == want
    said = agreement_summary({"T1": "B", "T2": "B", "T3": "A", "T4": None}, "A")
    assert said == "2 of 4 templates say B (wrong; gold A); 1 correct; 1 unparsed"
    assert agreement_summary(dict.fromkeys(templates), "A") == "no template gave a parseable answer (gold A)"


def test_a_strategy_of_ones_own_comes_after_the_papers_four():
    """Table 3's columns and the long table's rows: the paper's strategies in its order, then any other (a user's
    own strategy, the compared conditions' column) in the order the records give it (a hand mutation pass over
    olakit.analysis.tables: nothing had a strategy outside the paper's four)."""
    df = pd.concat([toy("mine"), toy("random"), toy("zero-shot")], ignore_index=True)
    long = analysis.accuracy_long(df, analysis=ABSTAIN.replace(n_boot=50))
    assert list(analysis.accuracy_wide(long).columns) == ["zero-shot", "random", "mine"]
    assert long["notes_strategy"].tolist()[:3] == ["zero-shot", "random", "mine"]  # T1's rows
    assert analysis.ordered_strategies(["mine", "combine", "other", "zero-shot"]) == [
        "zero-shot", "combine", "mine", "other"
    ]  # fmt: skip


def test_table7_leaves_out_the_votes_the_baselines_and_the_methods_that_are_not_templates():
    long = pd.DataFrame(
        {"method": ["T1", "T2", "turbo", "regex_vote", "llm_vote", "SC", "chosen_vote", "auto_cot"],
         "notes_strategy": ["zero-shot"] * 8, "accuracy": [0.5, 0.25, 0.9, 0.8, 1.0, 0.0, 0.95, 0.05]}
    )  # fmt: skip
    t = analysis.precision_table(long)["zero-shot"]
    assert t["Range"] == pytest.approx(0.25) and t["Mean"] == pytest.approx(0.375)  # T1 and T2 only


def test_template_count_spread_ties_and_sampled_subsets_by_hand():
    """Fig 6's rows on the five templates above: at k = 1 the accuracies are 0.5, 0.5, 0.25, 0.25 and 0 (mean 0.3,
    population std sqrt(0.035)); T1 and T2 tie for the best, and the later name is kept. Above ``max_subsets``
    subsets a size votes over that many distinct ones, drawn with the analysis seed; at or below it, over all."""
    t = analysis.template_count_ablation(toy(), analysis=ABSTAIN).set_index("k")
    assert t.loc[1, "std"] == pytest.approx(0.035**0.5) and t.loc[1, "best_subset"] == "T2"
    assert not t["sampled"].any()
    five = analysis.template_count_ablation(toy(), analysis=ABSTAIN, max_subsets=5).set_index("k")
    assert five["sampled"].tolist() == [False, True, True, False, False]  # 5, 10, 10, 5 and 1 subsets of 5
    assert five["n_subsets"].tolist() == [5, 5, 5, 5, 1]
    # which five of the ten pairs are drawn follows the analysis seed: over five seeds the k = 2 rows are not all one
    drawn = {
        tuple(analysis.template_count_ablation(toy(), analysis=ABSTAIN.replace(analysis_seed=s), max_subsets=5)
              .set_index("k").loc[2, ["mean", "min", "max", "best_subset"]])
        for s in range(5)
    }  # fmt: skip
    assert len(drawn) > 1


def test_extraction_audit_rates_and_counts_every_output_cut_off_or_answered_twice():
    """The unparsed rate is per cell (T5 left 2 of its 4 unread); cut_off_outputs and second_stage count every output
    that stopped at the limit or took a second stage, read or not."""
    a = analysis.extraction_audit(toy()).set_index("template")
    assert a["unparsed_rate"].to_dict() == {"T1": 0.25, "T2": 0.25, "T3": 0.25, "T4": 0.25, "T5": 0.5}
    stages = {0: ("length", 2, "A", ""), 1: ("stop", 1, None, "no_answer"), 2: ("length", 1, None, "cut_off")}

    def fields(i, label):
        finish, stage, _, cause = stages[i]
        return {"finish_reason": finish, "answer_stage": stage, "unparsed_cause": cause}

    one = analysis.extraction_audit(answers_frame({"T1": [v[2] for v in stages.values()]}, per_question=fields))
    row = one.iloc[0]
    assert (row["n"], row["unparsed"], row["cut_off"], row["no_answer"]) == (3, 2, 1, 1)
    assert (row["cut_off_outputs"], row["second_stage"]) == (2, 1)  # q0 was read after its second stage


def test_first_answers_only_in_the_method_table_and_sc_votes_its_samples_in_order():
    """A template's repeats are not scored as more questions; SC's samples vote in sample order whatever the order of
    the rows (under the first-label tie rule, the first sample's label wins a tie)."""
    from olakit.analysis.tables import method_accuracy, sc_vote

    rows = [record("q0", "T1", "A"), record("q0", "T1", "B", sample=1), record("q1", "T1", "B")]
    rows += [record("q0", "SC", "B", sample=1), record("q0", "SC", "A", sample=0)]  # a tie, stored in reverse
    df = to_frame(rows)
    acc = method_accuracy(df, ["T1"], Analysis(n_boot=20)).set_index("method")
    assert (acc.loc["T1", "n"], acc.loc["T1", "correct"]) == (2, 1)
    assert sc_vote(df, analysis=Analysis(tie="first"))["voted"].tolist() == ["A"]
    # Fig 9's table: zero-shot is n = 0 of the random strategy; the repeat of q0 with 1 note is not a second question
    notes = to_frame([record("q0", "ST", "A"), record("q0", "ST", "A", notes_strategy="random", n_notes=1),
                      record("q0", "ST", "B", notes_strategy="random", n_notes=1, sample=1)])  # fmt: skip
    fig9 = analysis.notes_count_table(notes, "ST", Analysis(n_boot=20))
    got = fig9[["notes_strategy", "n_notes", "n", "correct"]].values.tolist()
    assert got == [["random", 0, 1, 1], ["random", 1, 1, 1]]


def test_usage_table_by_hand():
    """Paid calls are the records not served from the cache; the mean latency is over the paid calls (a cached
    answer has none); reasoning tokens are blank, not 0, where the endpoint reported none."""
    rows = [
        record("q0", "T1", "A", cached=False, latency=1.0, prompt_tokens=10, completion_tokens=4, cost=0.5),
        record("q1", "T1", "A", cached=False, latency=2.0, prompt_tokens=10, completion_tokens=4, cost=0.5),
        record("q2", "T1", "A", cached=False, latency=6.0, prompt_tokens=10, completion_tokens=4, cost=0.5),
        record("q3", "T1", "A", cached=True, latency=None, prompt_tokens=10, completion_tokens=4, cost=0.0),
    ]
    u = analysis.usage_table(to_frame(rows)).set_index("method").loc["T1"]
    assert (u["records"], u["paid"], u["cached"]) == (4, 3, 1)
    assert (u["prompt_tokens"], u["completion_tokens"], u["cost"]) == (40, 16, 1.5)
    assert u["mean_latency_s"] == pytest.approx(3.0)  # (1 + 2 + 6) / 3; the median would be 2
    if "reasoning_tokens" in u:
        assert pd.isna(u["reasoning_tokens"])


def test_override_effect_by_hand(tmp_path):
    """Three templates, gold A. Before: q0 B B A (vote B, wrong), q1 A A B (A), q2 A A B (A). Overrides: q0 T1 -> A
    (wrong to right; the vote turns A), q1 T3 -> C (wrong to wrong), q1 T1 -> A (the same label), q2 T2 -> B (right
    to wrong; the vote turns B). 4 overrides, 2 records and 2 votes changed (the vote's count is 2 right before and
    after: a net difference would say 0)."""
    from olakit.data.overrides import add_override, apply_overrides, load_overrides

    df = answers_frame({"T1": ["B", "A", "A"], "T2": ["B", "A", "A"], "T3": ["A", "B", "B"]})
    path = tmp_path / "records.overrides.jsonl"
    for qid, template, label in (("q0", "T1", "A"), ("q1", "T3", "C"), ("q1", "T1", "A"), ("q2", "T2", "B")):
        key = df[(df["question_id"] == qid) & (df["template"] == template)].iloc[0].to_dict()
        add_override(path, key, label, "read by hand")
    after = apply_overrides(df, load_overrides(path))
    effect = analysis.override_effect(after, ["T1", "T2", "T3"]).iloc[0]
    assert (effect["overrides"], effect["records_changed"], effect["votes_changed"]) == (4, 2, 2)


def test_answer_stages_table_by_hand():
    """One template, three questions, gold A. One stage: q0 A (stop), q1 unread (cut off at the limit), q2 unread.
    Two stages: q1's second stage reads A (3 more prompt and 1 more completion tokens), q2's reads nothing (2 and 1
    more). Accuracy 1/3 then 2/3; unread 2/3 then 1/3; 2 second calls, 7 tokens; 1 output cut off in the first run."""
    first = {0: ("A", "stop", 10, 5), 1: (None, "length", 10, 8), 2: (None, "stop", 10, 5)}
    second = {0: ("A", 1, 10, 5), 1: ("A", 2, 13, 9), 2: (None, 2, 12, 6)}

    def one_fields(i, label):
        _, finish, p, c = first[i]
        return {"finish_reason": finish, "prompt_tokens": p, "completion_tokens": c, "answer_stage": 1}

    def two_fields(i, label):
        _, stage, p, c = second[i]
        return {"finish_reason": first[i][1], "prompt_tokens": p, "completion_tokens": c, "answer_stage": stage}

    one = answers_frame({"ST": [v[0] for v in first.values()]}, per_question=one_fields)
    two = answers_frame({"ST": [v[0] for v in second.values()]}, per_question=two_fields)
    t = analysis.answer_stages_table(one, two, Analysis(n_boot=20)).set_index("template")
    row, total = t.loc["ST"], t.loc["all"]
    assert (row["accuracy_1"], row["accuracy_2"]) == pytest.approx((1 / 3, 2 / 3))
    assert (row["unparsed_rate_1"], row["unparsed_rate_2"]) == pytest.approx((2 / 3, 1 / 3))
    assert (row["second_calls"], row["second_tokens"], row["cut_off_1"]) == (2, 7.0, 1)
    assert (total["accuracy_1"], total["accuracy_2"], total["second_calls"]) == pytest.approx((1 / 3, 2 / 3, 2))
    # a second run whose tokens one record lacks: the table says it cannot tell (nan), not a sum of the rest
    gap = two.copy()
    gap["prompt_tokens"] = gap["prompt_tokens"].astype("Int64")
    gap.loc[gap["question_id"] == "q2", "prompt_tokens"] = pd.NA
    assert pd.isna(
        analysis.answer_stages_table(one, gap, Analysis(n_boot=20)).set_index("template").loc["ST", "second_tokens"]
    )
