"""The statistics of a grid (olakit.analysis.variance, inference.mcnemar_midp, inference.tie_group): every number
against an independent computation: sums of squares and variance components by hand from their definitions in plain
Python (balanced, with a missing cell, with repeats), the same sums of squares from statsmodels' ANOVA, clustered
standard errors from the formula, mid-p from math.comb, tie groups and decision-study errors worked by hand."""

import itertools
import json
import math
import random
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from olakit.analysis.inference import mcnemar_midp, paired_tests, tie_group
from olakit.analysis.variance import (
    clustered_se,
    components_by_name,
    decision,
    grid_of,
    repeats_table,
    standard_errors,
    variance_table,
)
from olakit.config import Stats
from olakit.settings import Analysis


def records(y: dict, repeat: bool = False) -> pd.DataFrame:
    """Records from {(question, template, strategy[, sample]): 0/1}."""
    rows = []
    for key, v in y.items():
        q, t, s, *r = key
        rows.append({"question_id": q, "template": t, "notes_strategy": s, "sample": r[0] if r else 0, "correct": v})
    return pd.DataFrame(rows)


def by_hand(y: dict, nq: int, nt: int, ns: int) -> dict:
    """Sums of squares, degrees of freedom and the components of a q x t x s design with one answer per cell, from
    the definitions in plain Python (no numpy)."""
    Q, T, S = range(nq), range(nt), range(ns)
    grand = sum(y.values()) / (nq * nt * ns)
    mq = {q: sum(y[q, t, s] for t in T for s in S) / (nt * ns) for q in Q}
    mt = {t: sum(y[q, t, s] for q in Q for s in S) / (nq * ns) for t in T}
    ms_ = {s: sum(y[q, t, s] for q in Q for t in T) / (nq * nt) for s in S}
    mqt = {(q, t): sum(y[q, t, s] for s in S) / ns for q in Q for t in T}
    mqs = {(q, s): sum(y[q, t, s] for t in T) / nt for q in Q for s in S}
    mts = {(t, s): sum(y[q, t, s] for q in Q) / nq for t in T for s in S}
    ss = {
        "question": nt * ns * sum((mq[q] - grand) ** 2 for q in Q),
        "template": nq * ns * sum((mt[t] - grand) ** 2 for t in T),
        "notes_strategy": nq * nt * sum((ms_[s] - grand) ** 2 for s in S),
        "question×template": ns * sum((mqt[q, t] - mq[q] - mt[t] + grand) ** 2 for q in Q for t in T),
        "question×notes_strategy": nt * sum((mqs[q, s] - mq[q] - ms_[s] + grand) ** 2 for q in Q for s in S),
        "template×notes_strategy": nq * sum((mts[t, s] - mt[t] - ms_[s] + grand) ** 2 for t in T for s in S),
        "residual": sum(
            (y[q, t, s] - mqt[q, t] - mqs[q, s] - mts[t, s] + mq[q] + mt[t] + ms_[s] - grand) ** 2
            for q in Q
            for t in T
            for s in S
        ),  # fmt: skip
    }
    df = {"question": nq - 1, "template": nt - 1, "notes_strategy": ns - 1, "question×template": (nq - 1) * (nt - 1),
          "question×notes_strategy": (nq - 1) * (ns - 1), "template×notes_strategy": (nt - 1) * (ns - 1),
          "residual": (nq - 1) * (nt - 1) * (ns - 1)}  # fmt: skip
    m = {k: ss[k] / df[k] for k in ss}
    sigma = {
        "residual": m["residual"],
        "question×template": (m["question×template"] - m["residual"]) / ns,
        "question×notes_strategy": (m["question×notes_strategy"] - m["residual"]) / nt,
        "template×notes_strategy": (m["template×notes_strategy"] - m["residual"]) / nq,
        "question": (m["question"] - m["question×template"] - m["question×notes_strategy"] + m["residual"]) / (nt * ns),
        "template": (m["template"] - m["question×template"] - m["template×notes_strategy"] + m["residual"]) / (nq * ns),
        "notes_strategy": (
            m["notes_strategy"] - m["question×notes_strategy"] - m["template×notes_strategy"] + m["residual"]
        )
        / (nq * nt),  # fmt: skip
    }
    return {"ss": ss, "df": df, "sigma": sigma}


def table_of(y: dict, **kw) -> pd.DataFrame:
    t = variance_table(grid_of(records(y), ["template", "notes_strategy"], **kw), Stats(n_boot=50))
    t["key"] = [e.replace(" (residual)", "") if "(residual)" not in e else "residual" for e in t["effect"]]
    return t.set_index("key")


def random_design(nq: int, nt: int, ns: int, seed: int) -> dict:
    rng = random.Random(seed)
    ease = {q: rng.random() for q in range(nq)}
    return {(q, t, s): int(rng.random() < 0.3 + 0.5 * ease[q] - 0.1 * t + 0.05 * s)
            for q in range(nq) for t in range(nt) for s in range(ns)}  # fmt: skip


@pytest.mark.parametrize("seed", range(5))
def test_sums_of_squares_and_components_equal_the_hand_computation(seed):
    nq, nt, ns = 12, 3, 2
    y = random_design(nq, nt, ns, seed)
    want = by_hand(y, nq, nt, ns)
    got = table_of(y)
    for effect, ss in want["ss"].items():
        assert got.loc[effect, "ss"] == pytest.approx(ss, abs=1e-9), effect
        assert got.loc[effect, "df"] == want["df"][effect]
        sigma = want["sigma"][effect]
        assert got.loc[effect, "component"] == pytest.approx(max(0.0, sigma), abs=1e-12), effect
        assert got.loc[effect, "negative"] == (sigma < 0), effect
    total = sum(max(0.0, s) for s in want["sigma"].values())
    assert got["share"].sum() == pytest.approx(1.0) and got.loc["question", "share"] == pytest.approx(
        max(0.0, want["sigma"]["question"]) / total
    )


def test_sums_of_squares_equal_statsmodels_anova_on_a_balanced_design():
    """statsmodels' OLS with every main effect and two-way interaction (the three-way one as its residual): in a
    balanced design its type-I sums of squares are the crossed design's."""
    sm = pytest.importorskip("statsmodels.formula.api")
    from statsmodels.stats.anova import anova_lm

    y = random_design(10, 3, 2, 7)
    df = records(y).rename(columns={"question_id": "q", "template": "t", "notes_strategy": "s"})
    fit = sm.ols("correct ~ C(q) + C(t) + C(s) + C(q):C(t) + C(q):C(s) + C(t):C(s)", data=df).fit()
    aov = anova_lm(fit, typ=1)
    got = table_of(y)
    names = {"C(q)": "question", "C(t)": "template", "C(s)": "notes_strategy", "C(q):C(t)": "question×template",
             "C(q):C(s)": "question×notes_strategy", "C(t):C(s)": "template×notes_strategy",
             "Residual": "residual"}  # fmt: skip
    for term, effect in names.items():
        assert got.loc[effect, "ss"] == pytest.approx(aov.loc[term, "sum_sq"], abs=1e-8), term
        assert got.loc[effect, "df"] == aov.loc[term, "df"], term


def test_a_question_missing_a_cell_is_left_out_and_counted():
    y = random_design(9, 3, 2, 3)
    full = dict(y)
    del y[4, 1, 0]  # question 4 lacks one cell
    grid = grid_of(records(y), ["template", "notes_strategy"])
    assert grid.left_out == [4] and len(grid.questions) == 8
    kept = {(q if q < 4 else q - 1, t, s): v for (q, t, s), v in full.items() if q != 4}
    want = by_hand(kept, 8, 3, 2)
    got = table_of(y)
    assert got.attrs["left_out"] == 1 and got.attrs["questions"] == 8
    for effect, ss in want["ss"].items():
        assert got.loc[effect, "ss"] == pytest.approx(ss, abs=1e-9), effect


def test_with_repeats_the_residual_is_the_spread_within_cells():
    """q x t with r = 3 answers per cell: SS_e = sum of squares about each cell's mean; sigma2_qt = (MS_qt - MS_e) /
    r, sigma2_q = (MS_q - MS_qt) / (n_t r), sigma2_t = (MS_t - MS_qt) / (n_q r), by hand."""
    rng = random.Random(5)
    nq, nt, nr = 8, 3, 3
    y = {(q, t, "zero-shot", r): int(rng.random() < 0.2 + 0.06 * q + 0.1 * t) for q in range(nq) for t in range(nt)
         for r in range(nr)}  # fmt: skip
    Q, T, R = range(nq), range(nt), range(nr)
    grand = sum(y.values()) / (nq * nt * nr)
    cell = {(q, t): sum(y[q, t, "zero-shot", r] for r in R) / nr for q in Q for t in T}
    mq = {q: sum(cell[q, t] for t in T) / nt for q in Q}
    mt = {t: sum(cell[q, t] for q in Q) / nq for t in T}
    ss_q = nt * nr * sum((mq[q] - grand) ** 2 for q in Q)
    ss_t = nq * nr * sum((mt[t] - grand) ** 2 for t in T)
    ss_qt = nr * sum((cell[q, t] - mq[q] - mt[t] + grand) ** 2 for q in Q for t in T)
    ss_e = sum((y[q, t, "zero-shot", r] - cell[q, t]) ** 2 for q in Q for t in T for r in R)
    ms_q, ms_t, ms_qt, ms_e = (
        ss_q / (nq - 1),
        ss_t / (nt - 1),
        ss_qt / ((nq - 1) * (nt - 1)),
        ss_e / (nq * nt * (nr - 1)),
    )
    got = variance_table(grid_of(records(y), ["template"]), Stats(n_boot=20)).set_index("effect")
    assert got.loc["residual", "ss"] == pytest.approx(ss_e) and got.loc["residual", "component"] == pytest.approx(ms_e)
    assert got.loc["question×template", "component"] == pytest.approx(max(0, (ms_qt - ms_e) / nr))
    assert got.loc["question", "component"] == pytest.approx(max(0, (ms_q - ms_qt) / (nt * nr)))
    assert got.loc["template", "component"] == pytest.approx(max(0, (ms_t - ms_qt) / (nq * nr)))
    assert got.attrs["repeats"] == 3


def test_a_negative_estimate_is_shown_as_zero_and_said():
    """Templates that agree on every question more than chance allows: MS_qt below MS_qts, sigma2_qt < 0."""
    y = {(q, t, s): int((q + s) % 2 == 0) for q in range(6) for t in range(3) for s in range(2)}
    want = by_hand(y, 6, 3, 2)["sigma"]
    got = table_of(y)
    negative = [e for e, s in want.items() if s < -1e-12]
    assert all(got.loc[e, "component"] == 0 and got.loc[e, "negative"] for e in negative)
    assert all(not got.loc[e, "negative"] for e in want if e not in negative)


def test_decision_study_standard_errors_by_hand():
    comps = {"question": 0.08, "template": 0.001, "notes_strategy": 0.002, "question×template": 0.01,
             "question×notes_strategy": 0.006, "template×notes_strategy": 0.002, "residual": 0.15}  # fmt: skip
    se = standard_errors(comps, ["template", "notes_strategy"], 200, levels={"template": 5})
    assert se["cell"] == pytest.approx(math.sqrt((0.08 + 0.01 + 0.006 + 0.15) / 200))
    assert se["difference:template"] == pytest.approx(math.sqrt(2 * (0.01 + 0.15) / 200))
    assert se["difference:notes_strategy"] == pytest.approx(math.sqrt(2 * (0.006 + 0.15) / 200))
    mean_t = (0.001 + 0.002) / 5 + (0.08 + 0.006) / 200 + (0.01 + 0.15) / (200 * 5)
    assert se["mean over template"] == pytest.approx(math.sqrt(mean_t))
    # with a within-cell part of the residual known (0.1 of the 0.15), 4 repeats shrink that part alone
    se4 = standard_errors(comps, ["template"], 200, repeats=4, within=0.1)
    assert se4["cell"] == pytest.approx(math.sqrt((0.08 + 0.01 + 0.006 + 0.05) / 200 + 0.1 / (200 * 4)))


def test_the_decision_table_and_the_cheapest_design_follow_the_components():
    from olakit.analysis.variance import cheapest

    y = random_design(40, 3, 2, 11)
    table = variance_table(grid_of(records(y), ["template", "notes_strategy"]), Stats(n_boot=20))
    comps = components_by_name(table)
    d = decision(table, ["template", "notes_strategy"], questions=(40, 400)).set_index("questions")
    assert list(d["repeats"]) == [1, 1]  # no repeats in the grid: more of them would change nothing
    q_all = sum(v for k, v in comps.items() if k.startswith("question") or k == "residual")
    assert d.loc[400, "se_cell"] == pytest.approx(math.sqrt(q_all / 400))
    best = cheapest(table, 0.05, "cell")
    n = math.ceil(q_all / 0.05**2)  # the fewest questions with sqrt(q_all / n) <= 0.05
    assert best["questions"] in (n - 1, n) and best["se"] <= 0.05 and best["calls"] == best["questions"]


def test_clustered_standard_errors_from_the_formula():
    rng = random.Random(2)
    x = [rng.randint(0, 1) for _ in range(30)]
    g = [i // 5 for i in range(30)]  # six clusters of five
    n, mean = len(x), sum(x) / len(x)
    s2 = sum((v - mean) ** 2 for v in x) / (n - 1)
    sums = [sum(x[i] - mean for i in range(30) if g[i] == c) for c in range(6)]
    se_c = math.sqrt(6 / 5 * sum(s * s for s in sums)) / n
    got = clustered_se(x, g)
    assert got["se"] == pytest.approx(math.sqrt(s2 / n)) and got["se_clustered"] == pytest.approx(se_c)
    assert got["design_effect"] == pytest.approx(se_c**2 / (s2 / n)) and got["clusters"] == 6


def test_mid_p_mcnemar_from_math_comb():
    for n10, n01 in itertools.product(range(7), range(7)):
        a = [1] * n10 + [0] * n01 + [1, 0]
        b = [0] * n10 + [1] * n01 + [1, 0]
        n, k = n10 + n01, min(n10, n01)
        want = 1.0 if n == 0 else min(1.0, (2 * sum(math.comb(n, i) for i in range(k)) + math.comb(n, k)) / 2**n)
        assert mcnemar_midp(a, b) == (n10, n01, pytest.approx(want))
    outcomes = pd.DataFrame({"A": [1] * 6 + [0], "B": [0] * 6 + [1]}).astype(bool)
    exact, mid = (paired_tests(outcomes, analysis=Analysis(mcnemar=m, n_boot=20)) for m in ("exact", "mid-p"))
    assert exact["test"].tolist() == ["exact McNemar"] and mid["test"].tolist() == ["mid-p McNemar"]
    # n10 = 6, n01 = 1: exact 2 (C(7,0) + C(7,1)) / 2^7 = 16 / 128; mid-p (2 C(7,0) + C(7,1)) / 2^7 = 9 / 128
    assert exact["p_mcnemar"].iloc[0] == pytest.approx(16 / 128)
    assert mid["p_mcnemar"].iloc[0] == pytest.approx(9 / 128)


def test_tie_groups_from_hand_worked_p_values():
    """Best A (0.80); against it B p = 0.04, C p = 0.01, D p = 0.30. Holm over the three: C 0.03, B 0.08, D 0.30:
    only C differs at 0.05; B is tied though its own p is below 0.05."""
    tests = pd.DataFrame({"a": ["A", "B", "A", "C"], "b": ["B", "C", "C", "D"], "p_mcnemar": [0.04, 0.5, 0.01, 0.2]})
    extra = pd.DataFrame({"a": ["D"], "b": ["A"], "p_mcnemar": [0.30]})
    group = tie_group(pd.concat([tests, extra]), {"B": 0.7, "A": 0.8, "C": 0.5, "D": 0.75}).set_index("cell")
    assert group.loc["A", "best"] and group.loc["A", "tied_with_best"]
    assert group.loc["C", "p_vs_best_holm"] == pytest.approx(0.03) and not group.loc["C", "tied_with_best"]
    assert group.loc["B", "p_vs_best_holm"] == pytest.approx(0.08) and group.loc["B", "tied_with_best"]
    assert group.loc["D", "p_vs_best_holm"] == pytest.approx(0.30) and group.loc["D", "tied_with_best"]


def test_repeats_split_a_cells_variance_into_noise_and_questions():
    """Two samples per question: within = mean of the two answers' unbiased variance (0.5 where they differ),
    between = var of the question means less within / 2, by hand."""
    answers = {"q1": (1, 1), "q2": (1, 0), "q3": (0, 0), "q4": (0, 1), "q5": (1, 1)}
    rows = [{"question_id": q, "template": "ST", "notes_strategy": "zero-shot", "sample": i, "correct": v}
            for q, vs in answers.items() for i, v in enumerate(vs)]  # fmt: skip
    got = repeats_table(pd.DataFrame(rows)).iloc[0]
    within = sum(0.5 if a != b else 0.0 for a, b in answers.values()) / 5
    means = [(a + b) / 2 for a, b in answers.values()]
    m = sum(means) / 5
    between = max(0.0, sum((x - m) ** 2 for x in means) / 4 - within / 2)
    assert got["within"] == pytest.approx(within) and got["between"] == pytest.approx(between)
    assert got["noise_share"] == pytest.approx(within / (within + between))
    assert got["var_mean_of_k"] == pytest.approx(between + within / 2)


def test_the_grid_of_the_recorded_outputs_is_templates_by_strategies():
    """The OlaGPT authors' 254 questions x 5 templates x 4 note strategies (their votes are no level of a crossed
    facet), every question with every cell."""
    from olakit.data.recorded import import_olagpt

    grid = grid_of(import_olagpt(None))
    assert grid.facets == ("template", "notes_strategy") and grid.y.shape == (254, 5, 4, 1) and not grid.left_out
    assert np.isin(grid.y, (0.0, 1.0)).all()


def test_a_dataset_files_cluster_field_gives_every_import_the_cluster_robust_errors(tmp_path):
    """A dataset file of 12 questions in 4 passages (its mapping names ``cluster``), two runs of answers imported
    by ``olakit import``: the ``clustered`` table gives each run's accuracy and their paired difference with the
    independent and the cluster-robust standard errors, each worked here from the formula; a run on a dataset
    without clusters has no such table."""

    import yaml

    from olakit.cli import main

    rows = [{"id": f"q{i}", "question": f"Passage {i // 3}: is {i} even?", "answer": "yes" if i % 2 == 0 else "no",
             "passage": f"p{i // 3}"} for i in range(12)]  # fmt: skip
    (tmp_path / "qa.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (tmp_path / "qa.jsonl.map.yaml").write_text("question: question\nanswer: answer\ncluster: passage\n")
    right_a = [1, 1, 1, 1, 1, 1, 0, 0, 0, 1, 0, 1]  # whole passages right or wrong: clustered
    right_b = [1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0]
    for name, right in (("a", right_a), ("b", right_b)):
        answers = [r["answer"] if ok else ("no" if r["answer"] == "yes" else "yes") for r, ok in zip(rows, right)]
        (tmp_path / f"{name}.jsonl").write_text(
            "".join(
                json.dumps({"id": r["id"], "question": r["question"], "pred": a}) + "\n" for r, a in zip(rows, answers)
            )
        )
    spec = {
        "dataset": str(tmp_path / "qa.jsonl"),
        "runs": [
            {"file": "a.jsonl", "run": "A", "id": "id", "answer": "pred"},
            {"file": "b.jsonl", "run": "B", "id": "id", "answer": "pred"},
        ],
    }
    (tmp_path / "spec.yaml").write_text(yaml.safe_dump(spec))
    assert main(["import", str(tmp_path / "spec.yaml"), "--out", str(tmp_path / "out")]) == 0
    table = pd.read_csv(tmp_path / "out" / "tables" / "clustered.csv", keep_default_na=False)
    groups = [i // 3 for i in range(12)]

    def by_hand(x):
        n, mean = len(x), sum(x) / len(x)
        s2 = sum((v - mean) ** 2 for v in x) / (n - 1)
        sums = [sum(x[i] - mean for i in range(n) if groups[i] == c) for c in range(4)]
        return mean, math.sqrt(s2 / n), math.sqrt(4 / 3 * sum(s * s for s in sums)) / n

    rows_by = {(r["a"], r["b"]): r for _, r in table.iterrows()}
    for key, x in ((("A", ""), right_a), (("B", ""), right_b), (("A", "B"), [p - q for p, q in zip(right_a, right_b)])):
        mean, se, se_c = by_hand(x)
        got = rows_by[key]
        assert got["accuracy_or_difference"] == pytest.approx(mean) and got["clusters"] == 4
        assert got["se"] == pytest.approx(se) and got["se_clustered"] == pytest.approx(se_c)
    assert rows_by[("A", "")]["design_effect"] > 1  # A's answers go with their passages
    assert main(["import", "pot_aqua", "--out", str(tmp_path / "pot")]) == 0
    assert not (tmp_path / "pot" / "tables" / "clustered.csv").exists()


def test_an_imports_own_cluster_field_gives_the_cluster_robust_errors_and_a_conflict_is_one_error(tmp_path, capsys):
    """A dataset file with no clusters, two runs imported; run A's file has each question's passage and its spec
    names it (``cluster: passage``): the ``clustered`` table's robust standard errors are those of 4 passages, worked
    here from the formula, and the same after the result is read back from its folder. A run giving a question
    another passage, or none, is one error naming the row."""

    import yaml

    from olakit import report
    from olakit.cli import main
    from olakit.result import read_result

    rows = [{"id": f"q{i}", "question": f"Is {i} even?", "answer": "yes" if i % 2 == 0 else "no"} for i in range(8)]
    (tmp_path / "qa.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    right = {"a": [1, 1, 0, 0, 1, 1, 0, 0], "b": [1, 0, 1, 0, 1, 0, 1, 1]}
    for name, ok in right.items():
        lines = [{"id": r["id"], "question": r["question"], "passage": f"p{i // 2}",
                  "pred": r["answer"] if good else ("no" if r["answer"] == "yes" else "yes")}
                 for i, (r, good) in enumerate(zip(rows, ok))]  # fmt: skip
        (tmp_path / f"{name}.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    spec = {"dataset": str(tmp_path / "qa.jsonl"), "runs": [
        {"file": "a.jsonl", "run": "A", "id": "id", "answer": "pred", "cluster": "passage"},
        {"file": "b.jsonl", "run": "B", "id": "id", "answer": "pred"}]}  # fmt: skip
    (tmp_path / "spec.yaml").write_text(yaml.safe_dump(spec))
    assert main(["import", str(tmp_path / "spec.yaml"), "--out", str(tmp_path / "out")]) == 0
    table = pd.read_csv(tmp_path / "out" / "tables" / "clustered.csv", keep_default_na=False)
    rows_by = {(r["a"], r["b"]): r for _, r in table.iterrows()}
    diff = [p - q for p, q in zip(right["a"], right["b"])]
    for key, x in ((("A", ""), right["a"]), (("B", ""), right["b"]), (("A", "B"), diff)):
        mean = sum(x) / 8
        sums = [sum(x[i] - mean for i in (2 * c, 2 * c + 1)) for c in range(4)]
        got = rows_by[key]
        assert got["clusters"] == 4 and got["se_clustered"] == pytest.approx(
            math.sqrt(4 / 3 * sum(s * s for s in sums)) / 8
        )
    again = report(read_result(tmp_path / "out"))["clustered"]
    assert again["se_clustered"].tolist() == pytest.approx(table["se_clustered"].tolist())

    other = [json.loads(x) for x in (tmp_path / "b.jsonl").read_text().splitlines()]
    other[5]["passage"] = "p9"  # q5 is in p2 in A's file
    (tmp_path / "b.jsonl").write_text("".join(json.dumps(x) + "\n" for x in other))
    spec["runs"][1]["cluster"] = "passage"
    (tmp_path / "spec.yaml").write_text(yaml.safe_dump(spec))
    capsys.readouterr()
    assert main(["import", str(tmp_path / "spec.yaml"), "--out", str(tmp_path / "out2")]) != 0
    err = capsys.readouterr().err
    assert re.search(r"b\.jsonl.*: question q5 is in cluster 'p9' here and 'p2' at .*a\.jsonl", err), err
    assert not (tmp_path / "out2").exists()


def test_olakit_plan_starts_from_the_decision_study(tmp_path):
    """``olakit plan --target-se 0.02`` on the recorded grid (template x note strategy, no repeats): the fewest
    questions n with sqrt(2 (question x template + residual) / n) <= 0.02, worked here from the variance table's
    components (themselves checked against hand sums and statsmodels above), with its calls per cell; a price at the
    completion ceiling for a priced model."""
    import os
    import subprocess
    import sys

    from olakit.data.recorded import import_olagpt

    table = variance_table(grid_of(import_olagpt(None)))
    comps = dict(zip(table["effect"], table["component"]))
    pair = comps["question×template"] + comps["question×template×notes_strategy (residual)"]
    n = math.ceil(2 * pair / 0.02**2)
    assert math.sqrt(2 * pair / n) <= 0.02 < math.sqrt(2 * pair / (n - 1))
    env = {k: v for k, v in os.environ.items() if not k.startswith("OLAKIT_BASE_URL")}
    done = subprocess.run([sys.executable, "-m", "olakit.cli", "plan", "--target-se", "0.02"], capture_output=True,
                          text=True, env=env, timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert f"{n:,} questions x 1 repeat(s): {n:,} calls per cell" in done.stdout
    env |= {"OLAKIT_BASE_URL": "http://127.0.0.1:9/v1", "OLAKIT_MODEL": "gpt-4o-mini"}  # priced, never called
    done = subprocess.run([sys.executable, "-m", "olakit.cli", "plan", "--target-se", "0.02", "--max-tokens", "100"],
                          capture_output=True, text=True, env=env, timeout=300)  # fmt: skip
    assert f"${n * 100 * 0.60 / 1e6:,.2f} per cell at gpt-4o-mini's completion price" in done.stdout, done.stdout
    bad = subprocess.run([sys.executable, "-m", "olakit.cli", "plan", "--target-se", "0.02", "--target", "x"],
                         capture_output=True, text=True, env=env, timeout=300)  # fmt: skip
    assert bad.returncode != 0 and "the estimates' grid has cell, difference:template" in bad.stderr


def test_the_bootstrap_by_question_weights_equals_the_resampled_grids():
    """The intervals' draws come from how often each question is drawn (matrix products), not from resampled grids:
    on random crossed grids of 1 to 4 facets, with and without repeats, each draw's components equal those of the
    resampled grid itself (the direct computation, checked above against hand sums and statsmodels)."""
    from olakit.analysis.variance import _components, _drawn

    rng = np.random.default_rng(5)
    for shape in [(7, 3, 1), (9, 2, 3, 1), (6, 3, 2, 4), (5, 4, 2), (8, 2, 2, 2, 1), (4, 2, 2, 2, 2, 2), (3, 2, 1)]:
        y = (rng.random(shape) < 0.4).astype(float)
        picks = rng.integers(0, shape[0], (11, shape[0]))
        direct, weighted = _components(y[picks], lead=1)[3], _drawn(y, picks)
        assert set(direct) == set(weighted)
        for e in direct:
            assert np.allclose(direct[e], weighted[e], atol=1e-12, equal_nan=True), (shape, e)


EVEN = [{"id": f"q{i}", "question": f"Is the number {i * 7} even?", "answer": "yes" if i % 3 else "no",
         "passage": f"p{i // 2}"} for i in range(8)]  # fmt: skip
"""8 yes/no questions in 4 passages; their gold says "yes" for 5 of them, whatever the number's parity."""


def even_file(folder: Path, clustered: bool) -> Path:
    """EVEN as a dataset file (its mapping naming the passage as the ``cluster`` when ``clustered``)."""
    path = folder / "qa.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in EVEN))
    cluster = "cluster: passage\n" if clustered else ""
    (folder / "qa.jsonl.map.yaml").write_text(f"id: id\nquestion: question\nanswer: answer\n{cluster}")
    return path


def by_parity(loop_says: str | None = None):
    """The docs' scripted model, but an EVEN question's answer by the number's parity ("yes" when even); with
    ``loop_says``, every answer of the review loop's (a step, a revision) says that instead."""
    from tests.replies import docs

    def reply(prompt, request):
        n = re.findall(r"Is the number (\d+) even\?", prompt)
        if not n or "So the answer is yes" not in prompt:
            return docs(prompt, request)
        if loop_says and any(w in prompt for w in ("Please improve", "sub-problems", "framework")):
            return f"So the answer is {loop_says}."
        return f"So the answer is {'yes' if int(n[-1]) % 2 == 0 else 'no'}."

    return reply


def test_every_live_door_on_a_clustered_dataset_file_gives_the_clustered_table(tmp_path):
    """OlaGPT, GEEK and the review loop on a dataset file of 8 yes/no questions in 4 passages (its mapping names
    ``cluster``), a scripted model answering by parity (right on some questions, wrong on others): each result's
    ``clustered`` table gives, per cell, the cluster-robust standard error of its accuracy, worked here from the
    formula over the records' own outcomes."""

    from olakit import report
    from olakit.geek.config import GeekConfig
    from olakit.geek.run import run_geek
    from olakit.llm import ScriptedModel
    from olakit.olagpt.config import OlaGPTConfig
    from olakit.olagpt.run import run
    from olakit.review.config import ReviewConfig
    from olakit.review.run import run_review

    path = even_file(tmp_path, clustered=True)
    group = {r["id"]: r["passage"] for r in EVEN}
    llm = ScriptedModel(by_parity())
    olagpt = OlaGPTConfig(dataset=str(path), n_questions=8, templates=["ST", "turbo"], strategies=["zero-shot"])
    results = {  # each door's records, and the label of a record's cell in its tables
        "olagpt": (run(olagpt, llm=llm), lambda r: f"{r['template']} | zero-shot"),
        "geek": (
            run_geek(GeekConfig(dataset=str(path), n_questions=8, rows=("zero-shot", "CoT")), llm=llm),
            lambda r: r["row"],
        ),  # fmt: skip
        "review": (
            run_review(ReviewConfig(dataset=str(path), n_questions=8, max_iterations=1), llm),
            lambda r: f"{r['loop']} {r['iteration']}",
        ),  # fmt: skip
    }
    for name, (res, label) in results.items():
        table = report(res)["clustered"]
        cells = table[table["b"] == ""].set_index("a")
        outcomes: dict = {}
        for _, r in res.records.iterrows():
            if r.get("sample", 0) == 0 and r.get("template") not in ("llm_vote",):
                outcomes.setdefault(label(r), {})[r["question_id"]] = float(r["correct"])
        checked = 0
        for cell, x in outcomes.items():
            assert len(x) == 8, (name, cell)
            mean = sum(x.values()) / 8
            sums: dict = {}
            for q, v in x.items():
                sums[group[q]] = sums.get(group[q], 0.0) + v - mean
            want = math.sqrt(4 / 3 * sum(s * s for s in sums.values())) / 8
            assert cells.loc[cell, "clusters"] == 4 and cells.loc[cell, "se_clustered"] == pytest.approx(want), name
            checked += want > 0
        assert checked >= 2, name  # cells whose answers vary across passages


def test_the_review_loops_answers_get_paired_tests_a_tie_group_and_the_variance_of_their_grid(tmp_path):
    """The review loop on 8 yes/no questions: the direct answer right on 3 (by parity), every answer of the loop
    "yes" (right on the 5 whose gold is yes). Direct against each loop answer: 3 loop-only and 1 direct-only right,
    exact McNemar p = 2 (C(4,0) + C(4,1)) / 2^4 = 0.625; the loop's answers are the best and the direct one is tied
    with them; the variance table's facet is the answer (loop and iteration)."""

    from olakit import report
    from olakit.llm import ScriptedModel
    from olakit.review.config import ReviewConfig
    from olakit.review.run import run_review

    cfg = ReviewConfig(dataset=str(even_file(tmp_path, clustered=False)), n_questions=8, max_iterations=1)
    tables = report(run_review(cfg, ScriptedModel(by_parity(loop_says="yes"))))
    acc = tables["iteration_accuracy"].set_index(["method", "iteration"])
    assert acc.loc[("direct", 0), "correct"] == 3 and acc["correct"].drop(("direct", 0)).eq(5).all()
    tests = tables["paired_tests"]
    direct = tests[(tests["a"] == "direct 0") | (tests["b"] == "direct 0")]
    assert len(direct) == len(acc) - 1
    assert direct["p_mcnemar"].tolist() == pytest.approx([2 * (math.comb(4, 0) + math.comb(4, 1)) / 2**4] * len(direct))
    assert acc["tied_with_best"].all() and not acc.loc[("direct", 0), "best"] and acc["best"].sum() == 1
    assert "cell" in set(tables["variance"]["effect"])


def test_the_intervals_are_percentiles_over_grids_of_questions_drawn_with_replacement():
    """Each component's interval: the level's central percentiles of its estimates (a negative one as 0) over n_boot
    grids of questions drawn with replacement, as numpy draws them from the analysis seed (``default_rng(seed)
    .integers(0, n_q, (n_boot, n_q))``), each drawn grid's components by hand in plain Python (by_hand). A hand
    mutation pass over olakit.analysis.variance found the intervals' levels, the clipping and the draws unchecked (by
    the whole fast tier too, as were the cases of the next test)."""
    nq, nt, ns = 10, 3, 2
    y = random_design(nq, nt, ns, 3)
    stats = Stats(n_boot=40, level=0.8, analysis_seed=7)
    got = variance_table(grid_of(records(y), ["template", "notes_strategy"]), stats)
    got.index = ["residual" if "(residual)" in e else e for e in got["effect"]]
    draws = {e: [] for e in by_hand(y, nq, nt, ns)["sigma"]}
    for picks in np.random.default_rng(7).integers(0, nq, (40, nq)):
        drawn = {(i, t, s): y[int(q), t, s] for i, q in enumerate(picks) for t in range(nt) for s in range(ns)}
        for e, sigma in by_hand(drawn, nq, nt, ns)["sigma"].items():
            draws[e].append(max(0.0, sigma))
    for e, d in draws.items():
        assert got.loc[e, "ci_low"] == pytest.approx(np.quantile(d, 0.1), abs=1e-12), e
        assert got.loc[e, "ci_high"] == pytest.approx(np.quantile(d, 0.9), abs=1e-12), e


def test_the_within_part_the_facet_means_and_the_cheapest_designs_tie():
    """Decision-study cases the hand mutation pass found unchecked: a within-cell part said to be larger than the
    residual is the residual; the mean over a facet's levels divides the within part by the repeats too; designs with
    as many calls are one tie, which the fewest repeats win; unclustered questions are clusters of one; and a cell
    whose questions have unequal numbers of answers is no row of the repeats table."""
    from olakit.analysis.variance import cheapest, clustered_table

    comps = {"question": 0.08, "template": 0.001, "notes_strategy": 0.002, "question×template": 0.01,
             "question×notes_strategy": 0.006, "template×notes_strategy": 0.002, "residual": 0.15}  # fmt: skip
    capped = standard_errors(comps, ["template"], 200, repeats=4, within=0.3)
    assert capped["cell"] == pytest.approx(math.sqrt((0.08 + 0.01 + 0.006) / 200 + 0.15 / (200 * 4)))
    se = standard_errors(comps, ["template"], 200, repeats=4, levels={"template": 5}, within=0.1)
    mean = (0.001 + 0.002) / 5 + (0.08 + 0.006) / 200 + (0.01 + 0.05) / (200 * 5) + 0.1 / (200 * 5 * 4)
    assert se["mean over template"] == pytest.approx(math.sqrt(mean))
    # all of the variance within cells: the error depends on questions x repeats alone, 64 calls at 1, 2, 4 or 8
    table = pd.DataFrame({"effect": ["question", "template", "question×template", "residual"],
                          "component": [0.0, 0.0, 0.0, 0.25]})  # fmt: skip
    table.attrs.update(levels={"template": 3}, repeats=2)
    best = cheapest(table, 1 / 16, "cell")  # sqrt(0.25 / (n r)) <= 1/16 where n r >= 64, exactly
    assert (best["questions"], best["repeats"], best["calls"]) == (64, 1, 64)
    outcomes = pd.DataFrame({"A": [1, 0, 1, 1, 0, 1], "B": [0, 0, 1, 0, 1, 1]}, index=[f"q{i}" for i in range(6)])
    t = clustered_table(outcomes, {"q0": "p", "q1": "p", "q2": "r", "q3": "r"})  # q4, q5 in none
    m = 4 / 6
    sums = [(1 - m) + (0 - m), (1 - m) + (1 - m), 0 - m, 1 - m]
    assert t["clusters"].tolist() == [4, 4, 4]
    assert t.loc[(t["a"] == "A") & (t["b"] == ""), "se_clustered"].item() == pytest.approx(
        math.sqrt(4 / 3 * sum(s * s for s in sums)) / 6
    )
    rows = [{"question_id": q, "template": tpl, "notes_strategy": "zero-shot", "sample": i, "correct": (i + j) % 2}
            for tpl, extra in (("ST", 0), ("DT", 1)) for j, q in enumerate(["q1", "q2", "q3"])
            for i in range(2 + (extra if q == "q1" else 0))]  # fmt: skip
    assert repeats_table(pd.DataFrame(rows))["template"].tolist() == ["ST"]
