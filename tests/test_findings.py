"""What checks from outside found, tried as a new user would (issue 52): each finding as a test that fails on the
code it was found in. Expected values are worked from the raw data files and the scripted replies by hand."""

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd

from olakit.data.loaders import resolve_data_dir

ROOT = Path(__file__).resolve().parent.parent


def _aqua(i: int) -> dict:
    with open(resolve_data_dir() / "aqua" / "test.json", encoding="utf-8") as f:
        return [json.loads(line) for line in f][i]


def choosing(prompt, request):
    """The controller picks DT and ST for AQuA test-0, PT and turbo for every other question; every answer is A."""
    if "question type" in prompt.lower() or "judge the type" in prompt:
        return '{"task_type": "math word problem"}'
    if "Which 2 of them suit the question below best?" in prompt:
        return "DT, ST" if _aqua(0)["question"][:60] in prompt else "PT, turbo"
    return 'Step by step. {"Answer": "A"}'


def olakit(args, tmp_path, reply="choosing", module="tests.test_findings"):
    env = {
        **{k: v for k, v in __import__("os").environ.items() if not k.startswith("OLAKIT_")},
        "OLAKIT_BASE_URL": f"scripted://{module}:{reply}",
        "OLAKIT_MODEL": "scripted",
        "OLAKIT_CACHE_DIR": str(tmp_path / "cache"),
        "PYTHONPATH": str(ROOT),
    }
    return subprocess.run([sys.executable, "-m", "olakit.cli", *args], capture_output=True, text=True, cwd=tmp_path,
                          env=env, timeout=300)  # fmt: skip


def test_1_template_choice_alone_makes_its_tables_without_a_vote_over_templates_it_did_not_run(tmp_path):
    """`olakit run ... --choose-k 2` paid for its calls, then failed: "templates ['DST', 'DT', 'turbo'] have no
    records". Each chosen template is counted on the questions it answered, the chosen vote on all, no regex vote."""
    golds = [_aqua(0)["correct"], _aqua(1)["correct"]]
    assert golds == ["A", "E"]
    for extra in ([], ["--verify", "--diy"]):
        out = tmp_path / f"out{len(extra)}"
        done = olakit(["run", "--dataset", "aqua", "-n", "2", "--strategies", "zero-shot,random", "--n-notes", "1",
                       "--baselines", "", "--votes", "regex_vote", "--choose-k", "2", *extra, "--out", str(out)],
                      tmp_path)  # fmt: skip
        assert done.returncode == 0, done.stderr[-3000:]
        methods = pd.read_csv(out / "tables" / "methods.csv").set_index(["method", "notes_strategy"])
        for strategy in ("zero-shot", "random"):
            # test-0 (gold A): DT and ST, both answer A: right; test-1 (gold E): PT and turbo answer A: wrong
            for template, n, correct in (("DT", 1, 1), ("ST", 1, 1), ("PT", 1, 0), ("turbo", 1, 0)):
                assert tuple(methods.loc[(template, strategy), ["n", "correct"]]) == (n, correct)
            assert tuple(methods.loc[("chosen_vote", strategy), ["n", "correct"]]) == (2, 1)
            assert ("DST", strategy) not in methods.index  # never chosen: no row, no error
        assert "regex_vote" not in methods.index.get_level_values("method")
        tests = pd.read_csv(out / "tables" / "paired_tests.csv")
        pair = tests[(tests["a"] == "DT | zero-shot") & (tests["b"] == "ST | zero-shot")]
        assert pair["n"].tolist() == [1]  # tested on the one question both answered


def test_2_an_unknown_tool_is_one_error_before_anything_is_paid():
    """`--tool-names abacus` paid one question-type call before its error (docs/olagpt.md: one clear error before
    anything runs)."""
    import pytest

    from olakit.errors import DataError
    from olakit.llm import ScriptedModel
    from olakit.olagpt.config import OlaGPTConfig
    from olakit.olagpt.run import run

    model = ScriptedModel(lambda prompt, request: "Answer: A")
    cfg = OlaGPTConfig(n_questions=1, templates=["ST"], strategies=["zero-shot"], tools="all", tool_names=["abacus"])
    with pytest.raises(DataError, match="abacus"):
        run(cfg, llm=model)
    assert model.calls == 0


def test_4_the_literal_loop_strips_every_reply_as_the_seeds_code_does():
    """The seed's get_response_from_model returns ``content.strip()``: a review that ends in blank lines reaches the
    revise prompt as ``...Score: 3\\nPlease improve...`` there, and did as ``...Score: 3\\n\\n\\nPlease improve...``
    in the kit."""
    from olakit.llm import ScriptedModel
    from olakit.review.config import ReviewConfig
    from olakit.review.loop import Loop

    def reply(prompt, request):
        if prompt.startswith("Here is the answer to the question"):
            return "Feedback: too short.\nOverall Score: 3\n\n\n"
        if prompt.startswith("Please break down"):
            return "1. Read it\nTotal Steps: 1\n\n"
        return "  An answer.  \n\n"

    model = ScriptedModel(reply)
    cfg = ReviewConfig(behaviour="literal", max_iterations=2)
    h = Loop({"answerer": model, "reviewer": model}, cfg).run(["What is 2 + 2?"])[0]
    revise = [s["input"] for s in h.stages if s["stage"].startswith("revise")]
    assert revise, [s["stage"] for s in h.stages]
    expected = (
        "Here is the original answer to the question 'What is 2 + 2?':\nAn answer.\n"
        "Here is the review of the answer:\nFeedback: too short.\nOverall Score: 3\n"
        "Please improve the original answer based on the review suggestions."
    )
    assert revise[0] == expected


def test_6_a_yes_no_answer_given_as_a_sentence_is_read_on_import(tmp_path):
    """Six hand-written StrategyQA answers, five of them right, scored 1 of 6: "So the answer is yes.", "The answer
    is no.", "No, because ..." were no answer. The golds are read from the raw dev file here."""
    from olakit.analysis.imports import import_spec

    with open(resolve_data_dir() / "strategyqa" / "dev.json", encoding="utf-8") as f:
        dev = json.load(f)[:6]
    golds = ["yes" if q["answer"] else "no" for q in dev]
    flip = {"yes": "no", "no": "yes"}
    forms = ["So the answer is {}.", "The answer is {}.", "{}, because the facts say so.", "Answer: **{}**",
             "the answer (yes or no) is {}", "{}. That much is certain."]  # fmt: skip
    said = [form.format(g if i < 5 else flip[g]) for i, (form, g) in enumerate(zip(forms, golds))]
    said = [s[0].upper() + s[1:] for s in said]
    rows = [{"qid": q["qid"], "reply": s} for q, s in zip(dev, said)]
    (tmp_path / "run.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (tmp_path / "spec.yaml").write_text(
        "dataset: strategyqa\nsplit: dev\nruns:\n  - {file: run.jsonl, run: hand, id: qid, answer: reply}\n"
    )
    records = import_spec(tmp_path / "spec.yaml").records
    assert records["correct"].sum() == 5 and records["extracted"].notna().all()
    assert set(records["read_rule"]) == {"yes_no:statement", "yes_no:leading"}
