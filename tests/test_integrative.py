"""OlaGPT's verification thinking, integrative (DIY) thinking and template choice, against a scripted loopback
server: which calls are made, what the records hold, and the tables worked out by hand."""

import hashlib
import json

from olakit.analysis.runs import run_tables
from olakit.llm import ScriptedModel
from olakit.olagpt.config import OlaGPTConfig
from olakit.olagpt.run import run
from olakit.settings import Analysis


def reply(prompt, req):
    if prompt.startswith("As a mathematics professor"):
        return '{"task_type": "arithmetic"}'
    if prompt.startswith("Here are thinking templates") and "Compose one new" in prompt:
        return 'New template: "Plan first, then check each step."'
    if prompt.startswith("Here are thinking templates"):
        return "ST, DT"
    if prompt.startswith("Here is the answer to the question"):
        score = 5 if "Answer: B" in prompt else 2
        return f"Accuracy: {score}\nCompleteness: {score}\nClarity: {score}\nDepth: {score}\nOverall Score: {score}"
    if "Please improve the original answer" in prompt:
        return "Rechecked. Answer: B"
    if "Plan first, then check each step." in prompt:
        return "DIY says Answer: C"
    if "Let's think step by step." in prompt:
        return "So the Answer: B"
    return "Hmm. Answer: A"


def test_verification_diy_and_choice(tmp_path):
    cfg = OlaGPTConfig(
        dataset="aqua",
        n_questions=2,
        templates=["turbo", "DT", "ST"],
        strategies=("zero-shot",),
        baselines=(),
        votes=("regex_vote",),
        verify=True,
        diy=True,
        choose_k=2,
        choice_comparison=True,  # every template answers too: the verification below reviews all three
        max_tokens=16,
    )
    model = ScriptedModel(reply)
    res = run(cfg, llm=model)
    sent = list(dict.fromkeys(model.prompts))
    df = res.records.set_index(["question_id", "template"])
    # DIY: the composed template answers, and the record keeps its text
    assert df.loc[("test-0", "DIY"), "extracted"] == "C"
    assert json.loads(df.loc[("test-0", "DIY"), "trace"])["composed_template"] == "Plan first, then check each step."
    # choice: ST and DT chosen; their answers B (ST) and A (DT) tie -> the first chosen, ST's B
    chosen = json.loads(df.loc[("test-0", "chosen_vote"), "trace"])
    assert (
        chosen == {"chosen": ["ST", "DT"], "named_by_model": 2, "candidates": ["turbo", "DT", "ST"]}
        and df.loc[("test-0", "chosen_vote"), "extracted"] == "B"
    )
    # the record names the choice prompt the model was sent (not the reply)
    choice_prompts = [p for p in sent if p.startswith("Here are thinking templates") and "Compose one new" not in p]
    want = {hashlib.sha256(p.encode()).hexdigest() for p in choice_prompts}
    assert set(res.records.loc[res.records["template"] == "chosen_vote", "prompt_hash"]) <= want
    assert df.loc[("test-0", "chosen_vote"), "prompt_hash"] in want
    # verification: answers scored 2 (turbo's and DT's A) are revised to B; ST's B is scored 5 and kept
    assert (
        df.loc[("test-0", "turbo+V"), "extracted"] == "B"
        and json.loads(df.loc[("test-0", "turbo+V"), "trace"])["revised"]
    )
    assert df.loc[("test-0", "ST+V"), "raw_output"] == "So the Answer: B"
    # one review per distinct answer: turbo's and DT's identical answers are one prompt, paid once
    assert sum(p.startswith("Here is the answer to the question") for p in sent) == 2 * 2
    tables = run_tables(res.records, ["turbo", "DT", "ST"], Analysis(n_boot=20))
    methods = tables["methods"].set_index("method")
    gold = {q: df.loc[(q, "turbo"), "gold"] for q in ("test-0", "test-1")}
    want_before = sum(g == "A" for g in gold.values()) / 2  # turbo A, DT A, ST B: the vote is A
    assert methods.loc["regex_vote", "accuracy"] == want_before
    assert methods.loc["verified_vote", "accuracy"] == sum(g == "B" for g in gold.values()) / 2  # all B after
    v = tables["verification"].iloc[0]
    assert (v["answers_revised"], v["answers_changed"]) == (4, 4)
    c = tables["template_choice"].iloc[0]
    assert (c["k"], c["calls_all"], c["calls_chosen"], c["full_grid"]) == (2, 3, 3, True)


def test_choosing_k_templates_runs_only_those_and_reports_what_was_paid():
    """choose_k=2 of 5 templates on 2 questions: 2 type calls, 2 choices and 2 x 2 answers are sent (8), not the
    full grid's 2 + 2 + 10 (14); the table reports the calls made and paid, and no all-templates vote (nothing ran
    to compare with). A rerun on the same cache pays nothing, and the table says so."""
    import tempfile

    from olakit.llm import LLM, Endpoint
    from olakit.llm.loopback import Loopback

    cfg = OlaGPTConfig(dataset="aqua", n_questions=2, strategies=("zero-shot",), choose_k=2, max_tokens=16)
    model = ScriptedModel(reply)
    res = run(cfg, llm=model)
    answered = [p for p in model.prompts if not p.startswith(("As a mathematics professor", "Here are thinking"))]
    assert model.calls == 8 and len(answered) == 4 and res.calls["total"]["paid"] == 8
    assert set(res.records["template"]) == {"ST", "DT", "chosen_vote"}  # the reply "ST, DT": nothing else ran
    c = run_tables(res.records, ["turbo", "DT", "DST", "PT", "ST"], Analysis(n_boot=20))["template_choice"].iloc[0]
    assert (c["k"], c["calls_chosen"], c["paid_share_chosen"], c["full_grid"]) == (2, 3.0, 1.0, False)
    assert c[["all_templates_vote", "calls_all", "tokens_all"]].isna().all()

    with tempfile.TemporaryDirectory() as cache, Loopback(reply=reply) as srv:
        for paid_share in (1.0, 0.0):  # first run pays every call, the rerun none
            endpoint = Endpoint(srv.base_url, "fake", identity="loopback|fake")
            with LLM(endpoint, cache_dir=cache, progress=False) as llm:
                again = run(cfg, llm=llm)
            c = run_tables(again.records, ["turbo", "DT", "DST", "PT", "ST"], Analysis(n_boot=20))[
                "template_choice"
            ].iloc[0]
            assert c["paid_share_chosen"] == paid_share and again.calls["total"]["paid"] == 8 * paid_share
        assert srv.requests == 8


def test_choice_and_verification_tables_keep_notes_counts_apart():
    """One strategy at 1 and 3 notes, one question (gold A), worked out by hand:
    n=1: T1 A, T2 A, T3 B -> vote A (right); chosen T3, T1 -> tie B/A, first chosen: B (wrong);
         verified all B -> vote B (wrong): 2 answers changed, right -> wrong.
    n=3: T1 B, T2 B, T3 A -> vote B (wrong); chosen T3, T1 -> A (right); verified all A: 2 changed, wrong -> right.
    Tokens: a template answer costs 10+5 at n=1 and 30+5 at n=3; the choice call 7+3."""
    from olakit.analysis.runs import choice_table, verification_table
    from olakit.data.records import to_frame
    from tests.toys import record

    rows = []

    def add(n, template, label, prompt, trace=""):
        completion = 5 if template != "chosen_vote" else 3
        rows.append(record("q0", template, label, dataset="aqua", notes_strategy="random", n_notes=n,
                           prompt_tokens=prompt, completion_tokens=completion, cached=False, trace=trace))  # fmt: skip

    for n, labels, verified, chosen_label in ((1, "AAB", "B", "B"), (3, "BBA", "A", "A")):
        for t, label in zip(("T1", "T2", "T3"), labels):
            add(n, t, label, 10 * n)
            add(n, f"{t}+V", verified, 10 * n, json.dumps({"revised": label != verified}))
        add(n, "chosen_vote", chosen_label, 7, json.dumps({"chosen": ["T3", "T1"], "named_by_model": 2}))
    df = to_frame(rows)

    c = choice_table(df, ["T1", "T2", "T3"]).set_index("n_notes")
    assert list(c.index) == [1, 3] and list(c["n"]) == [1, 1]
    assert list(c["all_templates_vote"]) == [1.0, 0.0] and list(c["chosen_vote"]) == [0.0, 1.0]
    assert list(c["tokens_all"]) == [45.0, 105.0] and list(c["tokens_chosen"]) == [40.0, 80.0]

    v = verification_table(df, ["T1", "T2", "T3"]).set_index("n_notes")
    assert list(v["vote_before"]) == [1.0, 0.0] and list(v["vote_after"]) == [0.0, 1.0]
    assert list(v["answers_changed"]) == [2, 2] and list(v["answers_revised"]) == [2, 2]
    assert list(v["vote_right_to_wrong"]) == [1, 0] and list(v["vote_wrong_to_right"]) == [0, 1]


def test_the_verification_token_limit_reaches_its_calls():
    """The verify stage's token limit, set like any stage's, is the max_tokens of every review and revision call."""
    seen = []

    def spy(prompt, req):
        if prompt.startswith("Here is the answer to the question") or "review" in prompt.lower():
            seen.append(req["max_tokens"])
        return reply(prompt, req)

    cfg = OlaGPTConfig(n_questions=1, templates=["turbo"], strategies=["zero-shot"], verify=True,
                       stages={"verify": {"max_tokens": 77}})  # fmt: skip
    run(cfg, llm=ScriptedModel(spy))
    assert seen and set(seen) == {77}


def test_choice_settings_that_cannot_work_together_are_refused():
    import pytest

    from olakit.config import ConfigError

    with pytest.raises(ConfigError, match="choice_comparison=True compares template choice: set choose_k too"):
        OlaGPTConfig(choice_comparison=True)
    with pytest.raises(ConfigError, match="llm_vote votes over every template's answer"):
        OlaGPTConfig(choose_k=2, votes=("regex_vote", "llm_vote"))
    OlaGPTConfig(choose_k=2, choice_comparison=True, votes=("regex_vote", "llm_vote"))
    for bad in (0, -1):
        with pytest.raises(ConfigError, match=rf"choose_k={bad}: input should be greater than or equal to 1"):
            OlaGPTConfig(choose_k=bad)
    names = ["turbo", "DT", "DST", "PT", "ST"]
    with pytest.raises(ConfigError, match=r"choose_k=9: choose fewer than the 5 templates \(turbo, DT, DST, PT, ST\)"):
        OlaGPTConfig(choose_k=9).check_templates(names)
    OlaGPTConfig(choose_k=4).check_templates(names)
