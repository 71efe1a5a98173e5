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


def test_run_tables_vote_over_first_answers_only_and_none_over_a_template_that_missed_questions():
    """Three templates on two questions (gold A): q0 A A B, q1 B A A, and a repeat of T1 (sample 1) answering B
    then A. The tables vote over the first answers: T1 1 of 2, the vote A, A (2 of 2). With a fourth template
    that answered q0 only, no vote over the four exists: no regex vote, no paper tables, T4 counted on its one
    question (a hand mutation pass over olakit.analysis.runs)."""
    from olakit.analysis.runs import answer_every_cell, run_tables
    from olakit.data.records import to_frame
    from tests.toys import record

    rows = [
        record(q, t, a) for q, answers in (("q0", "AAB"), ("q1", "BAA")) for t, a in zip(("T1", "T2", "T3"), answers)
    ]
    rows += [record("q0", "T1", "B", sample=1), record("q1", "T1", "A", sample=1)]
    df = to_frame(rows)
    t = run_tables(df, ["T1", "T2", "T3"], Analysis(n_boot=20))
    acc = t["accuracy_ci"].set_index("method")
    assert (acc.loc["T1", "n"], acc.loc["T1", "correct"]) == (2, 1)
    assert acc.loc["regex_vote", "correct"] == 2 and t["answer_counts"]["n_correct"].tolist() == [2, 2]
    partial = to_frame([*rows, record("q0", "T4", "A")])
    t4 = run_tables(partial, ["T1", "T2", "T3", "T4"], Analysis(n_boot=20))
    assert "accuracy" not in t4 and "regex_vote" not in set(t4["methods"]["method"])
    assert tuple(t4["methods"].set_index("method").loc["T4", ["n", "correct"]]) == (1, 1)
    assert not answer_every_cell(df.iloc[:0], ["T1"])  # no records: no vote


def test_the_llm_vote_audit_over_two_strategies_with_a_shuffled_answer_missing():
    """Two strategies; the regex vote over T1..T3. zero-shot: q1 templates A A B, LLM A, shuffled B (an order
    change); q2 B B A, LLM A (a rescue), no shuffled answer. random: q1 A A B, LLM B (overrides a right majority),
    shuffled B. Every question with an LLM vote is counted; the order changes and their rate over the questions
    that have both votes: zero-shot 1 of 1, random 0 of 1."""
    from olakit.analysis.runs import llm_vote_audit
    from olakit.data.records import to_frame
    from tests.toys import record

    rows = []
    cells = (
        ("zero-shot", "q1", "AAB", "A", "B"),
        ("zero-shot", "q2", "BBA", "A", None),
        ("random", "q1", "AAB", "B", "B"),
    )
    for strategy, qid, answers, llm, shuffled in cells:
        n = 0 if strategy == "zero-shot" else 3
        rows += [record(qid, t, a, notes_strategy=strategy, n_notes=n) for t, a in zip(("T1", "T2", "T3"), answers)]
        rows.append(record(qid, "llm_vote", llm, notes_strategy=strategy, n_notes=n))
        if shuffled:
            rows.append(record(qid, "llm_vote_shuffled", shuffled, notes_strategy=strategy, n_notes=n))
    audit = llm_vote_audit(to_frame(rows), ["T1", "T2", "T3"]).set_index("notes_strategy")
    assert audit.loc["zero-shot", ["n", "llm_correct", "regex_correct", "rescues", "order_changes"]].tolist() == [
        2,
        2,
        1,
        1,
        1,
    ]
    assert audit.loc["random", ["n", "overrides_correct_majority", "order_changes"]].tolist() == [1, 1, 0]
    assert audit.loc[["zero-shot", "random"], "position_bias_rate"].tolist() == [1.0, 0.0]


def test_choice_and_verification_tables_list_note_counts_in_order_and_read_first_answers():
    """The records of test_choice_and_verification_tables_keep_notes_counts_apart's kind, the 3-notes cell first in
    the file: the tables still list 1 then 3; a repeat of a template (sample 1, 99 tokens) is not the chosen way's
    cost."""
    from olakit.analysis.runs import choice_table, verification_table
    from olakit.data.records import to_frame
    from tests.toys import record

    rows = []
    for n in (3, 1):
        cell = {"notes_strategy": "random", "n_notes": n}
        for t, label in zip(("T1", "T2", "T3"), "AAB"):
            rows.append(record("q0", t, label, **cell, prompt_tokens=10, completion_tokens=5))
            rows.append(record("q0", f"{t}+V", "A", **cell, trace=json.dumps({"revised": label != "A"})))
        rows.append(record("q0", "T1", "B", **cell, sample=1, prompt_tokens=99, completion_tokens=0))
        chose = json.dumps({"chosen": ["T1", "T2"], "named_by_model": 2})
        rows.append(record("q0", "chosen_vote", "A", **cell, prompt_tokens=7, completion_tokens=3, trace=chose))
    df = to_frame(rows)
    c = choice_table(df, ["T1", "T2", "T3"])
    assert c["n_notes"].tolist() == [1, 3] and c["tokens_chosen"].tolist() == [40.0, 40.0]  # 15 + 15 + 10
    firsts = df[df["sample"] == 0]  # a live run's templates answer once (samples are SC's)
    assert verification_table(firsts, ["T1", "T2", "T3"])["n_notes"].tolist() == [1, 3]


def test_the_replicate_line_by_hand():
    import pandas as pd

    from olakit.analysis.runs import replicate_line

    table = pd.DataFrame(
        {"template": ["T1", "T2"], "notes_strategy": ["zero-shot", "random"], "asked": [10, 10], "n": [8, 10],
         "answers_differ": [2, 5], "correct_changed": [1, 2], "share_differ": [0.25, 0.5]}
    )  # fmt: skip
    assert replicate_line(table) == (
        "replicate: 20 answers asked twice; of the 18 parsed at least once, 7 differed (39%; 3 changed between right "
        "and wrong); most in T2 | random: 5 of 10"
    )  # 7 / 18 = 0.389
