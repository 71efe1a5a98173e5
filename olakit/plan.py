"""``olakit plan``: before a run, the questions each comparison needs for a given power with the exact McNemar test
(olakit.analysis.exact), estimated from the OlaGPT authors' recorded outputs or an earlier run, with the ceiling the
dataset's size, and the calls and price of a run of that many questions (the run's own plan, its method's
``calls``: olakit.olagpt.budget for OlaGPT; priced here, as ``olakit run`` prints it: ``describe``);
after a registered run (``--after``), its comparisons decided or not (olakit.analysis.verdicts) and the ones
examined later, each appended to the run's ``changes.jsonl`` as a change after registration (its run.json is never
rewritten).

``PlanConfig`` takes the run it plans as a part (``run``: an OlaGPTConfig, whose flags ``olakit plan`` takes too), and
the level from it: the run's analysis setting ``alpha``.
"""

from __future__ import annotations

import datetime as _dt
import json
import math
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from olakit.analysis.exact import BEYOND, n_needed, power
from olakit.analysis.traces import cost_per_row
from olakit.analysis.variance import cheapest, grid_of, variance_table
from olakit.analysis.verdicts import _took, comparison_cells, examined, exploratory, outcomes_of
from olakit.config import ConfigError
from olakit.data.loaders import load_questions, questions_of
from olakit.data.recorded import import_olagpt
from olakit.errors import DataError
from olakit.llm.batch import BATCH_RATE
from olakit.llm.endpoint import PRICE_DATES, PRICES, Endpoint
from olakit.method import Stage
from olakit.methods import BUILTIN
from olakit.names import REGEX_VOTE, plural
from olakit.plan_config import RECORDED, OlaGPTConfig, PlanConfig
from olakit.registration import CHANGES, Registered, registration_of
from olakit.runlog import load_run, read_log
from olakit.settings import ANALYSIS, Analysis
from olakit.templates import templates_for

PILOT = 50
"""Questions of the pilot the planner proposes when no earlier run has both cells of a comparison: enough to see
the discordance rate within about +-0.14 (95%, at its worst, 0.5)."""
RECORDED_DATASET = "aqua"
"""The dataset of the recorded estimates (the OlaGPT authors' gpt-3.5 outputs on AQuA test)."""
OLAGPT = BUILTIN["olagpt"]
"""The method a plan prices, as the table of methods has it (its config type and its calls); the plan's settings
(PlanConfig) live in olakit.plan_config, so that ``olakit plan --bad`` imports nothing heavy."""


def call_tokens(limit: int, effort: str | None, effort_tokens: dict[str, int]) -> int:
    """The tokens a call with token limit ``limit`` is priced at for a reasoning model at ``effort``: the smaller of
    the limit (which bounds thinking and answer together: ``max_completion_tokens``) and the effort's planned tokens
    (``effort_tokens``, an estimate); the limit for an effort without planned tokens (``none``, the model's default).

    >>> call_tokens(4096, "low", {"low": 1024}), call_tokens(512, "high", {"high": 16384}), call_tokens(256, None, {})
    (1024, 512, 256)
    """
    return min(limit, effort_tokens[effort]) if effort in effort_tokens else limit


def at_effort(stages: list[Stage], effort: str | None, effort_tokens: dict[str, int]) -> list[Stage]:
    """The stages as a reasoning model at ``effort`` is planned to take them: each call at its ``call_tokens``.

    >>> at_effort([Stage("answers", 10, 4096, True)], "low", {"low": 1024})
    [Stage(name='answers', calls=10, max_tokens=1024, exact=True)]
    """
    return [Stage(s.name, s.calls, call_tokens(s.max_tokens, effort, effort_tokens), s.exact) for s in stages]


def completion_ceiling(stages: list[Stage]) -> int:
    """The most completion tokens the stages can take."""
    return sum(s.calls * s.max_tokens for s in stages)


def ceiling_price(stages: list[Stage], endpoint: Endpoint) -> tuple[float, float] | None:
    """(online, batch) USD: the completion-token ceiling at the model's completion price, online and at the Batch
    API's rate; None for a model without a known price (the embedded one included). Prompts are extra."""
    if endpoint.model not in PRICES or endpoint.local:
        return None
    online = completion_ceiling(stages) * PRICES[endpoint.model][1] / 1e6
    return online, online * BATCH_RATE


def describe(stages: list[Stage], endpoint: Endpoint, batch: bool = False) -> str:
    """The plan as ``olakit run`` prints it: one line per stage, the total, the completion-token ceiling and, for a
    model with a known price, the ceiling of what those completions cost at the online rate and at the Batch API's
    (``batch``: each stage is one batch round, olakit.llm.batch)."""
    width = max([24, *(len(s.name) for s in stages)])
    lines = [
        f"  {s.name:{width}} {'' if s.exact else 'up to '}{plural(s.calls, 'call')}, at most {s.max_tokens} tokens each"
        + (f"; batch round {i}" if batch else "")
        for i, s in enumerate(stages, 1)
    ]
    calls = sum(s.calls for s in stages)
    ceiling = completion_ceiling(stages)
    exact = all(s.exact for s in stages)
    how = f", in {plural(len(stages), 'batch round')}" if batch else ""
    head = f"planned: {'' if exact else 'up to '}{plural(calls, 'call')} to {endpoint.model}{how}"
    tail = f"  completion tokens: at most {ceiling:,}"
    price = ceiling_price(stages, endpoint)
    if price is not None:
        online, batched = price
        tail += f" (at most ${online:,.2f} at its online completion price of {PRICE_DATES.get(endpoint.model)}"
        tail += f", ${batched:,.2f} at the batch rate"
        tail += "; prompts extra)" if batch else " if batched; prompts extra)"
    tail += "; answers already in the cache are not paid again"
    return "\n".join([head, *lines, tail])


def estimate_outcomes(
    estimates: str, data_dir: str | None, analysis: Analysis = ANALYSIS
) -> tuple[pd.DataFrame, str, pd.DataFrame, object]:
    """(question x cell correctness to estimate discordance from, where it comes from, the records, the run log or
    None): ``recorded`` (the OlaGPT authors' outputs) or an earlier run's folder or records file (an OlaGPT or a
    GEEK run, a comparison)."""
    if estimates == RECORDED:
        records, source, log = import_olagpt(data_dir), "the OlaGPT authors' recorded gpt-3.5 outputs (AQuA test)", None
    else:
        path = Path(estimates)
        records, log = load_run(path / "records.parquet" if path.is_dir() else path)
        source = str(path)
    return outcomes_of(records, analysis), source, records, log


def plan_table(
    comparisons: Sequence[str],
    outcomes: pd.DataFrame | None,
    *,
    source: str,
    ceiling: int,
    analysis: Analysis = ANALYSIS,
    goal: float = 0.8,
    delta: float | None = None,
    within: str = "this split",
) -> pd.DataFrame:
    """One row per comparison: the estimate (its source, the questions it saw, a-only and b-only counts), the
    rates planned for, the per-comparison level (the analysis settings' alpha / m: Holm's strictest step), the
    questions needed for
    ``goal`` power (None: cannot be decided within ``ceiling``, the split's size), the power at the ceiling, and
    what to do. ``delta``: the accuracy difference to detect (default: the one observed), kept with the observed
    discordance rate."""
    accuracy = outcomes.mean().to_dict() if outcomes is not None else None
    cells = list(outcomes.columns) if outcomes is not None else []
    pairs = [comparison_cells(c, cells, accuracy) for c in comparisons]
    level = analysis.alpha / max(1, len(pairs))
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


def _dataset_of(estimates: str, log) -> str | None:
    """The dataset the estimates were made on: AQuA for the recorded outputs, a run's own (its log), None unknown."""
    if estimates == RECORDED:
        return RECORDED_DATASET
    return log.dataset.dataset if log is not None and log.dataset is not None else None


def plan(cfg: PlanConfig, endpoint: Endpoint) -> tuple[pd.DataFrame, list[str]]:
    """(plan_table for ``cfg``'s comparisons, warnings): the estimates it names, the planned run's dataset's size as
    the ceiling (the estimates run's dataset where none was given), and for each comparison decided within it the
    calls and the price of a run of that many questions:
    - OlaGPT cells: a run with the templates and strategies its two cells need, at the online and the batch rate
      (olakit.olagpt.budget: the run's own plan; the completion-token ceiling, ``ceiling_price``);
    - GEEK rows (estimates from a GEEK run): the calls and tokens per question that run paid for the two rows
      (GEEK's calls depend on the replies), at this endpoint's price.
    A rate borrowed from another dataset than the planned one is a warning."""
    run = cfg.run
    outcomes, source, records, log = estimate_outcomes(cfg.estimates, run.data_dir, run.analysis())
    estimated_on = _dataset_of(cfg.estimates, log)
    given = "dataset" in run.model_fields_set
    if not given and estimated_on is not None and estimated_on != run.dataset:  # the run given: its dataset
        ref = log.dataset
        run = run.replace(dataset=ref.dataset, split=ref.split, dataset_map=ref.map)
    notes = []
    if estimated_on is None:
        notes.append(f"{source} says not which dataset it answered: its rates may not be {run.dataset}'s")
    elif estimated_on != run.dataset:
        notes.append(f"the rates are borrowed from {estimated_on} ({source}), not {run.dataset}: run a pilot of "
                     f"{PILOT} questions on {run.dataset} and plan again from it")  # fmt: skip
    geek = "row" in records.columns
    notes += [] if geek else effort_notes(run, cfg.effort_tokens)
    if geek:
        ref = log.dataset if log is not None and log.dataset is not None else None
        questions = load_questions(ref.dataset, ref.split, run.data_dir, ref.map) if ref else \
            load_questions("strategyqa", None, run.data_dir)  # fmt: skip
        ceiling = len(questions) - run.offset
    else:
        ceiling = len(questions_of(run)) - run.offset
    try:
        table = plan_table(cfg.comparisons, outcomes, source=source, ceiling=ceiling, analysis=run.analysis(),
                           goal=cfg.power, delta=cfg.delta, within=f"{run.dataset}'s {ceiling} questions")  # fmt: skip
    except ValueError as exc:
        raise ConfigError(f"PlanConfig: comparisons: {exc}") from None
    for i, row in table.iterrows():
        n = row.get("n_needed")
        if n is None or pd.isna(n):
            continue
        priced = (_geek_price(records, row, int(n), endpoint) if geek
                  else _olagpt_price(run, row, int(n), endpoint, cfg.effort_tokens))  # fmt: skip
        if isinstance(priced, str):
            table.loc[i, "verdict"] = f"{row['verdict']} ({priced})"
            continue
        for k, v in priced.items():
            table.loc[i, k] = v
    return table, notes


def _olagpt_price(run: OlaGPTConfig, row, n: int, endpoint: Endpoint, effort_tokens: dict[str, int]) -> dict | str:
    """The calls and price of an OlaGPT run of ``n`` questions with the two cells' templates and strategies (at each
    of the run's efforts, ``at_effort``: one run per effort, the price their sum); why not, for cells of another kind
    of run (an imported one)."""
    every = [t.name for t in templates_for(run.dataset, run.templates)]
    methods = {row["a"].split(" | ")[0], row["b"].split(" | ")[0]}
    templates = every if REGEX_VOTE in methods else [t for t in every if t in methods]
    strategies = tuple(dict.fromkeys(c.split(" | ")[-1] for c in (row["a"], row["b"])))
    try:
        if not templates:
            raise ConfigError(f"{' and '.join(sorted(methods))}: no template of {run.dataset}")
        sized = run.replace(n_questions=n, templates=tuple(templates), strategies=strategies)
    except ConfigError as exc:
        return f"not priced as an OlaGPT run: {exc}"
    stages = OLAGPT.calls(sized)
    efforts = run.reasoning_effort or (None,)
    basis = "tokens a call per effort, an estimate (effort_tokens)" if run.reasoning_effort else "completion ceiling"
    out: dict = {"calls": len(efforts) * sum(s.calls for s in stages), "price_basis": f"{basis}; prompts extra"}
    prices = {e: ceiling_price(at_effort(stages, e, effort_tokens), endpoint) for e in efforts}
    if all(p is not None for p in prices.values()):
        out["usd_online"] = sum(p[0] for p in prices.values())
        out["usd_batch"] = sum(p[1] for p in prices.values())
        if run.reasoning_effort:
            out |= {f"usd_online[{e}]": p[0] for e, p in prices.items()}
    return out


def effort_notes(run: OlaGPTConfig, effort_tokens: dict[str, int]) -> list[str]:
    """A run's efforts whose planned tokens a call pass its ``max_tokens``: their replies may be cut off while
    thinking."""
    limit = run.for_stage("template").max_tokens  # an answer's
    cut = [e for e in run.reasoning_effort if effort_tokens.get(e, 0) > limit]
    if not cut:
        return []
    planned = ", ".join(f"{e} {effort_tokens[e]:,}" for e in cut)
    return [f"effort {planned} tokens a call (effort_tokens, an estimate of thinking and answer) is more than "
            f"max_tokens {limit:,}, which bounds both: replies may be cut off while thinking (unfinished); "
            "give --max-tokens at least that"]  # fmt: skip


def _effort_prices(r, efforts: Sequence[str], max_tokens: int, effort_tokens: dict[str, int]) -> str:
    """A plan row's price per effort as the terminal shows it, each effort with its planned tokens a call."""
    each = [f"{e} ${r[f'usd_online[{e}]']:,.2f} ({call_tokens(max_tokens, e, effort_tokens):,} tokens a call)"
            for e in efforts]  # fmt: skip
    return "      online at each effort: " + ", ".join(each)


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


def design_plan(cfg: PlanConfig, endpoint: Endpoint) -> tuple[pd.DataFrame, str]:
    """The decision study's plan (``target_se``): the estimates' grid as a crossed design (olakit.analysis.variance),
    the cheapest number of questions and repeats whose standard error of ``cfg.target`` is at most ``target_se``,
    and its calls per cell, priced per call at the completion ceiling of one answer of the planned run (its
    ``max_tokens`` at the model's completion price; prompts extra) where the model has a price. (a one-row table,
    the lines the terminal shows)."""
    run = cfg.run
    _, source, records, _ = estimate_outcomes(cfg.estimates, run.data_dir, run.analysis())
    try:
        grid = grid_of(records)
    except DataError as exc:
        raise DataError(f"{source}: no grid to plan from: {exc}") from None
    table = variance_table(grid, run.stats())
    whats = ["cell", *(f"{kind}{f}" for f in grid.facets for kind in ("difference:", "mean over "))]
    if cfg.target not in whats:
        raise ConfigError(f"PlanConfig: target={cfg.target!r}: the estimates' grid has {', '.join(whats)}")
    price = endpoint.price()
    efforts = run.reasoning_effort or (None,)
    limit = run.for_stage("template").max_tokens  # an answer's
    tokens = {e: call_tokens(limit, e, cfg.effort_tokens) for e in efforts}
    per_call = {e: t * price[1] / 1e6 for e, t in tokens.items()} if price is not None and not endpoint.local else None
    best = cheapest(table, cfg.target_se, cfg.target, price_per_call=per_call[efforts[0]] if per_call else None)
    if per_call and run.reasoning_effort:  # a cell is one effort's: its price at each
        best |= {f"price[{e}]": best["calls"] * per_call[e] for e in efforts}
    out = pd.DataFrame([{**best, "source": source, "facets": ", ".join(grid.facets),
                         "questions_in_estimates": table.attrs["questions"]}])  # fmt: skip
    lines = [f"plan from the variance of {source} ({table.attrs['questions']} questions; facets "
             f"{', '.join(grid.facets)}): standard error of {cfg.target} at most {cfg.target_se:g}"]  # fmt: skip
    if not best["reachable"]:
        lines.append("  not reachable with up to 100,000 questions and 10 repeats")
        return out, "\n".join(lines)
    levels = f" x {best['levels']} levels" if "levels" in best else ""
    lines.append(f"  {best['questions']:,} questions x {best['repeats']} repeat(s){levels}: {best['calls']:,} calls "
                 f"per cell, standard error {best['se']:.4f}")  # fmt: skip
    if "price" in best and run.reasoning_effort:
        each = ", ".join(f"{e} ${best[f'price[{e}]']:,.2f} ({tokens[e]:,} tokens a call)" for e in efforts)
        lines.append(f"  per cell at {endpoint.model}'s completion price of {PRICE_DATES.get(endpoint.model)}, at each "
                     f"effort: {each} (an estimate: effort_tokens; prompts extra)")  # fmt: skip
    elif "price" in best:
        lines.append(
            f"  ${best['price']:,.2f} per cell at {endpoint.model}'s completion price of "
            f"{PRICE_DATES.get(endpoint.model)} (ceiling: {limit} tokens a call; prompts extra)"
        )
    else:
        unpriced = "the embedded model: no price" if endpoint.local else f"{endpoint.model} has no known price"
        lines.append(f"  ({unpriced})")
    lines.append("  the components are estimates from that grid: the design holds for a model and questions like its")
    return out, "\n".join(lines)


def plan_report(table: pd.DataFrame, cfg: PlanConfig, endpoint: Endpoint, notes: Sequence[str] = ()) -> str:
    """The plan as the terminal shows it: one block per comparison (the estimate and its source, the rates, the
    verdict, the calls and price of that many questions), then the family."""
    m, alpha = len(table), cfg.run.alpha
    lines = [
        f"plan: {plural(m, 'comparison')}, Holm at {alpha:g} family-wise (each planned at {alpha / m:.4g}),"
        f" {cfg.power:.0%} power, exact McNemar; estimates from {table['source'].iloc[0]}",
        *(f"  warning: {n}" for n in notes),
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
            efforts = cfg.run.reasoning_effort
            if efforts and not pd.isna(r.get(f"usd_online[{efforts[0]}]", float("nan"))):
                lines.append(_effort_prices(r, efforts, cfg.run.for_stage("template").max_tokens, cfg.effort_tokens))
    return "\n".join(lines)


def after_run(folder: str | Path, comparisons: Sequence[str], analysis: Analysis | None = None) -> pd.DataFrame:
    """A registered run's comparisons after it (olakit.analysis.verdicts.examined, under the run's own analysis
    settings unless given), any change to its registration file since (computed now), and each comparison examined
    here that it did not register appended to its ``changes.jsonl`` (the run's own log stays as it was written).
    A run made without a registration: ``comparisons`` (none: every pair), exploratory (verdicts.exploratory), with
    the questions an undecided one would need: an exploratory plan, marked so."""
    folder = Path(folder)
    log = read_log(folder)
    if log is None:
        raise DataError(f"{folder}: no run log there (run.json); give a folder a run wrote")
    registered = registration_of(log)
    records, _ = load_run(folder / "records.parquet")
    analysis = analysis or Analysis(**{k: v for k, v in log.analysis.items() if k in Analysis.model_fields})
    if registered is None:  # what it can say is exploratory: a plan for a registered run, marked so
        table = exploratory(records, comparisons, analysis)
        table.attrs["note"] = (
            f"{folder}: no registration in its run log: an exploratory plan, every comparison exploratory"
        )
        return table
    table = examined(records, registered, comparisons, analysis)
    now = _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")
    table.attrs["changes"] = registered.changes() + _earlier_changes(folder)
    added = [c for c in dict.fromkeys(comparisons) if c not in registered.comparisons]
    if added:
        with open(folder / CHANGES, "a", encoding="utf-8") as fh:
            for c in added:
                fh.write(json.dumps({"at": now, "examined": c, "role": "exploratory"}) + "\n")
    return table


def _earlier_changes(folder: Path) -> list[str]:
    """The comparisons examined after a registered run before now (its changes.jsonl)."""
    path = folder / CHANGES
    if not path.is_file():
        return []
    lines = [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]
    return [f"{x['at']}: {x['examined']} examined after the run (exploratory)" for x in lines]


def registered_plan(registration: Registered, n: int, data_dir: str | None, analysis: Analysis = ANALYSIS) -> str:
    """What a registered run's printed plan says of its family before the first call: each comparison's power at
    the run's ``n`` questions (plan_table, the estimates the registration names), at the family's level."""
    analysis = registration.analysis_for(analysis)
    try:
        outcomes, source, _, _ = estimate_outcomes(registration.settings.estimates, data_dir, analysis)
    except (DataError, OSError) as exc:
        return f"  registered comparisons: no estimate of their discordance ({exc})"
    table = plan_table(registration.comparisons, outcomes, source=source, ceiling=n, analysis=analysis,
                       goal=registration.settings.power, within="this run")  # fmt: skip
    lines = [f"  registered comparisons (Holm at {analysis.alpha:g}; estimates from {source}):"]
    lines += [f"    {r['comparison']}: {r['verdict']}" for _, r in table.iterrows()]
    return "\n".join(lines)
