"""olakit plan: the exact power of the exact McNemar test, checked against cases worked by hand, a full enumeration
of the outcomes and a seeded simulation; the planner's n, its estimates and its price (the run's own plan)."""

import math
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from olakit.analysis.exact import n_needed, power, rejection_limits
from olakit.analysis.inference import mcnemar_exact
from olakit.registration import parse_comparison


def enumerated_power(n, p10, p01, alpha):
    """Every outcome of n questions (a-only k, b-only j, the rest concordant) with its multinomial probability,
    rejected by the kit's own exact test where its p-value is below alpha."""
    total = 0.0
    for k in range(n + 1):
        for j in range(n - k + 1):
            if mcnemar_exact([1] * k + [0] * j, [0] * k + [1] * j)[2] < alpha:
                ways = math.comb(n, k) * math.comb(n - k, j)
                total += ways * p10**k * p01**j * (1 - p10 - p01) ** (n - k - j)
    return total


def power_by_hand(n, discordance, diff, level):
    """The exact test's power over every outcome: d of n questions discordant, k of them a-only (a's accuracy minus
    b's is ``diff``), rejected where twice the smaller binomial tail of Bin(d, 1/2), summed in integers, is below
    ``level``."""
    q = (discordance + diff) / 2 / discordance
    total = 0.0
    for d in range(n + 1):
        pd_ = math.comb(n, d) * discordance**d * (1 - discordance) ** (n - d)
        tails = [sum(math.comb(d, i) for i in range(k + 1)) for k in range(d // 2 + 1)]
        for k in range(d + 1):
            if 2 * tails[min(k, d - k)] / 2**d < level:
                total += pd_ * math.comb(d, k) * q**k * (1 - q) ** (d - k)
    return total


def test_power_worked_by_hand_when_only_one_side_is_ever_right_alone():
    # p01 = 0: every discordant pair is a-only, so k = d and the test rejects when 2 / 2^d < 0.05, that is d >= 6
    # (2 / 2^5 = 0.0625 does not). The power is P(Bin(10, 0.3) >= 6).
    by_hand = sum(math.comb(10, d) * 0.3**d * 0.7 ** (10 - d) for d in range(6, 11))
    assert by_hand == pytest.approx(0.0473489, abs=1e-7)
    assert power(10, 0.3, 0.0, 0.05) == pytest.approx(by_hand, abs=1e-12)


def test_power_equals_the_enumeration_of_every_outcome():
    for n, p10, p01, alpha in ((12, 0.35, 0.1, 0.05), (20, 0.2, 0.05, 0.0125), (15, 0.1, 0.3, 0.01)):
        assert power(n, p10, p01, alpha) == pytest.approx(enumerated_power(n, p10, p01, alpha), abs=1e-12)


def test_power_agrees_with_a_seeded_simulation_within_its_monte_carlo_error():
    n, p10, p01, alpha, runs = 80, 0.22, 0.08, 0.0125, 20_000
    rng = np.random.default_rng(7)
    counts = rng.multinomial(n, [p10, p01, 1 - p10 - p01], size=runs)
    limits = {}  # the kit's p-value for each (k, j) drawn
    rejected = 0
    for k, j, _ in counts:
        if (k, j) not in limits:
            limits[k, j] = mcnemar_exact([1] * k + [0] * j, [0] * k + [1] * j)[2] < alpha
        rejected += limits[k, j]
    simulated = rejected / runs
    error = math.sqrt(simulated * (1 - simulated) / runs)
    assert abs(power(n, p10, p01, alpha) - simulated) < 4 * error


def test_the_rejection_limits_are_the_kits_own_test():
    for alpha in (0.05, 0.01, 0.0125):
        limits = rejection_limits(120, alpha)
        for d in range(121):
            rejecting = [
                k
                for k in range(d // 2 + 1)
                if mcnemar_exact([1] * k + [0] * (d - k), [0] * k + [1] * (d - k))[2] < alpha
            ]
            assert limits[d] == (max(rejecting) if rejecting else -1)


def test_the_rejection_limits_are_those_of_exact_integers_far_past_the_kits_own_tests():
    """c_d for d up to 1,000 at four levels, one of them dyadic (at 1/16, d = 5 and k = 0 sit on the boundary:
    2 P(X <= 0) is exactly 1/16, which does not reject), from binomial tails summed in Python's integers and divided
    as the kit's test divides them."""
    for each in (0.05, 0.05 / 3, 1 / 16, 1e-4):
        want = []
        for d in range(1001):
            c, k, term, tail = -1, 0, 1, 1  # tail = sum of C(d, i) for i <= k
            while k <= d // 2 and 2 * tail / 2**d < each:  # the kit's p-value, as mcnemar_exact rounds it
                c, term, k = k, term * (d - k) // (k + 1), k + 1
                tail += term
            want.append(c)
        assert rejection_limits(1000, each).tolist() == want, each


def test_a_live_run_says_what_its_questions_can_decide_without_importing_scipy_stats(tmp_path):
    """Every live run prints its sensitivity before its first call: the exact power from scipy.special's binomial
    functions, not scipy.stats (0.5 CPU s more to import: 30% of `olakit run -n 2`'s process)."""
    env = {**os.environ, "OLAKIT_BASE_URL": "scripted://tests.replies:steady", "OLAKIT_MODEL": "scripted",
           "OLAKIT_CACHE_DIR": str(tmp_path / "cache"), "PYTHONPATH": str(Path(__file__).parents[1])}  # fmt: skip
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "olakit.cli", "run", "-n", "40", "--templates", "turbo,ST",
         "--strategies", "zero-shot", "--baselines", "", "--out", str(tmp_path / "out")],
        env=env, capture_output=True, text=True, timeout=300, cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    said = done.stdout
    assert "power: 3 pairs of cells, exact McNemar" in said and "find, with 80% power" in said, said
    imported = {line.split("|")[-1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")}
    assert "scipy.special" in imported and "scipy.stats" not in imported


def test_n_needed_is_the_first_n_from_which_the_power_stays_at_the_goal():
    p10, p01, alpha, goal, ceiling = 0.4, 0.05, 0.05, 0.8, 40
    powers = {n: enumerated_power(n, p10, p01, alpha) for n in range(1, ceiling + 1)}
    want = min(n for n in powers if all(powers[m] >= goal for m in range(n, ceiling + 1)))
    assert n_needed(p10, p01, alpha, goal, ceiling) == want
    assert n_needed(p10, p01, alpha, 0.999999, ceiling) is None  # not reached within the ceiling
    assert n_needed(0.2, 0.2, alpha, goal, 1000) is None  # no difference to find
    assert n_needed(0.2, 0.2, alpha, 0.01, 1000) is None  # not even at a goal below the test's size


def test_n_needed_steps_past_a_dip_of_the_exact_tests_power():
    """The exact test's power saws: with every question discordant (p10 0.9, p01 0.1) at level 0.1 it is 0.5905 at
    n = 5, then 0.5314 and 0.4783, then 0.8131 at n = 8: for a goal of 0.5 the first n to reach it (5, where a
    bisection over 1..10 lands too) is not the n from which it stays there (8), found by enumeration."""
    p10, p01, alpha, goal, ceiling = 0.9, 0.1, 0.1, 0.5, 10
    powers = {n: enumerated_power(n, p10, p01, alpha) for n in range(1, ceiling + 1)}
    first = min(n for n in powers if powers[n] >= goal)
    want = min(n for n in powers if all(powers[m] >= goal for m in range(n, ceiling + 1)))
    assert first < want  # the dip this test is about
    assert n_needed(p10, p01, alpha, goal, ceiling) == want


def test_power_is_a_probability_at_its_edges():
    """No discordance: nothing to find (the share of a-only among none is undefined, not a power of nan). Nearly
    every question discordant one way: the sum of its terms is 1.0000000000000002 at n = 47, p10 = 0.99, and the
    power stays within [0, 1]."""
    assert power(10, 0.0, 0.0, 0.05) == 0.0
    assert 0.99 < power(47, 0.99, 0.0, 0.05) <= 1.0


def test_comparisons_are_read_as_table_cells_and_bad_ones_say_how_to_write_them():
    assert parse_comparison("DST:retrieval vs turbo:zero-shot") == ("DST | retrieval", "turbo | zero-shot")
    assert parse_comparison("regex_vote | combine vs ST:combine") == ("regex_vote | combine", "ST | combine")
    with pytest.raises(ValueError, match="METHOD:STRATEGY vs METHOD:STRATEGY"):
        parse_comparison("DST:retrieval turbo:zero-shot")
    assert parse_comparison("+RE vs CoT") == ("+RE", "CoT")  # GEEK rows, compared conditions: names as they stand
    with pytest.raises(ValueError, match=r"cell 'DST:': write it as METHOD:STRATEGY"):
        parse_comparison("DST: vs turbo:zero-shot")


def test_olakit_plan_on_the_recorded_outputs(monkeypatch, capsys, tmp_path):

    from olakit.cli import main
    from olakit.data.recorded import import_olagpt

    monkeypatch.setenv("OLAKIT_BASE_URL", "https://api.openai.com/v1")  # priced, never called
    monkeypatch.setenv("OLAKIT_MODEL", "gpt-3.5-turbo")
    comparisons = "DST:retrieval vs turbo:zero-shot,DT:zero-shot vs ST:zero-shot,AT:combine vs ST:combine"
    assert main(["plan", "--comparisons", comparisons, "--out", str(tmp_path / "plan.csv")]) == 0
    out = capsys.readouterr().out
    # the estimates: the discordant pairs of the authors' records, counted here from the records themselves
    records = import_olagpt(None)
    wide = records.pivot_table(index="question_id", columns=["template", "notes_strategy"], values="correct")
    a, b = wide[("DST", "retrieval")].astype(bool), wide[("turbo", "zero-shot")].astype(bool)
    a_only, b_only = int((a & ~b).sum()), int((~a & b).sum())
    assert f"estimate: {a_only} a-only and {b_only} b-only of 254 questions" in out
    assert "each planned at 0.01667" in out  # Holm's strictest step over three comparisons
    table = pd.read_csv(tmp_path / "plan.csv")
    first = table.iloc[0]
    d, diff = (a_only + b_only) / 254, (a_only - b_only) / 254
    assert first["n_needed"] == n_needed((d + diff) / 2, (d - diff) / 2, 0.05 / 3, 0.8, 254)
    assert "cannot be decided on aqua's 254 questions" in table.iloc[1]["verdict"]
    assert "no estimate (AT | combine not in" in table.iloc[2]["verdict"] and "pilot of 50 questions" in out
    # the price is the run's own plan: `olakit run` with the templates and strategies of the two cells, at that n
    n = int(first["n_needed"])
    flags = ["--templates", "DST,turbo", "--strategies", "retrieval,zero-shot", "-n", str(n)]
    # exported, not sent (olakit batch export: the run's plan, then its first stage's requests written, nothing paid;
    # a run against a port where nothing listens printed the same plan, then retried for 30 s)
    requests = tmp_path / "requests.jsonl"
    assert main(["batch", "export", "--requests", str(requests), "run", "--out", str(tmp_path / "run"), *flags]) == 3
    assert requests.is_file()
    planned = re.search(r"planned: (\d[\d,]*) calls", capsys.readouterr().out)
    assert int(planned.group(1).replace(",", "")) == first["calls"]
    assert (
        f"{int(first['calls']):,} calls: ${first['usd_online']:,.2f} online, ${first['usd_batch']:,.2f} batched" in out
    )
    assert first["usd_batch"] == pytest.approx(first["usd_online"] / 2)


def test_plan_settings_at_the_command_line(monkeypatch, capsys):
    from olakit.cli import main

    monkeypatch.delenv("OLAKIT_BASE_URL", raising=False)  # the embedded model: no price, and it is not started
    # one comparison given where a list is expected; a difference to plan for; the power as text
    assert main(["plan", "--comparisons", "DST:retrieval vs turbo:zero-shot", "--delta", "0.2", "--power", "0.9"]) == 0
    out = capsys.readouterr().out
    assert "1 comparison, Holm at 0.05 family-wise (each planned at 0.05), 90% power" in out
    assert "planned for a difference of +0.200" in out and "has no known price" in out
    assert main(["plan", "--comparisons", "DST:retrieval vs turbo:zero-shot", "--power", "1.5"]) == 2
    assert "power" in capsys.readouterr().err


def test_a_registered_run_records_its_family_before_the_first_call_and_marks_it_in_the_tables(
    tmp_path, monkeypatch, capsys
):
    import hashlib
    import json

    from olakit.cli import main
    from olakit.data.records import load_records
    from olakit.llm.loopback import Loopback
    from olakit.registration import read_registration
    from olakit.runlog import command, read_log
    from tests.test_batch import graded

    reg = tmp_path / "family.yaml"
    reg.write_text('comparisons: ["ST:zero-shot vs DT:zero-shot"]\nalpha: 0.05\ndataset: aqua\nn_questions: 3\n')
    sha = hashlib.sha256(reg.read_bytes()).hexdigest()
    flags = ["--templates", "ST,DT", "--strategies", "zero-shot", "--max-tokens", "16", "--registration", str(reg)]
    monkeypatch.setenv("OLAKIT_MODEL", "m")
    monkeypatch.setenv("OLAKIT_CACHE_DIR", str(tmp_path / "cache"))
    # another slice than the registered one: refused before anything is written
    monkeypatch.setenv("OLAKIT_BASE_URL", "http://127.0.0.1:9/v1")
    assert main(["run", "--out", str(tmp_path / "wrong"), "-n", "4", *flags]) == 2
    assert not (tmp_path / "wrong").exists()
    # a run whose first call fails (nothing listens) leaves nothing, its registration neither
    assert main(["run", "--out", str(tmp_path / "failed"), "-n", "3", *flags]) == 2
    assert not (tmp_path / "failed").exists()
    capsys.readouterr()
    with Loopback(reply=graded) as srv:
        monkeypatch.setenv("OLAKIT_BASE_URL", srv.base_url)
        assert main(["run", "--out", str(tmp_path / "run"), "-n", "3", *flags]) == 0
    printed = capsys.readouterr().out
    # the printed plan gives the family's power at this run's 3 questions, from the recorded outputs' estimates
    assert "registered comparisons (Holm at 0.05; estimates from the OlaGPT authors' recorded" in printed
    # and, like every run's plan, what its 3 questions can decide: ST, DT and their vote, 3 pairs at 0.05 / 3 each
    need = next(d for d in range(1, 20) if 2 / 2**d < 0.05 / 3)
    assert (
        f"power: 3 pairs of cells, exact McNemar with Holm at 0.05 (each planned at 0.0167, where a pair needs at "
        f"least {need} questions"
        in printed
        and "3 questions cannot decide any pair, whatever the answers" in printed
    )
    assert "ST:zero-shot vs DT:zero-shot: cannot be decided on this run: 3 questions give 0% power" in printed
    assert printed.index("registered comparisons") < printed.index("registered: ST:zero-shot vs DT:zero-shot")
    log = read_log(tmp_path / "run")
    assert log.registration["sha256"] == sha and log.registration["changes"] == []
    assert log.registration["settings"]["comparisons"] == ["ST:zero-shot vs DT:zero-shot"]
    assert log.registration["registered_at"] <= log.created  # read before the run's first call
    assert "--registration" in command(log)
    tests = pd.read_csv(tmp_path / "run" / "tables" / "paired_tests.csv")
    family = tests[tests["role"] == "confirmatory"]
    assert len(family) == 1 and {family.iloc[0]["a"], family.iloc[0]["b"]} == {"ST | zero-shot", "DT | zero-shot"}
    assert set(tests[tests["role"] == "exploratory"]["a"]) | set(tests[tests["role"] == "exploratory"]["b"]) >= {
        "regex_vote | zero-shot"
    }
    # the family's Holm over one comparison is its own exact p, computed here from the records
    records = load_records(tmp_path / "run" / "records.parquet")
    wide = records.pivot_table(index="question_id", columns="template", values="correct").astype(bool)
    k, j = int((wide["ST"] & ~wide["DT"]).sum()), int((~wide["ST"] & wide["DT"]).sum())
    p = 1.0 if k + j == 0 else min(1.0, 2 * sum(math.comb(k + j, i) for i in range(min(k, j) + 1)) / 2 ** (k + j))
    assert family.iloc[0]["p_holm_family"] == pytest.approx(p)
    registered = pd.read_csv(tmp_path / "run" / "tables" / "registered.csv")
    assert registered.iloc[0]["a_only"] == k and registered.iloc[0]["b_only"] == j
    assert registered.iloc[0]["decided"] == (p < 0.05)
    # a change to the file after registration is what the registration reports
    registered = read_registration(reg)
    reg.write_text(reg.read_text() + "power: 0.9\n")
    changed_file = (f"{reg.resolve()} changed after registration: sha256 {registered.sha256[:12]} -> "
                    f"{hashlib.sha256(reg.read_bytes()).hexdigest()[:12]}")  # fmt: skip
    assert registered.changes() == [changed_file]

    # after the run: the registered comparison decided or not, one examined later exploratory and kept as a change;
    # the file's edit after the run is reported too (computed now, not when the run wrote its log)
    capsys.readouterr()
    later = "regex_vote:zero-shot vs ST:zero-shot"
    before = (tmp_path / "run" / "run.json").read_bytes()
    assert main(["plan", "--after", str(tmp_path / "run"), "--comparisons", later]) == 0
    printed = capsys.readouterr().out
    assert "confirmatory: ST:zero-shot vs DT:zero-shot: " in printed
    assert f"exploratory: {later}: exploratory (not registered): Holm p over every pair = " in printed
    assert f"change after registration: {changed_file}" in printed
    examined = [json.loads(x) for x in (tmp_path / "run" / "changes.jsonl").read_text().splitlines()]
    assert [(x["examined"], x["role"]) for x in examined] == [(later, "exploratory")]
    assert (tmp_path / "run" / "run.json").read_bytes() == before  # the run's log as it was written
    capsys.readouterr()
    assert main(["plan", "--after", str(tmp_path / "run")]) == 0
    assert f"{later} examined after the run (exploratory)" in capsys.readouterr().out
    assert main(["plan", "--after", str(tmp_path / "wrong-folder")]) == 2
    assert main(["plan"]) == 2 and "give at least one" in capsys.readouterr().err


def test_estimates_from_an_earlier_run_whose_cells_are_no_olakit_templates_are_counted_not_priced(tmp_path, capsys):
    from olakit.cli import main
    from olakit.data.records import save_records, to_frame
    from tests.toys import record

    # 40 questions: T1 right on all, T2 on the first 10 -> 30 a-only, 0 b-only
    rows = [record(f"q{i}", t, "A" if t == "T1" or i < 10 else "B", dataset="aqua") for i in range(40)
            for t in ("T1", "T2")]  # fmt: skip
    save_records(to_frame(rows), tmp_path / "records.parquet")
    assert main(["plan", "--comparisons", "T1:zero-shot vs T2:zero-shot", "--estimates",
                 str(tmp_path / "records.parquet")]) == 0  # fmt: skip
    out = capsys.readouterr().out
    assert f"estimates from {tmp_path / 'records.parquet'}" in out
    assert "estimate: 30 a-only and 0 b-only of 40 questions (discordance 0.750, difference +0.750)" in out
    # p01 = 0: the first n whose discordant pairs reach 6 with 80% power at 0.05 (2 / 2^6 < 0.05), d ~ Bin(n, 0.75)
    n = next(
        n
        for n in range(1, 60)
        if all(
            sum(math.comb(m, d) * 0.75**d * 0.25 ** (m - d) for d in range(6, m + 1)) >= 0.8 for m in range(n, n + 61)
        )
    )
    assert f"{n} questions for 80% power (not priced as an OlaGPT run: T1 and T2: no template of aqua)" in out


def test_plan_and_registration_settings_in_the_same_forms_at_every_door(tmp_path):
    from olakit.config import ConfigError, from_arguments
    from olakit.plan import PlanConfig
    from olakit.registration import Registration, read_registration
    from tests.test_config import flags_of

    parser = flags_of(PlanConfig, skip=("run",))  # each setting a flag of its name, with its help and default
    given = from_arguments(PlanConfig, parser.parse_args(["--comparisons", "DT:zero-shot vs ST:zero-shot",
                                                           "--power", "0.9", "--delta", "none"]))  # fmt: skip
    assert given == PlanConfig(comparisons="DT:zero-shot vs ST:zero-shot", power="0.9")  # a scalar, a number as text
    assert given.comparisons == ["DT:zero-shot vs ST:zero-shot"] and given.power == 0.9 and given.delta is None
    with pytest.raises(ConfigError, match="PlanConfig: .*give at least one"):
        PlanConfig()
    # the registration file: a scalar where the list is expected, numbers as text, an integer as "254"
    path = tmp_path / "family.yaml"
    path.write_text('comparisons: "DT:zero-shot vs ST:zero-shot"\nalpha: "0.01"\nn_questions: "254"\n')
    registered = read_registration(path)
    assert registered.settings == Registration(comparisons=["DT:zero-shot vs ST:zero-shot"], alpha=0.01,
                                               n_questions=254)  # fmt: skip
    assert registered.entry()["settings"]["comparisons"] == ["DT:zero-shot vs ST:zero-shot"]
    path.write_text("comparisons: []\nalpha: 2\n")
    with pytest.raises(ConfigError, match=r"family.yaml: Registration: .*comparisons=\[\].*alpha=2"):
        read_registration(path)


def test_the_planned_cells_of_an_ekar_run_with_sc_auto_cot_and_the_llm_vote():
    """The cells a registration may name, before any call, on E-KAR with every kind of cell: its templates (the five
    and AT, whose file lists ekar_zh alone), the regex vote, SC and the LLM vote under each strategy, Auto-CoT under
    random. Written out by hand; a mutation run found SC, the LLM vote, Auto-CoT and the dataset unchecked."""
    from olakit.olagpt.budget import planned_cells
    from olakit.olagpt.config import OlaGPTConfig

    cfg = OlaGPTConfig(dataset="ekar_zh", strategies=["zero-shot", "random"], baselines=["SC", "auto_cot"],
                       votes=["regex_vote", "llm_vote"])  # fmt: skip
    methods = ["turbo", "AT", "DT", "DST", "PT", "ST", "regex_vote", "SC", "llm_vote"]
    want = [f"{m} | {s}" for m in methods for s in ("zero-shot", "random")] + ["auto_cot | random"]
    assert planned_cells(cfg) == want
    one = OlaGPTConfig(templates=["ST"], strategies=["random"])
    assert planned_cells(one) == ["ST | random", "regex_vote | random"]


def test_what_a_run_of_n_questions_can_decide_worked_by_hand():
    """The sensitivity every run's plan prints: the fewest discordant questions that can reject at alpha / pairs
    (all of them one way: 2 / 2^d below the level), and the smallest difference found with 80% power at a
    discordance, here by a plain search over the exact rejection region."""
    from olakit.analysis.exact import detectable_difference, min_discordant, sensitivity, sensitivity_line

    for level in (0.05, 0.005, 0.05 / 276, 1 / 16):  # at 1/16, 2 / 2^5 equals the level and does not reject
        assert min_discordant(level) == next(d for d in range(1, 40) if 2 / 2**d < level)

    for n, discordance, level in ((10, 1.0, 0.05), (40, 0.5, 0.05), (60, 0.3, 0.005)):
        by_hand = next(x / 1000 for x in range(1, int(discordance * 1000) + 1)
                       if power_by_hand(n, discordance, x / 1000, level) >= 0.8)  # fmt: skip
        assert detectable_difference(n, discordance, level, 0.8) == by_hand
    # 254 questions, an OlaGPT grid's 276 pairs: rounded to the nearest 0.001 it was 0.156, whose power is 0.7975;
    # the difference stated is the smallest thousandth whose power reaches the goal
    assert power_by_hand(254, 0.3, 0.156, 0.05 / 276) < 0.8 <= power_by_hand(254, 0.3, 0.157, 0.05 / 276)
    assert detectable_difference(254, 0.3, 0.05 / 276, 0.8) == 0.157
    assert detectable_difference(10, 1.0, 0.05, 0.0) == 0.0  # a goal any difference reaches: none needed
    assert detectable_difference(8, 0.5, 0.005, 0.8) is None  # 8 questions: fewer than the 9 discordant it needs
    two = sensitivity_line(sensitivity(2, 10, what="rows"))  # the default analysis settings: alpha 0.05
    assert two.startswith("power: 10 pairs of rows, exact McNemar with Holm at 0.05 (each planned at 0.005, where a "
                          "pair needs at least 9 questions")  # fmt: skip
    assert two.endswith("2 questions cannot decide any pair, whatever the answers")
    assert sensitivity_line(sensitivity(8, 10)).endswith("8 questions cannot decide any pair, whatever the answers")
    for pairs in (0, 1):  # one pair (or none) is tested at alpha itself
        assert sensitivity(30, pairs)["alpha_each"].tolist() == [0.05] * 3
    table = sensitivity(229, 10, what="rows")
    assert list(table["discordance"]) == [0.1, 0.3, 0.5] and table["detectable_difference"].notna().all()
    line = sensitivity_line(table)
    assert all(f"{x:.3f} at discordance {d:g}" in line for d, x in zip(table["discordance"],
                                                                      table["detectable_difference"]))  # fmt: skip


def test_a_geek_run_says_what_its_questions_can_decide_before_any_call_and_refuses_another_slice(
    tmp_path, monkeypatch, capsys
):
    from olakit.cli import main

    monkeypatch.setenv("OLAKIT_BASE_URL", "http://127.0.0.1:9/v1")  # nothing listens: export calls nothing
    monkeypatch.setenv("OLAKIT_MODEL", "m")
    code = main(["batch", "export", "--requests", str(tmp_path / "req.jsonl"), "geek", "-n", "2", "--out",
                 str(tmp_path / "g")])  # fmt: skip
    assert code == 3 and (tmp_path / "req.jsonl").is_file()
    out = capsys.readouterr().out
    assert "power: 10 pairs of rows" in out and "2 questions cannot decide any pair, whatever the answers" in out
    family = tmp_path / "family.yaml"
    family.write_text('comparisons: ["+RE vs CoT"]\nn_questions: 2\n')
    assert main(["geek", "-n", "3", "--out", str(tmp_path / "other"), "--registration", str(family)]) == 2
    assert "the run is not the registered one: n_questions=3 (registered: 2)" in capsys.readouterr().err
    assert not (tmp_path / "other").exists()


def test_geek_rows_are_planned_from_an_earlier_geek_run_and_priced_at_what_it_paid(tmp_path, monkeypatch, capsys):
    """`olakit plan --comparisons "+RE vs CoT" --estimates GEEK_RUN`: the discordance from that run's rows, the
    ceiling its split's size (StrategyQA dev: 229), the price its tokens per question at the endpoint's price."""
    import shutil

    from olakit.cli import main
    from olakit.data.records import load_records, save_records

    monkeypatch.setenv("OLAKIT_BASE_URL", "scripted://tests.replies:geek_notebook")
    monkeypatch.setenv("OLAKIT_MODEL", "scripted")
    assert main(["geek", "-n", "6", "--rows", "CoT,+RE", "--out", str(tmp_path / "g"), "--n-boot", "50"]) == 0
    # the estimate the test wants: +RE right on all six, CoT wrong on the first four (4 a-only, 0 b-only)
    records = load_records(tmp_path / "g" / "records.parquet")
    first = sorted(set(records["question_id"]), key=lambda q: list(records["question_id"]).index(q))[:4]
    records["correct"] = (records["row"] == "+RE") | ~records["question_id"].isin(first)
    (tmp_path / "est").mkdir()
    save_records(records, tmp_path / "est" / "records.parquet")
    shutil.copy(tmp_path / "g" / "run.json", tmp_path / "est" / "run.json")
    monkeypatch.setenv("OLAKIT_BASE_URL", "https://api.openai.com/v1")  # priced, never called
    monkeypatch.setenv("OLAKIT_MODEL", "gpt-4o-mini")
    capsys.readouterr()
    out_csv = tmp_path / "plan.csv"
    assert main(["plan", "--comparisons", "+RE vs CoT", "--estimates", str(tmp_path / "est"),
                 "--out", str(out_csv)]) == 0  # fmt: skip
    out = capsys.readouterr().out
    assert "estimate: 4 a-only and 0 b-only of 6 questions (discordance 0.667, difference +0.667)" in out
    # p01 = 0: rejected at 0.05 once 6 discordant pairs (2 / 2^6 < 0.05), d ~ Bin(n, 2/3); the first n that stays
    n = next(n for n in range(1, 80) if all(
        sum(math.comb(m, d) * (2 / 3) ** d * (1 / 3) ** (m - d) for d in range(6, m + 1)) >= 0.8
        for m in range(n, n + 61)))  # fmt: skip
    row = pd.read_csv(out_csv).iloc[0]
    assert row["n_needed"] == n
    tokens = records.groupby("row")[["prompt_tokens", "completion_tokens"]].mean().sum()
    usd = n * (tokens["prompt_tokens"] * 0.15 + tokens["completion_tokens"] * 0.60) / 1e6  # gpt-4o-mini's price
    assert row["usd_online"] == pytest.approx(usd) and row["usd_batch"] == pytest.approx(usd / 2)
    assert f"a run of {n} questions with these two cells" in out and "tokens as the estimate run paid" in out


def test_a_replicate_asks_its_slice_again_past_the_cache_and_the_log_reports_each_cells_disagreement(
    tmp_path, monkeypatch, capsys
):
    """`olakit run --replicate 3`: the first 3 questions' every call again (the same prompts: the server sees each
    twice), from a backend that answers a second asking of some prompts otherwise, as batched decoding can; the
    run log's per-cell disagreement equals the records' own, counted here; a rerun of the command pays nothing."""
    import collections
    import json

    from olakit.cli import main
    from olakit.data.records import load_records
    from olakit.llm.loopback import Loopback
    from olakit.runlog import read_log

    seen = collections.Counter()

    def drifting(prompt, request):  # the same answer the first time; a second asking of every other prompt differs
        seen[prompt] += 1
        letter = "ABCDE"[(len(prompt) + (seen[prompt] > 1 and len(prompt) % 2)) % 5]
        return f"Reasoning ... Answer: {letter}"

    monkeypatch.setenv("OLAKIT_MODEL", "m")
    monkeypatch.setenv("OLAKIT_CACHE_DIR", str(tmp_path / "cache"))
    flags = ["--templates", "ST,DT", "--strategies", "zero-shot", "--max-tokens", "16", "-n", "5", "--replicate", "3"]
    with Loopback(reply=drifting) as srv:
        monkeypatch.setenv("OLAKIT_BASE_URL", srv.base_url)
        assert main(["run", "--out", str(tmp_path / "run"), *flags]) == 0
        first_requests = srv.requests
        printed = capsys.readouterr().out
        assert main(["run", "--out", str(tmp_path / "again"), *flags]) == 0
        assert srv.requests == first_requests  # all cached, the replicate's answers too
    # the plan counts the replicate's calls: 5 question types + 10 answers, then 3 + 6 again
    assert "replicate: question types" in printed and "replicate: answers" in printed
    assert first_requests == 5 + 10 + 3 + 6 and max(seen.values()) == 2
    log = read_log(tmp_path / "run")
    assert log.calls["answerer"].paid == first_requests
    first = load_records(tmp_path / "run" / "records.parquet")
    again = load_records(tmp_path / "run" / "replicate.parquet")
    assert sorted(set(again["question_id"])) == sorted(list(dict.fromkeys(first["question_id"]))[:3])
    by_cell = {}
    for _, r in again.iterrows():
        mine = first[(first["question_id"] == r["question_id"]) & (first["template"] == r["template"])].iloc[0]
        n, d = by_cell.get(r["template"], (0, 0))
        by_cell[r["template"]] = (n + 1, d + (mine["extracted"] != r["extracted"]))
    # asked twice: the 3 question-type prompts, and each answer prompt the replicate's (drifted) type left the same
    same = sum(
        r["prompt_hash"] == first[(first["question_id"] == r["question_id"]) & (first["template"] == r["template"])]
        .iloc[0]["prompt_hash"] for _, r in again.iterrows()
    )  # fmt: skip
    assert sum(v == 2 for v in seen.values()) == 3 + same
    cells = {c["template"]: (c["n"], c["answers_differ"]) for c in log.extra["replicate"]["cells"]}
    assert cells == by_cell and sum(d for _, d in by_cell.values()) > 0
    assert log.extra["replicate"]["questions"] == 3
    table = json.loads(json.dumps(log.extra["replicate"]))  # the log's entry is plain JSON
    assert table["cells"][0]["notes_strategy"] == "zero-shot"
    differ = sum(d for _, d in by_cell.values())
    parsed = sum(n for n, _ in by_cell.values())  # the loopback's answers always parse
    assert f"replicate: 6 answers asked twice; of the {parsed} parsed at least once, {differ} differed" in printed
    assert (tmp_path / "run" / "tables" / "replicate.csv").is_file()


def test_a_run_whose_backend_changed_its_fingerprint_midway_says_so(tmp_path, monkeypatch, capsys):
    from olakit.cli import main
    from olakit.llm.loopback import Loopback
    from olakit.runlog import read_log

    monkeypatch.setenv("OLAKIT_MODEL", "m")
    monkeypatch.setenv("OLAKIT_CACHE_DIR", str(tmp_path / "cache"))
    calls = []

    def reply(prompt, request):  # after the question types, the backend changes under the model's name
        calls.append(prompt)
        if len(calls) == 3:
            srv.fingerprint = "fp_after"
        return "Reasoning ... Answer: A"

    with Loopback(reply=reply, fingerprint="fp_before") as srv:
        monkeypatch.setenv("OLAKIT_BASE_URL", srv.base_url)
        args = ["--templates", "ST,DT", "--strategies", "zero-shot", "--max-tokens", "16", "-n", "3"]
        assert main(["run", "--out", str(tmp_path / "run"), *args]) == 0
    out = capsys.readouterr().out
    assert read_log(tmp_path / "run").roles["answerer"].system_fingerprints == ("fp_after", "fp_before")
    assert "note: the endpoint's system_fingerprint changed during this run (answerer: fp_after, fp_before)" in out


def test_best_names_the_template_with_the_highest_accuracy_where_the_comparison_is_judged(olagpt_records):
    """`regex_vote:zero-shot vs best:zero-shot`: the vote against the best template of that strategy, taken on the
    data the comparison is judged on (here the recorded outputs, for the plan and for a registered family alike),
    and named in the verdict with the warning that its p is optimistic."""
    from olakit.analysis.verdicts import registered_tables
    from olakit.plan import plan_table
    from olakit.registration import Registered, Registration

    zero = olagpt_records[(olagpt_records["notes_strategy"] == "zero-shot") & (olagpt_records["sample"] == 0)]
    accuracy = zero.groupby("template")["correct"].mean()
    best = accuracy.index[accuracy.to_numpy().argmax()]  # the first of the highest, in the table's order
    from olakit.analysis.inference import cell_outcomes
    from olakit.data.recorded import RECORDED_TEMPLATES

    outcomes = cell_outcomes(olagpt_records, RECORDED_TEMPLATES)
    table = plan_table(["regex_vote:zero-shot vs best:zero-shot"], outcomes, source="recorded", ceiling=254)
    assert table.iloc[0]["b"] == f"{best} | zero-shot"
    family = Registered(Registration(comparisons=["regex_vote:zero-shot vs best:zero-shot"]), "f.yaml", "", "")
    registered = registered_tables(olagpt_records, RECORDED_TEMPLATES, family)["registered"].iloc[0]
    assert registered["b"] == f"{best} | zero-shot"
    assert f"(best: {best} | zero-shot, chosen on these data: its p is optimistic)" in registered["verdict"]


def test_olakit_plan_prices_each_effort_at_its_tokens_a_call_capped_by_max_tokens(monkeypatch, capsys, tmp_path):
    """`olakit plan` for a grid of efforts: one run per effort, each call priced at the smaller of max_tokens and the
    effort's planned tokens (effort_tokens, an estimate; the question-type call too: the run's max_tokens reaches every
    stage, and a reasoning model thinks on each), the row's price their
    sum; an effort planned past max_tokens is a warning; the decision study prices a cell at each effort."""
    from olakit.cli import main

    monkeypatch.setenv("OLAKIT_BASE_URL", "https://api.openai.com/v1")  # priced, never called
    monkeypatch.setenv("OLAKIT_MODEL", "o4-mini")  # $4.40 per million completion tokens (prices.json, 2025-04-16)
    efforts = ["--effort-tokens", '{"low": 1500, "high": 20000}']
    efforts = ["--effort-tokens", '{"low": 1500, "high": 20000}']
    flags = ["--reasoning-effort", "low,high", "--max-tokens", "12000", *efforts]
    assert main(["plan", "--comparisons", "DST:retrieval vs turbo:zero-shot", "--out", str(tmp_path / "p.csv"),
                 *flags]) == 0  # fmt: skip
    out = capsys.readouterr().out
    row = pd.read_csv(tmp_path / "p.csv").iloc[0]
    n = int(row["n_needed"])
    # per effort: n question-type calls and n x 2 templates x 2 cells (zero-shot; retrieval at 3 notes), each call at
    # the effort's tokens up to the limit
    low = (n * 1500 + 4 * n * 1500) * 4.40 / 1e6
    high = (n * 12000 + 4 * n * 12000) * 4.40 / 1e6  # 20,000 planned, 12,000 the limit
    assert row["calls"] == 2 * 5 * n
    assert row["usd_online[low]"] == pytest.approx(low) and row["usd_online[high]"] == pytest.approx(high)
    assert row["usd_online"] == pytest.approx(low + high) and row["usd_batch"] == pytest.approx((low + high) / 2)
    assert f"low ${low:,.2f} (1,500 tokens a call), high ${high:,.2f} (12,000 tokens a call)" in out
    assert "an estimate" in out
    assert "warning: effort high 20,000 tokens a call" in out and "max_tokens 12,000" in out
    assert "effort low" not in out  # low fits

    assert main(["plan", "--target-se", "0.03", "--out", str(tmp_path / "d.csv"), *flags]) == 0
    out = capsys.readouterr().out
    design = pd.read_csv(tmp_path / "d.csv").iloc[0]
    calls = int(design["calls"])
    assert design["price[low]"] == pytest.approx(calls * 1500 * 4.40 / 1e6)
    assert design["price[high]"] == pytest.approx(calls * 12000 * 4.40 / 1e6)
    assert f"low ${calls * 1500 * 4.40 / 1e6:,.2f} (1,500 tokens a call)" in out


def test_without_efforts_the_plan_prices_each_call_at_max_tokens(monkeypatch, tmp_path):
    """No effort: effort_tokens changes nothing (a call at its limit; --max-tokens reaches every stage, the question
    types' too)."""
    from olakit.cli import main

    monkeypatch.setenv("OLAKIT_BASE_URL", "https://api.openai.com/v1")
    monkeypatch.setenv("OLAKIT_MODEL", "o4-mini")
    args = ["plan", "--comparisons", "DST:retrieval vs turbo:zero-shot", "--max-tokens", "300"]
    assert main([*args, "--out", str(tmp_path / "a.csv")]) == 0
    assert main([*args, "--effort-tokens", '{"low": 10}', "--out", str(tmp_path / "b.csv")]) == 0
    a, b = pd.read_csv(tmp_path / "a.csv").iloc[0], pd.read_csv(tmp_path / "b.csv").iloc[0]
    n = int(a["n_needed"])
    assert a["usd_online"] == b["usd_online"] == pytest.approx(5 * n * 300 * 4.40 / 1e6)


def test_a_registered_familys_verdicts_worked_by_hand():
    """mark_roles over a paired-tests table written by hand (its p-values chosen for Holm's arithmetic, not drawn
    from the counts): "B vs A" stored as A against B, "best vs C" where the best template (B, 0.75) is only ever the
    table's b side and the vote (0.9) and a verified cell (0.95) are no template, and a comparison the run lacks.
    Holm over the three (the missing one as p = 1): 3 x 0.01 = 0.03, max(0.03, 2 x 0.025) = 0.05, 1."""
    from olakit.analysis.verdicts import mark_roles
    from olakit.registration import Registered, Registration

    def row(a, b, a_only, b_only, diff, lo, hi, p, acc_a, acc_b):
        return {"a": a, "b": b, "n": 40, "a_only": a_only, "b_only": b_only, "diff": diff, "diff_ci_low": lo,
                "diff_ci_high": hi, "p_mcnemar": p, "acc_a": acc_a, "acc_b": acc_b}  # fmt: skip

    tests = pd.DataFrame([
        row("A | zs", "B | zs", 2, 12, -0.25, -0.4, -0.1, 0.01, 0.5, 0.75),
        row("C | zs", "B | zs", 2, 9, -0.175, -0.3, -0.05, 0.025, 0.5, 0.75),
        row("regex_vote | zs", "A | zs", 16, 0, 0.4, 0.25, 0.55, 0.001, 0.9, 0.5),
        row("A+V | zs", "A | zs", 18, 0, 0.45, 0.3, 0.6, 0.001, 0.95, 0.5),
    ])  # fmt: skip
    family = Registered(Registration(comparisons=["B:zs vs A:zs", "best:zs vs C:zs", "A:zs vs D:zs"], power=0.9),
                        "f.yaml", "0" * 64, "now")  # fmt: skip
    out = mark_roles(tests, family)
    reg = out["registered"].set_index("comparison")
    first = reg.loc["B:zs vs A:zs"]
    assert (first["a"], first["b"], first["a_only"], first["b_only"]) == ("B | zs", "A | zs", 12, 2)  # as registered
    assert (first["diff"], first["diff_ci_low"], first["diff_ci_high"]) == (0.25, 0.1, 0.4)
    assert first["p_holm_family"] == pytest.approx(0.03) and first["decided"]
    assert first["verdict"] == "decided: a is better (Holm p = 0.03)"
    best = reg.loc["best:zs vs C:zs"]
    assert (best["a"], best["b"], best["a_only"], best["b_only"]) == ("B | zs", "C | zs", 9, 2)
    assert best["p_holm_family"] == 0.05 and not best["decided"]  # equal to alpha: not below it
    # the n its observed rates (9 and 2 of 40) need at 90% power, each planned at 0.05 / 3: the first n a bisection
    # finds, where the power reaches 0.9 and one question fewer does not
    need = int(best["n_needed"])
    assert power_by_hand(need - 1, 11 / 40, 7 / 40, 0.05 / 3) < 0.9 <= power_by_hand(need, 11 / 40, 7 / 40, 0.05 / 3)
    assert best["verdict"].startswith(f"undecided (Holm p = 0.05); the observed rates would need about {need:,} ")
    assert best["verdict"].endswith("(best: B | zs, chosen on these data: its p is optimistic)")
    assert reg.loc["A:zs vs D:zs", "verdict"] == "not run: the run lacks a cell of it"
    roles = out["paired_tests"][["role", "p_holm_family"]].values.tolist()
    assert roles[:2] == [["confirmatory", pytest.approx(0.03)], ["confirmatory", 0.05]]
    assert [r[0] for r in roles[2:]] == ["exploratory"] * 2 and all(np.isnan(r[1]) for r in roles[2:])


def test_exploratory_and_examined_comparisons_worked_by_hand():
    """Three compared conditions on 20 questions (second samples first in the records, all wrong: not read).
    X right on q0-q9; Y on q6-q9; Z as X but wrong on q0 and right on q10. X vs Y: 6 X-only, p = 2 / 2^6; X vs Z: 1
    and 1, p = 1; Y vs Z: 6 Z-only, p = 2 / 2^6. Holm over the three: 3 x 0.03125 = 0.09375 for both, 1."""
    from olakit.analysis.verdicts import examined, exploratory
    from olakit.registration import Registered, Registration
    from olakit.settings import Analysis

    right = {"X": set(range(10)), "Y": set(range(6, 10)), "Z": set(range(1, 11))}
    rows = [{"question_id": f"q{i}", "template": c, "notes_strategy": "compared", "sample": s,
             "correct": s == 0 and i in right[c]} for s in (1, 0) for c in right for i in range(20)]  # fmt: skip
    records = pd.DataFrame(rows)
    at = Analysis(alpha=0.09375)  # Holm's p equal to alpha: not below it
    (xy,) = exploratory(records, ["X vs Y"], at).to_dict("records")
    assert (xy["a_only"], xy["b_only"], xy["p_mcnemar_holm"], xy["decided"]) == (6, 0, 0.09375, False)
    # planned at alpha / 3 pairs = 0.03125, where 7 discordant questions are the fewest that can reject (2 / 2^6 is
    # not below it), at 80% power: with no Y-only question, the power at n is P(Bin(n, 0.3) >= 7)
    power = [sum(math.comb(n, d) * 0.3**d * 0.7 ** (n - d) for d in range(7, n + 1)) for n in range(80)]
    assert xy["n_needed"] == next(n for n in range(80) if power[n] >= 0.8)
    assert xy["verdict"].startswith("exploratory (no registration): Holm p over every pair = 0.0938; the observed ")
    family = Registered(Registration(comparisons=["X vs Z"]), "f.yaml", "0" * 64, "now")
    table = examined(records, family, ["X vs Z", "Y vs Z"])
    assert table[["comparison", "role"]].values.tolist() == [["X vs Z", "confirmatory"], ["Y vs Z", "exploratory"]]
    assert table.loc[1, "p_mcnemar_holm"] == 0.09375 and table.loc[0, "p_holm_family"] == 1.0
