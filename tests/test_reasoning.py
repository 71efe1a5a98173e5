"""Reasoning models, as their servers speak (issue 50): a real openai client against the loopback server in each
protocol (OpenAI's reasoning models: 400s for max_tokens and a temperature, reasoning tokens reported, no thinking
shown; vLLM's ``reasoning`` and the older ``reasoning_content``; ``<think>`` blocks in the content, closed or cut off).
The scripted model thinks of the wrong option E in its thinking and answers B: no answer, vote or review may read the
thinking. Expected values are worked from the scripted replies."""

import json

import pandas as pd
import pytest

from olakit.llm import LLM, Endpoint, ScriptedModel
from olakit.llm.loopback import PROTOCOLS, Loopback
from olakit.olagpt.config import OlaGPTConfig
from olakit.olagpt.run import run
from olakit.thinking import split_thinking

THINKING = 'Maybe {"Answer": "E"}? So the answer is E... no, E is wrong.'
ANSWER = 'Step by step. {"Answer": "B"}'


def thinker(prompt, request):
    if "judge the type" in prompt or "question type" in prompt.lower():
        return {"content": '{"task_type": "math"}', "reasoning": "It is arithmetic."}
    return {"content": ANSWER, "reasoning": THINKING}


def olagpt(tmp_path, protocol, reply=thinker, **settings):
    with Loopback(reply=reply, protocol=protocol) as srv:
        with LLM(Endpoint(srv.base_url, "m"), cache_dir=tmp_path / protocol, progress=False) as llm:
            cfg = OlaGPTConfig(n_questions=3, templates=["ST", "turbo"], strategies=["zero-shot"], **settings)
            res = run(cfg, llm=llm)
        return res, srv


@pytest.mark.parametrize("protocol", [p for p in PROTOCOLS if p != "plain"])
def test_every_protocol_gives_the_records_a_plain_model_gives_and_keeps_the_thinking_apart(tmp_path, protocol):
    plain, _ = olagpt(tmp_path, "plain")
    res, srv = olagpt(tmp_path, protocol)
    cols = ["question_id", "template", "extracted", "correct", "raw_output"]
    assert res.records[cols].equals(plain.records[cols])  # 0 answers read from the thinking
    assert set(res.records["extracted"]) == {"B"} and not res.records["raw_output"].str.contains("E").any()
    answers = res.records[res.records["template"].isin(["ST", "turbo"])]
    if protocol == "openai-reasoning":  # no thinking shown; its tokens reported, and part of completion_tokens
        assert set(answers["reasoning"]) == {""} and set(answers["reasoning_tokens"]) == {len(THINKING.split())}
        assert set(answers["completion_tokens"]) == {len(THINKING.split()) + len(ANSWER.split())}  # counted in words
        # each refused parameter cost one call, once per endpoint; the run log says what was learned
        assert dict(srv.refusals) == {"max_tokens": 1, "temperature": 1}
        assert res.log.roles["answerer"].refused == {"max_tokens": "max_completion_tokens", "temperature": None}
    else:
        assert set(answers["reasoning"]) == {THINKING} and answers["reasoning_tokens"].isna().all()
        assert dict(srv.refusals) == {} and res.log.roles["answerer"].refused == {}
    usage = {r["method"]: r for _, r in __import__("olakit").report(res)["usage"].iterrows()}
    want = answers.groupby("template")["reasoning_tokens"].sum(min_count=1)
    for t in ("ST", "turbo"):
        got = usage[t]["reasoning_tokens"]
        assert (pd.isna(got) and pd.isna(want[t])) or got == want[t]  # summed exactly, or empty where unreported


def test_a_reply_cut_off_while_thinking_is_unfinished_counted_per_cell(tmp_path):
    """``<think>`` opened and never closed at finish ``length``: no answer (never one read from the thinking), the
    cause ``unfinished``, counted in the extraction and usage tables per cell."""

    def cut(prompt, request):
        if "judge the type" in prompt:
            return '{"task_type": "math"}'
        if "turbo" not in request.get("_", "") and "step by step" in prompt.lower():
            return {"content": "", "reasoning": THINKING, "finish_reason": "length"}
        return {"content": "", "reasoning": THINKING, "finish_reason": "length"}

    res, _ = olagpt(tmp_path, "think", reply=cut)
    answers = res.records[res.records["template"].isin(["ST", "turbo"])]
    assert answers["extracted"].isna().all() and set(answers["unparsed_cause"]) == {"unfinished"}
    tables = __import__("olakit").report(res)
    audit = tables["extraction"].set_index("template")
    assert audit.loc["ST", "unfinished"] == 3 and audit.loc["turbo", "unfinished"] == 3
    assert tables["usage"].set_index("method").loc["ST", "unfinished"] == 3


def test_the_effort_is_sent_in_every_call_keyed_and_none_switches_a_templates_thinking_off(tmp_path):
    seen = []

    def record(prompt, request):
        seen.append((request.get("reasoning_effort"), request.get("chat_template_kwargs")))
        return thinker(prompt, request)

    with Loopback(reply=record, protocol="reasoning") as srv:
        with LLM(Endpoint(srv.base_url, "m"), cache_dir=tmp_path / "c", progress=False) as llm:
            for effort in ("low", "none", "low"):
                cfg = OlaGPTConfig(n_questions=2, templates=["ST"], strategies=["zero-shot"], reasoning_effort=effort)
                res = run(cfg, llm=llm)
    # 2 question types + 2 answers per effort; the second "low" run is served by the cache (the effort is keyed)
    assert seen == [("low", None)] * 4 + [("none", {"enable_thinking": False})] * 4
    assert res.calls["total"]["paid"] == 0 and res.log.config["reasoning_effort"] == ["low"]


def test_an_openai_reasoning_model_refusing_the_thinking_switch_learns_it_once(tmp_path):
    """effort none sends chat_template_kwargs too, which OpenAI's API refuses: one 400, then left out."""
    res, srv = olagpt(tmp_path, "openai-reasoning", reasoning_effort="none")
    assert dict(srv.refusals) == {"max_tokens": 1, "temperature": 1, "chat_template_kwargs": 1}
    assert set(res.records["extracted"]) == {"B"}


def test_geek_the_review_loop_and_a_stepwise_method_never_read_the_thinking():
    """The in-process scripted model with ``<think>`` before every reply (the wrong answer there): each method's
    records equal those of the same replies without it."""
    from olakit.geek.config import GeekConfig
    from olakit.geek.run import run_geek
    from olakit.review.config import ReviewConfig
    from olakit.review.run import run_review
    from olakit.steps import ask, stepwise
    from tests.replies import docs

    def thinking(prompt, request):
        got = docs(prompt, request)
        return got if not isinstance(got, str) else f"<think>The answer is no. Answer: E. Score: 1</think>{got}"

    method = stepwise("direct", lambda q, cfg: (yield ask(f"{q.text} Answer with a letter.")))
    runs = {
        "geek": lambda m: run_geek(GeekConfig(n_questions=2, rows=("zero-shot", "CoT")), llm=m),
        "review": lambda m: run_review(ReviewConfig(n_questions=2, max_iterations=1), m),
        "stepwise": lambda m: method({"n_questions": 2}, m),
    }
    for name, go in runs.items():
        plain, thought = go(ScriptedModel(docs)).records, go(ScriptedModel(thinking)).records
        cols = ["question_id", "extracted", "correct", "raw_output"]
        assert plain[cols].equals(thought[cols]), name
        assert (thought["reasoning"] != "").any() and not thought["raw_output"].str.contains("<think>").any(), name


def test_split_thinking_reads_every_server_form():
    assert split_thinking("A", {"reasoning_content": "r"}).reasoning == "r"
    t = split_thinking("<think>one</think>mid<think>two</think>Answer: C")
    assert (t.text, t.reasoning, t.unfinished) == ("midAnswer: C", "one\n\ntwo", False)
    t = split_thinking("Partial<think>still going", finish_reason="length")
    assert (t.text, t.reasoning, t.unfinished) == ("Partial", "still going", True)
    t = split_thinking("thought here</think>Answer: D")  # the template opened the block in the prompt
    assert (t.text, t.reasoning) == ("Answer: D", "thought here")
    usage = {"completion_tokens_details": {"reasoning_tokens": 42}}
    assert split_thinking("B", {}, usage).reasoning_tokens == 42
    assert split_thinking("no thinking at all ") == split_thinking("no thinking at all ")
    assert split_thinking("no thinking at all ").text == "no thinking at all "  # untouched
    json.dumps(split_thinking("x").__dict__)


def test_several_efforts_are_one_grid_from_one_command(tmp_path, data_dir):
    """``olakit run --reasoning-effort low,high`` against an OpenAI-style reasoning server: at low the model's
    thinking is cut off (no answer, ``unfinished``), at high it answers A after 10 words of thinking. The grid's
    usage table gives per condition the reasoning and answer tokens, the cost per correct answer and the unfinished
    rate, worked here from the scripted replies, the data file's gold letters and gpt-4o-mini's published prices; the
    refused parameters cost one call each for the whole grid."""
    import os
    import subprocess
    import sys

    long = "a long careful line of thought about every option here"  # 10 words: the server counts words

    def reply(prompt, request):
        if "judge the type" in prompt or "question type" in prompt.lower():
            return {"content": '{"task_type": "math"}', "reasoning": "arith"}
        if request.get("reasoning_effort") == "low":
            return {"content": "", "reasoning": "short", "finish_reason": "length"}
        return {"content": 'Step by step. {"Answer": "A"}', "reasoning": long}

    n = 30
    gold = [json.loads(line)["correct"] for line in (data_dir / "aqua" / "test.json").read_text().splitlines()[:n]]
    with Loopback(reply=reply, protocol="openai-reasoning") as srv:
        env = {**os.environ, "OLAKIT_BASE_URL": srv.base_url, "OLAKIT_MODEL": "gpt-4o-mini",
               "OLAKIT_CACHE_DIR": str(tmp_path / "cache")}  # fmt: skip
        args = ["run", "-n", str(n), "--templates", "ST,turbo", "--strategies", "zero-shot", "--reasoning-effort",
                "low,high", "--out", str(tmp_path / "grid")]  # fmt: skip
        done = subprocess.run([sys.executable, "-m", "olakit.cli", *args], env=env, capture_output=True, text=True,
                              timeout=600)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert dict(srv.refusals) == {"max_tokens": 1, "temperature": 1}
    records = pd.read_parquet(tmp_path / "grid" / "records.parquet")
    usage = pd.read_csv(tmp_path / "grid" / "tables" / "usage.csv").set_index("method")
    assert set(usage.index) == {"low/ST", "low/turbo", "high/ST", "high/turbo"}
    right = sum(g == "A" for g in gold)
    for cell in ("ST", "turbo"):
        low, high = usage.loc[f"low/{cell}"], usage.loc[f"high/{cell}"]
        assert (low["correct"], low["unfinished_rate"], low["reasoning_tokens"], low["answer_tokens"]) == (0, 1, n, 0)
        assert pd.isna(low["cost_per_correct"])
        assert (high["correct"], high["unfinished_rate"], high["reasoning_tokens"]) == (right, 0, 10 * n)
        assert high["answer_tokens"] == n * len('Step by step. {"Answer": "A"}'.split())
        mine = records[records["template"] == f"high/{cell}"]
        cost = (mine["prompt_tokens"].sum() * 0.15 + mine["completion_tokens"].sum() * 0.60) / 1e6
        assert high["cost_per_correct"] == pytest.approx(cost / right)
    # the grid's family: templates within an effort, efforts within a template (not low/ST against high/turbo);
    # low against high differ on the `right` questions high gets right: exact McNemar p = 2 * 0.5**right
    import math

    tables = {t: pd.read_csv(tmp_path / "grid" / "tables" / f"{t}.csv") for t in ("effort_tests", "template_gain")}
    tests = tables["effort_tests"]
    pairs = {frozenset((a, b)) for a, b in zip(tests["a"], tests["b"])}
    assert pairs == {frozenset(p) for p in [("low/ST", "low/turbo"), ("high/ST", "high/turbo"), ("low/ST", "high/ST"),
                                            ("low/turbo", "high/turbo")]}  # fmt: skip
    p = min(1.0, 2 * sum(math.comb(right, k) for k in range(0 + 1)) / 2**right)
    ps = sorted([p, p, 1.0, 1.0])  # Holm over the family of four, by hand
    holm = [min(1.0, max(ps[j] * (4 - j) for j in range(i + 1))) for i in range(4)]
    efforts = tests[tests["family"] == "efforts within a template"]
    assert efforts["p_family_holm"].tolist() == pytest.approx([holm[1]] * 2) and holm[1] < 0.05
    # the comparison's own Holm is over all six pairs, four of them (every low against every high) at p
    assert efforts["p_mcnemar_holm"].tolist() == pytest.approx([min(1.0, 6 * p)] * 2)
    gain = tables["template_gain"].set_index("effort")
    assert list(gain["cell"]) == ["ST", "ST"] and gain["diff"].tolist() == [0, 0]  # the same answers: no gain
    run_log = json.loads((tmp_path / "grid" / "run.json").read_text())
    assert sorted(run_log["parts"]) == ["effort=high", "effort=low"]
    assert run_log["parts"]["effort=low"]["config"]["reasoning_effort"] == ["low"]


def test_the_effort_grids_tables_by_hand():
    """effort_tables on a comparison written out by hand (a hand mutation pass over olakit.analysis.effort: 17 mutants,
    of which the one end-to-end grid test, where every gain is 0, let most through): the cells in the efforts' order
    whatever the comparison's, a condition named by its effort alone a cell of its method's name, no tokens per
    correct answer where none is correct; the family of pairs that differ in one facet (not a pair that differs in
    both, not a vote's), Holm over that family of four, significance strictly below alpha; the gain as cell minus
    baseline when the baseline is the pair's first (its interval turned round), in the efforts' order."""
    from olakit.analysis.effort import effort_tables
    from olakit.config import Stats

    order = ["high/ST", "high/turbo", "medium", "low/ST", "low/turbo"]
    conditions = pd.DataFrame({"condition": order, "source": ["high", "high", "medium", "low", "low"],
                               "method": ["ST", "turbo", "turbo", "ST", "turbo"]})  # fmt: skip
    usage = pd.DataFrame({"method": [*order, "vote"], "correct": [14, 12, 10, 12, 0, 13],  # a vote: not a cell
                          "completion_tokens": [700, 300, 450, 240, 100, 0]})  # fmt: skip
    tests = pd.DataFrame(
        [  # a, b, n, acc_a, acc_b, diff, diff_ci_low, diff_ci_high, p_mcnemar
            ("high/ST", "high/turbo", 20, 0.7, 0.6, 0.1, -0.05, 0.25, 0.5),
            ("low/turbo", "low/ST", 20, 0.4, 0.6, -0.2, -0.35, -0.05, 0.0625),
            ("low/ST", "high/ST", 20, 0.6, 0.7, -0.1, -0.3, 0.1, 0.125),
            ("low/ST", "high/turbo", 20, 0.6, 0.6, 0.0, -0.2, 0.2, 0.01),  # differs in both: not the family's
            ("vote", "low/ST", 20, 0.65, 0.6, 0.05, -0.1, 0.2, 0.01),  # a vote across conditions: not a cell
            ("medium", "high/turbo", 20, 0.5, 0.6, -0.1, -0.3, 0.1, 0.25),
        ],
        columns=["a", "b", "n", "acc_a", "acc_b", "diff", "diff_ci_low", "diff_ci_high", "p_mcnemar"],
    )
    out = effort_tables({"usage": usage, "paired_tests": tests}, conditions, analysis=Stats(alpha=0.375))

    cells = out["effort_cells"]
    assert cells["condition"].tolist() == ["low/ST", "low/turbo", "medium", "high/ST", "high/turbo"]
    assert cells["effort"].tolist() == ["low", "low", "medium", "high", "high"]
    assert cells["cell"].tolist() == ["ST", "turbo", "turbo", "ST", "turbo"]
    per_correct = cells.set_index("condition")["tokens_per_correct"]
    assert per_correct.drop("low/turbo").tolist() == [20.0, 45.0, 50.0, 25.0] and pd.isna(per_correct["low/turbo"])

    grid = out["effort_tests"]
    assert list(zip(grid["a"], grid["b"])) == [(a, b) for a, b in zip(tests["a"], tests["b"])][:3] + [
        ("medium", "high/turbo")
    ]
    assert grid["family"].tolist() == ["templates within an effort"] * 2 + ["efforts within a template"] * 2
    # Holm by hand over 0.5, 0.0625, 0.125, 0.25: 0.0625 x 4 = 0.25, 0.125 x 3 = 0.375, 0.25 x 2 = 0.5, 0.5 x 1
    assert grid["p_family_holm"].tolist() == [0.5, 0.25, 0.375, 0.5]
    assert grid["significant_family"].tolist() == [False, True, False, False]  # 0.375 is alpha: not below it

    gain = out["template_gain"]
    assert gain["effort"].tolist() == ["low", "high"] and gain["cell"].tolist() == ["ST", "ST"]
    assert gain["baseline"].tolist() == ["turbo", "turbo"] and gain["n"].tolist() == [20, 20]
    assert gain["acc_cell"].tolist() == [0.6, 0.7] and gain["acc_baseline"].tolist() == [0.4, 0.6]
    assert gain["diff"].tolist() == pytest.approx([0.2, 0.1])
    assert gain["diff_ci_low"].tolist() == pytest.approx([0.05, -0.05])
    assert gain["diff_ci_high"].tolist() == pytest.approx([0.35, 0.25])
    assert gain["p_family_holm"].tolist() == [0.25, 0.5] and gain["significant"].tolist() == [True, False]

    mine = effort_tables({"usage": usage, "paired_tests": tests}, conditions, efforts=["high", "low"])
    assert mine["effort_cells"]["effort"].tolist() == ["high", "high", "low", "low", "medium"]  # the rest after
    assert mine["template_gain"]["effort"].tolist() == ["high", "low"]


def test_the_effort_setting_takes_a_list_in_every_form_and_refuses_a_level_twice():
    from olakit.config import ConfigError
    from olakit.errors import DataError

    assert OlaGPTConfig(reasoning_effort="none").reasoning_effort == ("none",)  # an effort, not "unset"
    assert OlaGPTConfig(reasoning_effort="low,high").reasoning_effort == ("low", "high")
    assert OlaGPTConfig(reasoning_effort=["minimal"]).effort() == "minimal" and OlaGPTConfig().effort() is None
    with pytest.raises(ConfigError, match="low given twice"):
        OlaGPTConfig(reasoning_effort="low,low")
    with pytest.raises(DataError, match="several efforts are a grid"):
        OlaGPTConfig(reasoning_effort="low,high").effort()


def test_prices_are_data_each_with_the_date_of_its_price_list():
    """olakit/resources/prices.json, read as a user's file would be: every model with positive prices and an ISO
    date; the reasoning models of 2025 among them; register_price changes one and marks it registered."""
    import datetime
    from importlib.resources import files

    from olakit.llm import PRICE_DATES, PRICES, register_price

    doc = json.loads(files("olakit.resources").joinpath("prices.json").read_text())
    for model, p in doc["models"].items():
        assert p["prompt"] > 0 and p["completion"] >= p["prompt"], model
        assert datetime.date.fromisoformat(p["as_of"]) <= datetime.date(2026, 12, 31), model
        assert PRICES[model] == (p["prompt"], p["completion"]) and PRICE_DATES[model] == p["as_of"]
    assert {"o4-mini", "o3", "gpt-5-mini", "deepseek-reasoner"} <= set(doc["models"])
    before = PRICES.get("my-model"), PRICE_DATES.get("my-model")
    try:
        register_price("my-model", 1, 2)
        assert (PRICES["my-model"], PRICE_DATES["my-model"]) == ((1.0, 2.0), "registered")
    finally:
        PRICES.pop("my-model", None), PRICE_DATES.pop("my-model", None)
    assert before == (None, None)


INSPECT_TASK = """
import json
from inspect_ai import Task, task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.scorer import choice
from inspect_ai.solver import multiple_choice

@task
def aqua_two():
    rows = json.load(open({rows!r}))
    return Task(dataset=MemoryDataset([Sample(input=r["question"], choices=r["options"], target=r["gold"], id=str(i))
                                       for i, r in enumerate(rows)]), solver=multiple_choice(), scorer=choice())
"""


@pytest.mark.parametrize("protocol", ["reasoning", "think"])
def test_an_inspect_log_of_a_reasoning_model_imports_with_its_thinking_kept_apart(tmp_path, data_dir, protocol):
    """``inspect eval`` (its own command line) against a reasoning server: the thinking names the wrong letter, the
    answer the gold one. Inspect keeps the thinking as ContentReasoning; the import reads the answer alone and keeps
    the thinking in the records' reasoning column."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    from olakit.data.imported import ImportSpec, import_runs

    rows = [json.loads(line) for line in (data_dir / "aqua" / "test.json").read_text().splitlines()[:2]]
    given = [{"question": r["question"], "options": [o.split(")", 1)[1] for o in r["options"]], "gold": r["correct"]}
             for r in rows]  # fmt: skip
    wrong = {r["correct"]: "C" if r["correct"] != "C" else "D" for r in rows}

    def reply(prompt, request):
        gold = next(g["gold"] for g in given if g["question"][:40] in prompt)
        return {"content": f"ANSWER: {gold}", "reasoning": f"Perhaps ANSWER: {wrong[gold]}. No, {gold}."}

    (tmp_path / "rows.json").write_text(json.dumps(given))
    (tmp_path / "task.py").write_text(INSPECT_TASK.format(rows=str(tmp_path / "rows.json")))
    with Loopback(reply=reply, protocol=protocol) as srv:
        env = {**os.environ, "LOOP_API_KEY": "none", "NO_COLOR": "1"}  # inspect's provider openai-api/loop
        done = subprocess.run(
            [Path(sys.executable).parent / "inspect", "eval", f"{tmp_path / 'task.py'}@aqua_two", "--model",
             "openai-api/loop/m", "--model-base-url", srv.base_url, "--display", "none", "--log-dir",
             str(tmp_path / "logs")], env=env, capture_output=True, text=True, cwd=tmp_path, timeout=300,
        )  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    (log,) = (tmp_path / "logs").glob("*.eval")
    records, _ = import_runs(ImportSpec(dataset="aqua", runs=[{"file": str(log), "run": "r1"}]))
    records = records.sort_values("question_id")
    assert records["extracted"].tolist() == [r["correct"] for r in rows] and records["correct"].all()
    for (_, rec), r in zip(records.iterrows(), rows):
        assert rec["reasoning"] == f"Perhaps ANSWER: {wrong[r['correct']]}. No, {r['correct']}."
        assert "Perhaps" not in rec["raw_output"]


def test_a_table_of_outputs_with_think_blocks_imports_the_answers_alone(tmp_path, data_dir):
    """A run made elsewhere by a model without a reasoning parser (its outputs hold <think> blocks; one was cut off
    while thinking): the answer is read after the thinking, never in it; the cut-off one is ``unfinished``."""
    from olakit.data.imported import ImportSpec, import_runs

    rows = [json.loads(line) for line in (data_dir / "aqua" / "test.json").read_text().splitlines()[:3]]
    other = {"A": "B", "B": "C", "C": "D", "D": "E", "E": "A"}
    outputs = [
        f"<think>The answer is {other[rows[0]['correct']]}.</think>The answer is {rows[0]['correct']}.",
        f"<think>Surely {other[rows[1]['correct']]}? no.</think>\nSo the answer is {rows[1]['correct']}.",
        f"<think>Weighing {rows[2]['correct']} against {other[rows[2]['correct']]}",  # cut off while thinking
    ]
    table = pd.DataFrame({"question": [r["question"] for r in rows], "output": outputs,
                          "finish_reason": ["stop", "stop", "length"]})  # fmt: skip
    table.to_json(tmp_path / "run.jsonl", orient="records", lines=True)
    spec = ImportSpec(dataset="aqua", runs=[{"file": str(tmp_path / "run.jsonl"), "output": "output",
                                             "finish_reason": "finish_reason", "reextract": "olagpt"}])  # fmt: skip
    records, _ = import_runs(spec)
    mine = records.set_index("raw_output")  # read by olagpt's extractor: the source gave no answer of its own
    first, second = (outputs[i].split("</think>")[1] for i in (0, 1))
    assert mine.loc[first, "extracted"] == rows[0]["correct"]
    assert mine.loc[second.strip(), "extracted"] == rows[1]["correct"]
    cut = mine.loc[""]
    assert cut["extracted"] is None and cut["unparsed_cause"] == "unfinished"
    assert cut["reasoning"] == outputs[2].removeprefix("<think>")


def test_thinking_goes_to_every_eval_evers_own_fields_and_comes_back(tmp_path, data_dir):
    """An import whose outputs hold thinking (<think> blocks, and reasoning tokens in a column of their own),
    exported by ``olakit export``: each instance carries the thinking in the schema's ``output.reasoning_trace``
    and the count in ``token_usage.reasoning_tokens`` (checked by the package's JSON schema), never in the answer's
    ``output.raw``; imported back, the records have the same thinking."""
    from importlib import resources

    import jsonschema
    import yaml

    from olakit.cli import main
    from olakit.data.records import load_records

    rows = [json.loads(line) for line in (data_dir / "aqua" / "test.json").read_text().splitlines()[:2]]
    table = pd.DataFrame({
        "question": [r["question"] for r in rows],
        "output": [f"<think>Is it {r['correct']}? Yes.</think>So the answer is {r['correct']}." for r in rows],
        "thought_tokens": [7, 9], "prompt_tokens": [50, 60], "completion_tokens": [20, 22],
    })  # fmt: skip
    table.to_json(tmp_path / "run.jsonl", orient="records", lines=True)
    spec = {"dataset": "aqua", "runs": [{"file": "run.jsonl", "run": "r1", "output": "output",
                                         "reasoning_tokens": "thought_tokens", "reextract": "olagpt"}]}  # fmt: skip
    (tmp_path / "spec.yaml").write_text(yaml.safe_dump(spec))
    assert main(["import", str(tmp_path / "spec.yaml"), "--out", str(tmp_path / "imported")]) == 0
    records = load_records(tmp_path / "imported" / "records.parquet")
    assert sorted(records["reasoning"]) == sorted(f"Is it {r['correct']}? Yes." for r in rows)
    assert sorted(records["reasoning_tokens"].tolist()) == [7, 9]
    assert main(["export", str(tmp_path / "imported"), "--out", str(tmp_path / "out.jsonl")]) == 0
    schema = json.loads(
        resources.files("every_eval_ever").joinpath("schemas/instance_level_eval.schema.json").read_text()
    )
    lines = [json.loads(x) for x in (tmp_path / "out.jsonl").read_text().splitlines()]
    for doc in lines:
        jsonschema.validate(doc, schema)
        assert "<think>" not in doc["output"]["raw"][0] and doc["output"]["reasoning_trace"][0].startswith("Is it ")
    assert not any("token_usage" in d for d in lines)  # an import knows no prompt and completion tokens
    back, _ = import_runs_of(tmp_path / "out.jsonl")
    assert sorted(back["reasoning"]) == sorted(records["reasoning"])
    # a live run against OpenAI-style reasoning: every token count known, the reasoning tokens among them
    res, _ = olagpt(tmp_path, "openai-reasoning")
    res.write(tmp_path / "live")
    assert main(["export", str(tmp_path / "live"), "--out", str(tmp_path / "live.jsonl")]) == 0
    lines = [json.loads(x) for x in (tmp_path / "live.jsonl").read_text().splitlines()]
    answers = [d for d in lines if d["metadata"]["olakit.template"] in ("ST", "turbo")]
    assert len(answers) == 6 and {d["token_usage"]["reasoning_tokens"] for d in answers} == {len(THINKING.split())}
    assert all("reasoning_trace" not in d["output"] for d in answers)  # OpenAI's models show no thinking


def import_runs_of(path):
    from olakit.data.imported import ImportSpec, import_runs

    return import_runs(ImportSpec(dataset="aqua", runs=[{"file": str(path)}]))


def test_a_thinking_budget_is_sent_as_each_server_takes_it_and_learned_once_where_refused(tmp_path):
    """``thinking_budget``: vLLM's ``thinking_token_budget`` and the template variable SGLang passes to Qwen3's
    template (``chat_template_kwargs.thinking_budget``), in every call and in its cache key; OpenAI's API refuses
    both, each once, then they are left out."""
    seen = []

    def record(prompt, request):
        seen.append((request.get("thinking_token_budget"), request.get("chat_template_kwargs")))
        return thinker(prompt, request)

    res, _ = olagpt(tmp_path, "reasoning", reply=record, thinking_budget=512)
    assert seen == [(512, {"thinking_budget": 512})] * 9  # 3 question types, then 3 questions x 2 templates
    again, _ = olagpt(tmp_path, "reasoning", reply=record, thinking_budget=256)  # keyed: paid again
    assert again.calls["total"]["paid"] == 9 and seen[-1] == (256, {"thinking_budget": 256})
    res, srv = olagpt(tmp_path, "openai-reasoning", thinking_budget=512)
    assert dict(srv.refusals) == {"max_tokens": 1, "temperature": 1, "thinking_token_budget": 1,
                                  "chat_template_kwargs": 1}  # fmt: skip
    assert set(res.records["extracted"]) == {"B"}


WRONG = 'The answer is E. {"Answer": "E"} Answer: E. So the answer is no. Score: 1. Total Steps: 9'
"""Thinking that, read for an answer, a vote, a review, an action or a note, would change it."""


def with_thinking(prompt, request):
    """tests.replies.docs's reply (a plausible answer to any prompt of any method), thinking WRONG first; a turn of
    tool calls as it is."""
    from tests.replies import docs

    got = docs(prompt, request)
    if isinstance(got, str):
        return {"content": got, "reasoning": WRONG}
    if isinstance(got, tuple):
        return {"content": got[0], "finish_reason": got[1], "reasoning": WRONG}
    return got


def every_method(llm):
    """Each method's records on 2 questions with ``llm``: OlaGPT with both votes and a tool (the calculator, OpenAI's
    tools API), GEEK, the review loop, the notes builder and a user's stepwise method."""
    from olakit.geek.config import GeekConfig
    from olakit.geek.run import run_geek
    from olakit.olagpt.active_learning import build_notes
    from olakit.olagpt.config import NotesConfig
    from olakit.review.config import ReviewConfig
    from olakit.review.run import run_review
    from olakit.steps import ask, stepwise

    olagpt_cfg = OlaGPTConfig(n_questions=2, templates=["ST", "turbo"], strategies=["zero-shot"],
                              votes=("regex_vote", "llm_vote"), tools="all", tool_names=["calculator"],
                              tool_templates=["ST"], tool_protocol="openai")  # fmt: skip
    mine = stepwise("mine", lambda q, cfg: (yield ask(f"{q.text}\nAnswer with a letter.")))
    notes = build_notes(NotesConfig(dataset="aqua", split="dev", pool=2, r=1, explainer="llm"), llm=llm)
    return {
        "olagpt": run(olagpt_cfg, llm=llm).records,
        "geek": run_geek(GeekConfig(n_questions=2, rows=("zero-shot", "CoT")), llm=llm).records,
        "review": run_review(ReviewConfig(n_questions=2, max_iterations=1), llm).records,
        "notes": notes.records.assign(library=notes.files["notes.jsonl"], passed=notes.extras.passed),
        "mine": mine({"n_questions": 2}, llm).records,
    }


def actions(trace: str) -> str:
    """A GEEK trace without each step's tokens and latency (a model that thinks pays more for the same step)."""

    def strip(x):
        if isinstance(x, dict):
            return {k: strip(v) for k, v in x.items() if k not in ("completion_tokens", "latency")}
        return [strip(v) for v in x] if isinstance(x, list) else x

    return json.dumps(strip(json.loads(trace)))


@pytest.mark.parametrize("protocol", [p for p in PROTOCOLS if p != "plain"])
def test_every_method_over_the_openai_client_gives_a_plain_models_records_in_every_protocol(tmp_path, protocol):
    """Every method, through the real openai client against the loopback server speaking as each reasoning server
    does, with thinking that names another answer before every reply: the records a model without thinking gives
    for the same visible replies (answers, votes, reviews, GEEK's actions, notes), the thinking in its own column."""
    from tests.replies import docs

    got = {}
    for name, reply, how in (("plain", docs, "plain"), (protocol, with_thinking, protocol)):
        with Loopback(reply=reply, protocol=how) as srv:
            with LLM(Endpoint(srv.base_url, "m"), cache_dir=tmp_path / name, progress=False) as llm:
                got[name] = every_method(llm)
    for method, plain in got["plain"].items():
        thought = got[protocol][method]
        cols = [c for c in ("question_id", "template", "row", "extracted", "correct", "raw_output", "library",
                            "passed") if c in plain.columns]  # fmt: skip
        if method == "geek":  # its actions and the question state they grew, less what a call paid and took
            plain, thought = (x.assign(trace=x["trace"].map(actions)) for x in (plain, thought))
            cols.append("trace")
        assert len(cols) >= 3 and plain[cols].equals(thought[cols]), method
        if protocol != "openai-reasoning" and "reasoning" in thought.columns:  # OpenAI's models show none
            assert (thought["reasoning"].fillna("") == WRONG).any(), method
        text = thought[[c for c in cols if thought[c].dtype == object]].astype(str)
        assert not text.apply(lambda s: s.str.contains("Score: 1|Total Steps: 9|<think>")).any().any(), method


def test_answer_tokens_are_unknown_where_a_reply_showed_thinking_the_endpoint_did_not_count():
    """condition_usage: a model without thinking (its answer tokens all its completion tokens), an OpenAI reasoning
    model (completion less the counted reasoning tokens), and vLLM's parser (thinking shown, no count): how much of
    the completion was thinking is unknown there, so its answer tokens are empty, not the completion tokens."""
    from olakit.analysis.compare import condition_usage

    rows = []
    for method, reasoning, counted in (("plain", "", None), ("openai", "", 7), ("vllm", "hmm, maybe E", None)):
        for q in range(2):
            rows.append({"template": method, "question_id": f"q{q}", "cached": False, "prompt_tokens": 10,
                         "completion_tokens": 20, "cost": 0.0, "latency": 0.1, "reasoning": reasoning,
                         "reasoning_tokens": counted, "unparsed_cause": ""})  # fmt: skip
    records = pd.DataFrame(rows)
    methods = pd.DataFrame([{"method": m, "n": 2, "correct": 1, "accuracy": 0.5, "ci_low": 0.1, "ci_high": 0.9}
                            for m in ("plain", "openai", "vllm")])  # fmt: skip
    got = condition_usage(records, methods).set_index("method")["answer_tokens"]
    assert got["plain"] == 40 and got["openai"] == 40 - 14 and pd.isna(got["vllm"])
