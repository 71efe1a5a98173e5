"""Two-stage answer extraction against a loopback server scripted with outputs of each kind: an output cut off at
the limit gets exactly one second call, recorded as the second stage; a complete output with an answer statement
gets none; an unparseable second stage stays unparsed; finish reasons and causes round-trip through the records."""

from collections import Counter

import pytest

from olakit.analysis.tables import answer_stages_table, extraction_audit
from olakit.answering.second_stage import answer_trigger
from olakit.config import Stats
from olakit.data.records import load_records
from olakit.llm import ScriptedModel
from olakit.olagpt.config import OlaGPTConfig
from olakit.olagpt.run import run

# question id -> (first output, finish reason, second-stage continuation or None when none may be asked)
SCRIPT = {
    "test-0": ("Step 1: the speed is 5(1 + sqrt 3)", "length", " (A)."),  # cut off -> A
    "test-1": ("Working it out... so the Answer: B", "stop", None),  # answered at once
    "test-2": ("I cannot decide between them.", "stop", " not determinable."),  # no answer, second stage vague
    "test-3": ("So the answer is F.", "stop", " (C)"),  # not an option -> second stage C
}


def reply(prompt, req):
    if prompt.startswith("As a mathematics professor"):  # the question-type call
        return '{"task_type": "arithmetic"}'
    if prompt.rstrip().endswith(answer_trigger(list("ABCDE"))):  # the second stage continues the model's own turn
        qid = next(q for q, (first, _, _) in SCRIPT.items() if prompt.startswith(first))
        assert SCRIPT[qid][2] is not None, f"{qid}: no second stage may be asked"
        return SCRIPT[qid][2], "stop"
    qid = next(q for q, key in KEYS.items() if key in prompt)
    first, finish, _ = SCRIPT[qid]
    return first, finish


KEYS: dict[str, str] = {}


@pytest.fixture
def questions(data_dir):
    from olakit.data.loaders import load_questions

    qs = load_questions("aqua", "test", data_dir)[:4]
    KEYS.update({q.id: q.text[:60] for q in qs})
    return qs


def run_stages(tmp_path, stages):
    cfg = OlaGPTConfig(
        dataset="aqua",
        n_questions=4,
        templates=["turbo"],
        strategies=("zero-shot",),
        baselines=(),
        votes=("regex_vote",),
        max_tokens=32,
        answer_stages=stages,
    )
    model = ScriptedModel(reply)
    res = run(cfg, llm=model).write(tmp_path / f"out{stages}")
    return res, Counter(model.prompts)


def test_second_stage_only_where_needed_and_recorded(tmp_path, questions):
    gold = {q.id: q.gold for q in questions}
    one, _ = run_stages(tmp_path, 1)
    two, sent = run_stages(tmp_path, 2)
    seconds = [p for p in sent if p.rstrip().endswith(answer_trigger(list("ABCDE")))]
    assert len(seconds) == 3 and all(sent[p] == 1 for p in seconds)  # one each for test-0, test-2, test-3
    df = load_records(tmp_path / "out2" / "records.parquet").set_index("question_id")
    assert df.loc["test-0", "answer_stage"] == 2 and df.loc["test-0", "extracted"] == "A"
    assert df.loc["test-0", "finish_reason"] == "length" and df.loc["test-0", "unparsed_cause"] == "cut_off"
    assert df.loc["test-1", "answer_stage"] == 1 and df.loc["test-1", "extracted"] == "B"
    assert df.loc["test-1", "stage2_output"] == "" and df.loc["test-1", "finish_reason"] == "stop"
    assert df.loc["test-2", "answer_stage"] == 2 and df.loc["test-2", "extracted"] is None  # never guessed
    assert df.loc["test-2", "unparsed_cause"] == "no_answer"
    assert df.loc["test-3", "extracted"] == "C" and df.loc["test-3", "unparsed_cause"] == "not_an_option"
    # both calls are counted in the record's tokens; the one-stage run made no second call
    d1 = one.records.set_index("question_id")
    assert df.loc["test-0", "completion_tokens"] == d1.loc["test-0", "completion_tokens"] + 1
    assert two.calls["total"]["unique_prompts"] == one.calls["total"]["unique_prompts"] + 3
    assert d1["answer_stage"].eq(1).all() and d1.loc["test-0", "extracted"] is None
    audit = extraction_audit(one.records).iloc[0]
    assert (audit["unparsed"], audit["cut_off"], audit["no_answer"], audit["not_an_option"]) == (3, 1, 1, 1)
    table = answer_stages_table(one.records, two.records, Stats(n_boot=20)).set_index("template")
    want_1 = sum(gold[q] == a for q, a in (("test-1", "B"),)) / 4
    want_2 = sum(gold[q] == a for q, a in (("test-0", "A"), ("test-1", "B"), ("test-3", "C"))) / 4
    assert table.loc["turbo", "accuracy_1"] == want_1 and table.loc["turbo", "accuracy_2"] == want_2
    assert table.loc["turbo", "unparsed_rate_1"] == 0.75 and table.loc["turbo", "unparsed_rate_2"] == 0.25
    assert table.loc["turbo", "second_calls"] == 3 and table.loc["turbo", "cut_off_1"] == 1


def test_answer_stages_other_than_one_or_two_are_refused():
    from olakit.config import ConfigError

    with pytest.raises(ConfigError, match="answer_stages=3: input should be 1 or 2"):
        OlaGPTConfig(answer_stages=3)
