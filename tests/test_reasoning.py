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
from olakit.llm.response import split_thinking
from olakit.olagpt.config import OlaGPTConfig
from olakit.olagpt.run import run

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
    assert res.calls["total"]["paid"] == 0 and res.log.config["reasoning_effort"] == "low"


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
