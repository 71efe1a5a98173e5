"""Power of the kit's paired test before a run: how many questions the exact McNemar test needs to tell two cells
apart, computed exactly, and what that many questions cost (``olakit plan``).

The model: each question falls, independently, a-only right (probability ``p10``), b-only right (``p01``) or
concordant. Over ``n`` questions the discordant count ``D`` is Bin(n, p10 + p01) and, given ``D = d``, the a-only
count is Bin(d, p10 / (p10 + p01)). The test the kit reports (inference.mcnemar_exact) rejects at level ``alpha``
when 2 P(X <= min(k, d - k)) < alpha for X ~ Bin(d, 1/2): for each ``d`` the rejection region is k <= c_d or
k >= d - c_d. So the power at ``n`` is

    sum over d of Bin(d; n, p10 + p01) * [Bin(k <= c_d; d, q) + Bin(k >= d - c_d; d, q)],  q = p10 / (p10 + p01),

exact, with no normal approximation. The power of an exact test is not monotone in ``n`` (it saws up and down as
c_d steps); ``n_needed`` is the smallest ``n`` from which it stays at the goal.

A family of ``m`` comparisons corrected by Holm is planned at ``alpha / m`` each: Holm's first, strictest step,
so a comparison planned this way is decided whatever the others' p-values.
"""

from __future__ import annotations

import datetime as _dt
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated

import numpy as np
import pandas as pd
from pydantic import Field, model_validator

from olakit.analysis.inference import cell_outcomes, holm, paired_tests
from olakit.analysis.traces import cost_per_row
from olakit.config import ConfigError
from olakit.data.loaders import load_questions, questions_of
from olakit.data.recorded import import_olagpt
from olakit.errors import DataError
from olakit.llm.batch import BATCH_RATE
from olakit.llm.endpoint import Endpoint
from olakit.names import LLM_VOTE, NON_TEMPLATES, REGEX_VOTE, VERIFIED_SUFFIX, plural, voting_templates
from olakit.olagpt.budget import ceiling_price, planned_calls
from olakit.olagpt.config import OlaGPTConfig
from olakit.olagpt.templates import templates_for
from olakit.registration import Registration, registration_of
from olakit.runlog import load_run, write_log
from olakit.settings import ANALYSIS, Analysis

PILOT = 50
"""Questions of the pilot the planner proposes when no earlier run has both cells of a comparison: enough to see
the discordance rate within about +-0.14 (95%, at its worst, 0.5)."""


BEYOND = 100_000
"""The most questions the planner looks at for a comparison the split cannot decide (a bisection: "about")."""
SETTLE = 60
"""How many n past the first that reaches the goal are checked to stay there."""


def _binom():
    """scipy's binomial distribution, imported here: scipy.stats costs 0.7 s and only planning needs it."""
    from scipy.stats import binom

    return binom


def rejection_limits(d_max: int, alpha: float) -> np.ndarray:
    """c_d for d = 0..d_max: the largest k with 2 P(Bin(d, 1/2) <= k) < alpha, the kit's rejection rule
    (inference.mcnemar_exact); -1 where none (that many discordant pairs can never reject)."""
    d = np.arange(d_max + 1)
    k = _binom().ppf(alpha / 2, d, 0.5)  # the smallest k with P(X <= k) >= alpha / 2
    k = np.where(np.isnan(k), -1, k).astype(int)
    return np.where(2 * _binom().cdf(k, d, 0.5) < alpha, k, k - 1)


def power(n: int, p10: float, p01: float, alpha: float = 0.05, limits: np.ndarray | None = None) -> float:
    """The exact power of the two-sided exact McNemar test at level ``alpha`` on ``n`` questions (module
    docstring). ``limits``: rejection_limits(>= n, alpha), when already computed."""
    discordance = p10 + p01
    if n <= 0 or discordance <= 0:
        return 0.0
    c = (rejection_limits(n, alpha) if limits is None else limits)[: n + 1]
    d = np.arange(n + 1)
    q = p10 / discordance
    binom = _binom()
    reject = np.where(c >= 0, binom.cdf(c, d, q) + binom.sf(d - c - 1, d, q), 0.0)
    return float(np.clip((binom.pmf(d, n, discordance) * reject).sum(), 0, 1))


def n_needed(p10: float, p01: float, alpha: float, goal: float, ceiling: int, settle: bool = True) -> int | None:
    """The smallest n <= ceiling from which the power is at least ``goal`` (with ``settle``, checked at each of the
    next SETTLE n: the dips of an exact test's power are a few questions wide; without, the first n a bisection
    finds, for the rough sizes beyond a split); None when the power at the ceiling is below it."""
    if p10 == p01 or ceiling < 1:
        return None
    limits = rejection_limits(ceiling, alpha)
    if power(ceiling, p10, p01, alpha, limits) < goal:
        return None
    # the power climbs, sawing: find the first n reaching the goal, then step past any later dip below it
    lo, hi = 1, ceiling
    while lo < hi:  # first n with power >= goal, as if monotone
        mid = (lo + hi) // 2
        if power(mid, p10, p01, alpha, limits) >= goal:
            hi = mid
        else:
            lo = mid + 1
    n = lo
    for m in range(n, min(ceiling, n + SETTLE) + 1) if settle else ():  # the saw's teeth are a few questions wide
        if power(m, p10, p01, alpha, limits) < goal:
            n = m + 1
    return min(n, ceiling)


DISCORDANCES = (0.1, 0.3, 0.5)
"""The discordance rates (share of questions exactly one of two cells gets right) a run's printed plan states its
sensitivity at, with no estimate: two similar prompts of one model, two templates, two different methods."""


def min_discordant(alpha_each: float) -> int:
    """The fewest discordant questions with which the exact McNemar test can reject at ``alpha_each``: the
    smallest d with 2 / 2**d < alpha_each (all d of them one way).

    >>> min_discordant(0.05), min_discordant(0.05 / 10)
    (6, 9)
    """
    return int(math.floor(math.log2(2 / alpha_each))) + 1


def detectable_difference(n: int, discordance: float, alpha_each: float, goal: float) -> float | None:
    """The smallest accuracy difference two cells with this discordance rate must have for the exact test at
    ``alpha_each`` to find it with ``goal`` power on ``n`` questions (to 0.001); None when not even the largest
    possible, the discordance itself (every discordant question one way), is found."""
    limits = rejection_limits(n, alpha_each)

    def found(diff: float) -> bool:
        return power(n, (discordance + diff) / 2, (discordance - diff) / 2, alpha_each, limits) >= goal

    if n < min_discordant(alpha_each) or not found(discordance):
        return None
    lo, hi = 0.0, discordance  # the power grows with the difference at a fixed discordance
    while hi - lo > 0.0005:
        mid = (lo + hi) / 2
        lo, hi = (lo, mid) if found(mid) else (mid, hi)
    return round(hi, 3)


def sensitivity(n: int, pairs: int, alpha: float = 0.05, goal: float = 0.8, what: str = "cells") -> pd.DataFrame:
    """What a run of ``n`` questions can decide among its ``pairs`` paired tests (Holm at ``alpha``, each planned at
    alpha / pairs, its strictest step), before any call and with no estimate: one row per discordance rate of
    DISCORDANCES, with the smallest difference found with ``goal`` power (None: none can be). ``what``: the pairs'
    kind, for the printed line (``cells``, ``rows``, ``iterations``)."""
    level = alpha / max(1, pairs)
    need = min_discordant(level)
    return pd.DataFrame(
        [
            {"n": n, "pairs": pairs, "alpha_each": level, "min_discordant": need, "discordance": d,
             "detectable_difference": detectable_difference(n, d, level, goal), "power": goal, "of": what}
            for d in DISCORDANCES
        ]
    )  # fmt: skip


def sensitivity_line(table: pd.DataFrame) -> str:
    """The sensitivity as a run's printed plan says it (one line; ``olakit geek -n 2`` once gave CIs from 0 to 1
    with no word that 2 questions cannot separate two rows)."""
    r = table.iloc[0]
    n, pairs, need, what = int(r["n"]), int(r["pairs"]), int(r["min_discordant"]), r["of"]
    head = (
        f"power: {plural(pairs, 'pair')} of {what}, exact McNemar with Holm at {r['alpha_each'] * pairs:g} (each "
        f"planned at {r['alpha_each']:.3g}, where a pair needs at least {need} questions exactly one of its two gets "
        "right)"
    )
    if n < need:
        return f"{head}; {plural(n, 'question')} cannot decide any pair, whatever the answers"
    found = [(d, x) for d, x in zip(table["discordance"], table["detectable_difference"]) if pd.notna(x)]
    if not found:
        return f"{head}; {plural(n, 'question')} find no difference with {r['power']:.0%} power, at any discordance"
    said = ", ".join(f"{x:.2f} at discordance {d:g}" for d, x in found)
    return f"{head}; {plural(n, 'question')} find, with {r['power']:.0%} power, an accuracy difference of {said}"


def run_pairs(cfg: OlaGPTConfig) -> int:
    """How many paired tests an OlaGPT run's ``paired_tests`` table has: every pair of its cells, a cell being a
    method (each template, the regex vote, the LLM vote and the baselines it runs) under a note strategy
    (inference.cell_outcomes)."""
    methods = len(templates_for(cfg.dataset, cfg.templates)) + 1 + (LLM_VOTE in cfg.votes) + len(cfg.baselines)
    cells = methods * len(cfg.strategies)
    return cells * (cells - 1) // 2


def parse_comparison(text: str) -> tuple[str, str]:
    """``"DST:retrieval vs turbo:zero-shot"`` -> ("DST | retrieval", "turbo | zero-shot"): two cells of an OlaGPT
    run, also written as the tables name them ("DST | retrieval"); a name without a colon is a GEEK row or a
    compared condition as it stands (``"+RE vs CoT"``)."""
    parts = _halves(text)
    if len(parts) != 2 or not all(parts):
        raise ValueError(f"comparison {text!r}: write it as 'METHOD:STRATEGY vs METHOD:STRATEGY' (or 'ROW vs ROW')")
    return tuple(_cell(p) for p in parts)  # type: ignore[return-value]


def _halves(text: str) -> list[str]:
    """The sides of ``A vs B`` as written."""
    return [p.strip() for p in text.replace(" VS ", " vs ").split(" vs ")]


def _cell(text: str) -> str:
    if " | " in text or ":" not in text:
        return text
    method, _, strategy = text.partition(":")
    if not method.strip() or not strategy.strip():
        raise ValueError(f"cell {text!r}: write it as METHOD:STRATEGY (e.g. DST:retrieval, regex_vote:combine)")
    return f"{method.strip()} | {strategy.strip()}"


def outcomes_of(records: pd.DataFrame, analysis: Analysis = ANALYSIS) -> pd.DataFrame:
    """Correctness per question (rows) and cell (columns) of any run's records, as its paired tests name the cells:
    an OlaGPT run's ``METHOD | STRATEGY`` cells with its votes (inference.cell_outcomes), a GEEK run's rows."""
    if "row" in records.columns:
        return records.pivot_table(index="question_id", columns="row", values="correct", aggfunc="first", sort=False)
    return cell_outcomes(records, voting_templates(records["template"]), analysis)


def plan_table(
    comparisons: Sequence[str],
    outcomes: pd.DataFrame | None,
    *,
    source: str,
    ceiling: int,
    alpha: float = 0.05,
    goal: float = 0.8,
    delta: float | None = None,
    within: str = "this split",
) -> pd.DataFrame:
    """One row per comparison: the estimate (its source, the questions it saw, a-only and b-only counts), the
    rates planned for, the per-comparison level (alpha / m: Holm's strictest step), the questions needed for
    ``goal`` power (None: cannot be decided within ``ceiling``, the split's size), the power at the ceiling, and
    what to do. ``delta``: the accuracy difference to detect (default: the one observed), kept with the observed
    discordance rate."""
    accuracy = outcomes.mean().to_dict() if outcomes is not None else None
    cells = list(outcomes.columns) if outcomes is not None else []
    pairs = [comparison_cells(c, cells, accuracy) for c in comparisons]
    level = alpha / max(1, len(pairs))
    rows = []
    for text, (a, b) in zip(comparisons, pairs):
        row = {"comparison": text, "a": a, "b": b, "source": source, "alpha_each": level}
        have = outcomes is not None and a in outcomes.columns and b in outcomes.columns
        if not have:
            missing = [c for c in (a, b) if outcomes is None or c not in outcomes.columns]
            named = (
                f"; its cells: {', '.join(map(str, list(outcomes.columns)[:3]))}, ..." if outcomes is not None else ""
            )
            verdict = (f"no estimate ({', '.join(missing)} not in {source}{named}): run a pilot of {PILOT} questions "
                       "with both cells and plan again")  # fmt: skip
            rows.append(row | {"n_estimate": 0, "verdict": verdict})
            continue
        both = outcomes[[a, b]].dropna().astype(bool)
        x, y = both[a].to_numpy(), both[b].to_numpy()
        n_est, a_only, b_only = len(both), int((x & ~y).sum()), int((~x & y).sum())
        discordance = (a_only + b_only) / n_est if n_est else 0.0
        observed = (a_only - b_only) / n_est if n_est else 0.0
        diff = observed if delta is None else math.copysign(delta, observed or 1.0)
        row |= {"n_estimate": n_est, "a_only": a_only, "b_only": b_only, "discordance": discordance,
                "observed_diff": observed, "planned_diff": diff}  # fmt: skip
        if discordance == 0:
            rows.append(row | {"verdict": f"no question of the estimate tells the two apart (no discordant pair): run "
                               f"a larger pilot ({PILOT} questions) with both cells and plan again"})  # fmt: skip
            continue
        if discordance < abs(diff):
            rows.append(row | {"verdict": f"the discordance {discordance:.3f} is below the difference {diff:+.3f}: "
                               "no paired design has it; give a smaller --delta or estimate again"})  # fmt: skip
            continue
        p10, p01 = (discordance + diff) / 2, (discordance - diff) / 2
        needed = n_needed(p10, p01, level, goal, ceiling)
        at_ceiling = power(ceiling, p10, p01, level)
        row |= {"p10": p10, "p01": p01, "n_needed": needed, "power_at_ceiling": at_ceiling}
        if needed is not None:
            row["verdict"] = f"{plural(needed, 'question')} for {goal:.0%} power"
        else:
            beyond = n_needed(p10, p01, level, goal, BEYOND, settle=False) if p10 != p01 else None
            row["n_beyond_split"] = beyond
            row["verdict"] = f"cannot be decided on {within}: {ceiling} questions give {at_ceiling:.0%} power; " + (
                f"these rates would need about {beyond:,}" if beyond else f"these rates would need more than {BEYOND:,}"
            )
        rows.append(row)
    return pd.DataFrame(rows)


class PlanConfig(OlaGPTConfig):
    """``olakit plan``: the comparisons a run is for, the power wanted, and the run itself (its dataset, split,
    templates and strategies: what the questions cost; ``n_questions`` is not used, the plan finds it)."""

    comparisons: list[str] = []
    """The comparisons, each ``METHOD:STRATEGY vs METHOD:STRATEGY`` (e.g. ``DST:retrieval vs turbo:zero-shot``,
    ``regex_vote:combine vs ST:combine``); Holm corrects over all of them. With ``after``: comparisons examined
    after that run, beyond its registered ones (exploratory)."""
    after: str | None = None
    """A registered run's folder: its registered comparisons decided or not, and the ones given here, which it did
    not register, as exploratory (each listed in its run log as a change after registration)."""
    estimates: str = "recorded"
    """Where the discordance rates come from: ``recorded`` (the OlaGPT authors' gpt-3.5 outputs on AQuA), or an
    earlier run (a run folder or a records file)."""
    delta: Annotated[float, Field(gt=0, lt=1)] | None = None
    """The accuracy difference to detect (default: the one the estimates show)."""
    power: Annotated[float, Field(gt=0, lt=1)] = 0.8
    """The power wanted for each comparison."""
    alpha: Annotated[float, Field(gt=0, lt=1)] = 0.05
    """The family-wise level: Holm over the comparisons (each planned at alpha / their number)."""

    @model_validator(mode="after")
    def _something_to_plan(self):
        if not self.comparisons and self.after is None:
            raise ValueError("comparisons: give at least one (METHOD:STRATEGY vs METHOD:STRATEGY), or after: a run")
        return self


def estimate_outcomes(
    estimates: str, data_dir: str | None, analysis: Analysis = ANALYSIS
) -> tuple[pd.DataFrame, str, pd.DataFrame, object]:
    """(question x cell correctness to estimate discordance from, where it comes from, the records, the run log or
    None): ``recorded`` (the OlaGPT authors' outputs) or an earlier run's folder or records file (an OlaGPT or a
    GEEK run)."""
    if estimates == "recorded":
        records, source, log = import_olagpt(data_dir), "the OlaGPT authors' recorded gpt-3.5 outputs (AQuA test)", None
    else:
        path = Path(estimates)
        records, log = load_run(path / "records.parquet" if path.is_dir() else path)
        source = str(path)
    return outcomes_of(records, analysis), source, records, log


def plan(cfg: PlanConfig, endpoint: Endpoint) -> pd.DataFrame:
    """plan_table for ``cfg``'s comparisons, with the estimates it names, the split's size as the ceiling, and for
    each comparison decided within it the calls and the price of a run of that many questions:
    - OlaGPT cells: a run with the templates and strategies its two cells need, at the online and the batch rate
      (olakit.olagpt.budget: the run's own plan; the completion-token ceiling);
    - GEEK rows (estimates from a GEEK run, whose dataset's split is then the ceiling): the calls and tokens per
      question that run paid for the two rows (GEEK's calls depend on the replies), at this endpoint's price."""
    outcomes, source, records, log = estimate_outcomes(cfg.estimates, cfg.data_dir, cfg.analysis())
    geek = "row" in records.columns
    if geek:  # the split the GEEK run read
        config = log.config if log is not None else {}
        questions = load_questions(config.get("dataset", "strategyqa"), config.get("split"), cfg.data_dir)
        ceiling = len(questions)
    else:
        ceiling = len(questions_of(cfg)) - cfg.offset
    try:
        table = plan_table(cfg.comparisons, outcomes, source=source, ceiling=ceiling, alpha=cfg.alpha,
                           goal=cfg.power, delta=cfg.delta)  # fmt: skip
    except ValueError as exc:
        raise ConfigError(f"PlanConfig: comparisons: {exc}") from None
    for i, row in table.iterrows():
        n = row.get("n_needed")
        if n is None or pd.isna(n):
            continue
        priced = _geek_price(records, row, int(n), endpoint) if geek else _olagpt_price(cfg, row, int(n), endpoint)
        if isinstance(priced, str):
            table.loc[i, "verdict"] = f"{row['verdict']} ({priced})"
            continue
        for k, v in priced.items():
            table.loc[i, k] = v
    return table


def _olagpt_price(cfg: PlanConfig, row, n: int, endpoint: Endpoint) -> dict | str:
    """The calls and price of an OlaGPT run of ``n`` questions with the two cells' templates and strategies; why
    not, for cells of another kind of run (an imported one)."""
    every = [t.name for t in templates_for(cfg.dataset, cfg.templates)]
    methods = {row["a"].split(" | ")[0], row["b"].split(" | ")[0]}
    templates = every if REGEX_VOTE in methods else [t for t in every if t in methods]
    strategies = tuple(dict.fromkeys(c.split(" | ")[-1] for c in (row["a"], row["b"])))
    try:
        if not templates:
            raise ConfigError(f"{' and '.join(sorted(methods))}: no template of {cfg.dataset}")
        run = cfg.replace(n_questions=n, templates=tuple(templates), strategies=strategies)
    except ConfigError as exc:
        return f"not priced as an OlaGPT run: {exc}"
    stages = planned_calls(OlaGPTConfig(**{k: getattr(run, k) for k in OlaGPTConfig.model_fields}))
    out: dict = {"calls": sum(s.calls for s in stages), "price_basis": "completion ceiling; prompts extra"}
    price = ceiling_price(stages, endpoint)
    if price is not None:
        out["usd_online"], out["usd_batch"] = price
    return out


def _geek_price(records: pd.DataFrame, row, n: int, endpoint: Endpoint) -> dict | str:
    """The calls and price of a GEEK run of ``n`` questions with the two rows, at the calls and tokens per question
    the estimate run paid for them."""
    per = cost_per_row(records[records["row"].isin([row["a"], row["b"]])]).set_index("method")
    tokens = records[records["row"].isin([row["a"], row["b"]])].groupby("row")[["prompt_tokens", "completion_tokens"]]
    means = tokens.mean()
    if means.isna().any().any():
        return "not priced: the estimate run's records lack token counts"
    out: dict = {"calls": round(n * per["calls_per_question"].sum()), "price_basis": "tokens as the estimate run paid"}
    price = endpoint.price()
    if price is not None:
        online = n * (means["prompt_tokens"].sum() * price[0] + means["completion_tokens"].sum() * price[1]) / 1e6
        out["usd_online"], out["usd_batch"] = online, online * BATCH_RATE
    return out


def plan_report(table: pd.DataFrame, cfg: PlanConfig, endpoint: Endpoint) -> str:
    """The plan as the terminal shows it: one block per comparison (the estimate and its source, the rates, the
    verdict, the calls and price of that many questions), then the family."""
    m = len(table)
    lines = [
        f"plan: {plural(m, 'comparison')}, Holm at {cfg.alpha:g} family-wise (each planned at {cfg.alpha / m:.4g}),"
        f" {cfg.power:.0%} power, exact McNemar; estimates from {table['source'].iloc[0]}"
    ]
    for _, r in table.iterrows():
        lines.append(f"  {r['comparison']}{_took(r['comparison'], r['a'], r['b'])}")
        if r.get("n_estimate", 0):
            lines.append(
                f"    estimate: {int(r['a_only'])} a-only and {int(r['b_only'])} b-only of {int(r['n_estimate'])}"
                " questions "
                f"(discordance {r['discordance']:.3f}, difference {r['observed_diff']:+.3f})"
                + (f"; planned for a difference of {r['planned_diff']:+.3f}" if cfg.delta is not None else "")
            )
        lines.append(f"    {r['verdict']}")
        if "calls" in r and not pd.isna(r.get("calls")):
            cost = (
                f": ${r['usd_online']:,.2f} online, ${r['usd_batch']:,.2f} batched ({r['price_basis']})"
                if "usd_online" in r and not pd.isna(r.get("usd_online"))
                else f" ({endpoint.model} has no known price)"
            )
            lines.append(f"    a run of {int(r['n_needed'])} questions with these two cells: "
                         f"{int(r['calls']):,} calls" + cost)  # fmt: skip
    return "\n".join(lines)


def registered_tables(
    records: pd.DataFrame, templates: Sequence[str], registration: Registration, analysis: Analysis = ANALYSIS
) -> dict[str, pd.DataFrame]:
    """After a registered OlaGPT run: its ``paired_tests`` (inference.paired_tests over its cells) with roles, and
    the ``registered`` table (mark_roles)."""
    tests = paired_tests(cell_outcomes(records, templates, analysis), analysis=analysis)
    return mark_roles(tests, registration)


def mark_roles(tests: pd.DataFrame, registration: Registration) -> dict[str, pd.DataFrame]:
    """Any run's paired tests (OlaGPT cells, GEEK rows, compared conditions: columns a, b, n, a_only, b_only, diff
    with its CI, p_mcnemar) marked by the registration: ``paired_tests`` with its ``role`` (confirmatory for the
    registered comparisons, exploratory for the rest) and ``p_holm_family`` (Holm over the registered family alone),
    and ``registered``: one row per registered comparison, decided or not at the registration's alpha, the
    difference with its CI, the corrected p, and for an undecided one the questions the observed rates would need at
    the registered power; a comparison whose cells the run lacks is "not run", its p taken as 1 in the
    correction."""
    tests = tests.copy()
    family = [(text, *_sides(text, tests)) for text in registration.comparisons]
    found = [_pair(tests, a, b) for _, a, b in family]
    corrected = holm([f["p_mcnemar"] if f else 1.0 for f in found])
    tests["role"] = "exploratory"
    tests["p_holm_family"] = np.nan
    rows, m = [], len(family)
    for (text, a, b), f, p_holm in zip(family, found, corrected):
        row = {"comparison": text, "a": a, "b": b, "role": "confirmatory"}
        if f is None:
            rows.append(row | {"decided": False, "verdict": "not run: the run lacks a cell of it"})
            continue
        i = f.pop("index")
        tests.loc[i, ["role", "p_holm_family"]] = ["confirmatory", p_holm]
        decided = bool(p_holm < registration.alpha)
        row |= f | {"p_holm_family": p_holm, "decided": decided}
        if decided:
            row["verdict"] = f"decided: {'a' if f['a_only'] > f['b_only'] else 'b'} is better (Holm p = {p_holm:.3g})"
        else:
            p10, p01 = f["a_only"] / f["n"], f["b_only"] / f["n"]
            level = registration.alpha / m
            need = n_needed(p10, p01, level, registration.power, BEYOND, settle=False) if p10 != p01 else None
            row["n_needed"] = need
            row["verdict"] = f"undecided (Holm p = {p_holm:.3g}); the observed rates would need " + (
                f"about {need:,} questions" if need else f"more than {BEYOND:,} questions"
            )
        row["verdict"] += _took(text, a, b)
        rows.append(row)
    return {"paired_tests": tests, "registered": pd.DataFrame(rows)}


def _sides(text: str, tests: pd.DataFrame) -> tuple[str, str]:
    """A registered comparison's two cells as ``tests`` names them (comparison_cells, ``best`` by the accuracies
    the tests report)."""
    if tests.empty:
        return parse_comparison(text)
    accuracy = dict(zip(tests["b"], tests["acc_b"])) | dict(zip(tests["a"], tests["acc_a"]))
    return comparison_cells(text, accuracy.keys(), accuracy)


def _took(text: str, a: str, b: str) -> str:
    """What a comparison naming ``best`` took, for its verdict ("" otherwise)."""
    took = [
        c
        for side, c in zip(_halves(text), (a, b))
        if side.partition(":")[0].strip() == BEST and c.split(" | ")[0] != BEST
    ]
    return f" (best: {', '.join(took)}, chosen on these data: its p is optimistic)" if took else ""


BEST = "best"
"""A comparison's cell ``best:STRATEGY`` (or ``best``, for GEEK rows): the template (row) with the highest accuracy
under that strategy where the comparison is judged (ties: the first in the table's order). A choice made on the
data it is tested on: its p is optimistic, and the verdict names the cell it took."""


def comparison_cells(text: str, cells, accuracy: dict | None = None) -> tuple[str, str]:
    """A comparison's two cells as a run names them, each side: as written when a cell has that name (a compared
    condition may hold a colon), else as parse_comparison reads it, else the one cell whose method it names (a
    compared condition, whose strategy is ``compared``, in an OlaGPT-shaped table); ``best`` (BEST) is resolved
    with ``accuracy`` (cell -> accuracy)."""
    cells = list(dict.fromkeys(cells))
    raw = _halves(text)
    out = []
    for side, parsed in zip(raw, parse_comparison(text)):
        method, _, strategy = parsed.partition(" | ")
        if method == BEST and accuracy is not None and side not in cells:
            pool = [c for c in cells if str(c).partition(" | ")[2] == strategy and _is_template(str(c))]
            out.append(max(pool, key=lambda c: accuracy.get(c, -1.0)) if pool else parsed)
            continue
        named = [c for c in cells if str(c).split(" | ")[0] == side]
        out.append(side if side in cells else parsed if parsed in cells or len(named) != 1 else named[0])
    return tuple(out)  # type: ignore[return-value]


def _is_template(cell: str) -> bool:
    """Whether a cell is one template (GEEK row, compared condition) rather than a vote or a baseline."""
    method = cell.partition(" | ")[0]
    return method != REGEX_VOTE and method not in NON_TEMPLATES and not method.endswith(VERIFIED_SUFFIX)


def _pair(tests: pd.DataFrame, a: str, b: str) -> dict | None:
    """The paired test of cells a and b (either way round in ``tests``) as a against b: its row index, n, a-only and
    b-only counts, difference a - b with its CI, exact p; None when the run lacks the pair."""
    if tests.empty:
        return None
    hit = tests.index[((tests["a"] == a) & (tests["b"] == b)) | ((tests["a"] == b) & (tests["b"] == a))]
    if not len(hit):
        return None
    t = tests.loc[hit[0]]
    flip, sign = t["a"] != a, (-1 if t["a"] != a else 1)
    lo, hi = sorted((sign * t["diff_ci_low"], sign * t["diff_ci_high"]))
    return {"index": hit[0], "n": int(t["n"]), "a_only": int(t["b_only" if flip else "a_only"]),
            "b_only": int(t["a_only" if flip else "b_only"]), "diff": sign * t["diff"], "diff_ci_low": lo,
            "diff_ci_high": hi, "p_mcnemar": t["p_mcnemar"]}  # fmt: skip


def after_run(folder: str | Path, comparisons: Sequence[str], analysis: Analysis = ANALYSIS) -> pd.DataFrame:
    """A registered run's comparisons after it: the registered ones (registered_tables' ``registered``), then each
    of ``comparisons`` it did not register, exploratory, judged by Holm over every pair; those are added to the
    run's log (``extra.registration.changes``) as changes after registration."""
    folder = Path(folder)
    registration = registration_of(folder)
    if registration is None:
        raise DataError(f"{folder}: no registration.json; the run was not registered (olakit run --registration)")
    records, log = load_run(folder / "records.parquet")
    tables = registered_tables(records, voting_templates(records["template"]), registration, analysis)
    tests, rows = tables["paired_tests"], []
    added = [c for c in dict.fromkeys(comparisons) if c not in registration.comparisons]
    for text in added:
        a, b = _sides(text, tests)
        row = {"comparison": text, "a": a, "b": b, "role": "exploratory", "decided": False}
        f = _pair(tests, a, b)
        if f is None:
            rows.append(row | {"verdict": "not run: the run lacks a cell of it"})
            continue
        i = f.pop("index")
        p_all = tests.loc[i, "p_mcnemar_holm"]
        verdict = f"exploratory (not registered): Holm p over every pair = {p_all:.3g}"
        rows.append(row | f | {"p_mcnemar_holm": p_all, "verdict": verdict})
    if added and log is not None:
        entry = log.extra.get("registration", {})
        now = _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")
        changes = [*entry.get("changes", []), *(f"{now}: {c} examined after the run (exploratory)" for c in added)]
        write_log(folder, log.replace(extra={**log.extra, "registration": {**entry, "changes": changes}}))
    return pd.concat([tables["registered"], pd.DataFrame(rows)], ignore_index=True)


def registered_plan(registration: Registration, n: int, data_dir: str | None, analysis: Analysis = ANALYSIS) -> str:
    """What a registered run's printed plan says of its family before the first call: each comparison's power at
    the run's ``n`` questions (plan_table, the estimates the registration names)."""
    try:
        outcomes, source, _, _ = estimate_outcomes(registration.estimates, data_dir, analysis)
    except (DataError, OSError) as exc:
        return f"  registered comparisons: no estimate of their discordance ({exc})"
    table = plan_table(registration.comparisons, outcomes, source=source, ceiling=n, alpha=registration.alpha,
                       goal=registration.power, within="this run")  # fmt: skip
    lines = [f"  registered comparisons (Holm at {registration.alpha:g}; estimates from {source}):"]
    lines += [f"    {r['comparison']}: {r['verdict']}" for _, r in table.iterrows()]
    return "\n".join(lines)
