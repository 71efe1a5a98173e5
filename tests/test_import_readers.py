"""Other runs read as their authors scored them (issue 41): each answer kind imported, scoring as the source did with
every difference listed, the layouts that used to need hand conversion, and bad input as one error with nothing
written. Every expected value here is worked by hand from the rows written in the test."""

import csv
import json
from pathlib import Path

import pytest

from olakit.answering.extract import extract_number, extract_strict
from olakit.data.datasets import load_file
from olakit.data.imported import ImportSpec, import_runs, load_import_spec
from olakit.errors import DataError


def jsonl(path: Path, rows) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def spec_of(tmp_path, dataset, runs, **more):
    return ImportSpec(dataset=str(dataset), runs=runs, **more)


def by_question(frame):
    return dict(zip(frame["question_id"], frame["correct"]))


def test_a_free_text_run_is_scored_by_its_normalised_text(tmp_path):
    data = jsonl(tmp_path / "letters.jsonl", [
        {"id": "0", "question": "Last letters of 'Ya Jo'?", "answer": "yajo"},
        {"id": "1", "question": "Last letters of 'We Tj'?", "answer": "WeTj"},
        {"id": "2", "question": "Last letters of 'Ab Cd'?", "answer": "abcd"},
    ])  # fmt: skip
    run = jsonl(tmp_path / "run.jsonl", [
        {"id": "0", "pred": "  Yajo. "}, {"id": "1", "pred": "wetj"}, {"id": "2", "pred": "abdc"},
    ])  # fmt: skip
    df, report = import_runs(spec_of(tmp_path, data, [{"file": str(run), "id": "id", "answer": "pred"}]))
    assert by_question(df) == {"0": True, "1": True, "2": False}  # was 0/3: every answer read as a number
    assert report.runs[0].read_rules == {"text:case+space+punctuation": 3}
    exact, _ = import_runs(spec_of(tmp_path, data, [{"file": str(run), "id": "id", "answer": "pred"}], normalise=[]))
    assert by_question(exact) == {"0": False, "1": False, "2": False}  # normalise: [] compares as written


def test_json_booleans_answer_and_gold_a_yes_no_run(tmp_path):
    data = jsonl(tmp_path / "yn.jsonl", [
        {"id": "a", "question": "Is ice cold?", "answer": True},
        {"id": "b", "question": "Is fire cold?", "answer": False},
        {"id": "c", "question": "Do fish swim?", "answer": "Yes"},
    ])  # fmt: skip
    run = jsonl(tmp_path / "run.jsonl", [
        {"id": "a", "pred": True, "gold": True}, {"id": "b", "pred": "TRUE", "gold": False},
        {"id": "c", "pred": "no.", "gold": "yes"},
    ])  # fmt: skip
    df, report = import_runs(
        spec_of(tmp_path, data, [{"file": str(run), "id": "id", "answer": "pred", "gold": "gold"}])
    )
    assert list(df["extracted"]) == ["yes", "yes", "no"] and by_question(df) == {"a": True, "b": False, "c": False}
    assert report.runs[0].gold_conflicts == [] and report.runs[0].read_rules == {"yes_no:boolean": 1, "yes_no:word": 2}


def test_numbers_in_the_forms_runs_write_them(tmp_path):
    golds = [5, 216, 18, 300, 10, 40000, 18, 1800]
    answers = ["5 hours", "216 seconds", "24 - 6 = 18", "$300", "10%", "40,000", "18.0", "She earns\n#### 1,800"]
    data = jsonl(tmp_path / "n.jsonl", [{"id": str(i), "question": f"q{i}?", "answer": g} for i, g in enumerate(golds)])
    run = jsonl(tmp_path / "run.jsonl", [{"id": str(i), "pred": a} for i, a in enumerate(answers)])
    df, report = import_runs(spec_of(tmp_path, data, [{"file": str(run), "id": "id", "answer": "pred"}]))
    assert df["correct"].all() and list(df["extracted"]) == [str(g) for g in golds]
    assert list(df["read_rule"]) == [
        "number:unit", "number:unit", "number:equation", "number:currency", "number:percent", "number:thousands",
        "number:plain", "number:solution+thousands",
    ]  # fmt: skip
    assert report.runs[0].read_rules["number:unit"] == 2


def test_options_shown_as_a_mapping_in_another_order_name_their_texts(tmp_path):
    """The run showed the options as a label -> text mapping, reversed: its letter names the option's text there
    (the shown-order survivor, without a real model)."""
    data = jsonl(tmp_path / "d.jsonl", [
        {"id": "0", "question": "Which date?", "choices": ["09/22/2021", "09/23/2021", "10/01/2021"], "answer": "A"},
        {"id": "1", "question": "Which day?", "choices": ["Monday", "Tuesday", "Friday"], "answer": "C"},
    ])  # fmt: skip
    run = jsonl(tmp_path / "run.jsonl", [
        {"id": "0", "opts": {"A": "10/01/2021", "B": "09/23/2021", "C": "09/22/2021"}, "pred": "C"},
        {"id": "1", "opts": {"A": "Friday", "B": "Tuesday", "C": "Monday"}, "pred": "(A)"},
    ])  # fmt: skip
    df, report = import_runs(
        spec_of(tmp_path, data, [{"file": str(run), "id": "id", "choices": "opts", "answer": "pred"}])
    )
    assert list(df["extracted"]) == ["A", "C"] and df["correct"].all()
    assert set(df["read_rule"]) == {"choice:shown_order"}


def test_a_choice_that_is_not_a_label_is_none_and_the_source_verdict_listed(tmp_path):
    data = jsonl(tmp_path / "d.jsonl", [
        {"id": str(i), "question": f"q{i}?", "choices": ["1", "2", "3"], "answer": "C"} for i in range(4)
    ])  # fmt: skip
    run = jsonl(tmp_path / "run.jsonl", [
        {"id": "0", "pred": "C).\n\nQ", "ok": 1},  # the source scored it right: olakit reads no label
        {"id": "1", "pred": "C", "ok": "P"},  # partial credit is not correct
        {"id": "2", "pred": "C", "ok": 0.5},
        {"id": "3", "pred": "C)", "ok": True},
    ])  # fmt: skip
    runs = [{"file": str(run), "id": "id", "answer": "pred", "verdict": "ok"}]
    df, report = import_runs(spec_of(tmp_path, data, runs))
    assert by_question(df) == {"0": False, "1": True, "2": True, "3": True}  # olakit's reading: the default
    assert list(df["source_correct"]) == [True, False, False, True]
    got = {
        (d["question_id"], d["read"], d["rule"], d["olakit"], d["source"]) for d in report.runs[0].score_disagreements
    }
    assert got == {("0", None, "none", False, True), ("1", "C", "choice:label", True, False),
                   ("2", "C", "choice:label", True, False)}  # fmt: skip
    source, _ = import_runs(spec_of(tmp_path, data, runs, score="source"))
    assert by_question(source) == {"0": True, "1": False, "2": False, "3": True}


def test_score_exact_and_a_function_beside_the_spec(tmp_path):
    data = jsonl(tmp_path / "n.jsonl", [{"id": "0", "question": "q?", "answer": "40,000"},
                                        {"id": "1", "question": "r?", "answer": "-7"}])  # fmt: skip
    run = jsonl(tmp_path / "run.jsonl", [{"id": "0", "pred": "40000", "gold": "40,000"},
                                         {"id": "1", "pred": "7.9", "gold": "-7"}])  # fmt: skip
    (tmp_path / "quirk.py").write_text(
        "def positive_int(answer, gold, row):\n"
        "    return abs(int(float(answer))) == abs(int(float(str(gold).replace(',', ''))))\n"
    )
    (tmp_path / "spec.yaml").write_text(
        f"dataset: {data}\nscore: exact\nruns:\n"
        f"  - {{file: {run}, run: plain, id: id, answer: pred, gold: gold}}\n"
        f"  - {{file: {run}, run: quirky, id: id, answer: pred, gold: gold, score: 'quirk:positive_int'}}\n"
    )
    df, report = import_runs(load_import_spec(tmp_path / "spec.yaml"))
    plain, quirky = (df[df["run"] == name] for name in ("plain", "quirky"))
    assert by_question(plain) == {"0": False, "1": False}  # '40000' is not the string '40,000'
    assert by_question(quirky) == {"0": True, "1": True}  # truncated, made positive: 7 == 7
    assert list(plain["olakit_correct"]) == [True, False]  # olakit reads 40000 == 40,000; 7.9 is not -7
    assert [len(r.score_disagreements) for r in report.runs] == [1, 1]
    (tmp_path / "quirk.py").write_text("def positive_int(answer, gold, row):\n    return int(gold)\n")
    with pytest.raises(DataError, match=r"run.jsonl line 1: score quirk.py:positive_int raised ValueError"):
        import_runs(load_import_spec(tmp_path / "spec.yaml"))
    with pytest.raises(DataError, match=r"score 'nowhere:fn': cannot import it"):
        (tmp_path / "bad.yaml").write_text(f"dataset: {data}\nscore: nowhere:fn\nruns:\n  - {{file: {run}}}\n")
        load_import_spec(tmp_path / "bad.yaml")


def test_the_first_answer_statement_never_wins_over_the_last():
    assert extract_strict("Answer: A\nOn reflection that is wrong.\nAnswer: C", "ABCDE") == "C"
    assert extract_number("The answer is 12.\nNo: 12 is a slip, the answer is 14.") == "14"


def test_one_run_alone_and_the_compare_verdict_setting(tmp_path, capsys):
    from olakit.cli import main

    data = jsonl(tmp_path / "d.jsonl", [
        {"id": str(i), "question": f"q{i}?", "choices": ["x", "y"], "answer": "A"} for i in range(3)
    ])  # fmt: skip
    run = jsonl(tmp_path / "run.jsonl", [{"id": "0", "pred": "A", "ok": 0}, {"id": "1", "pred": "B", "ok": 1},
                                         {"id": "2", "pred": "A", "ok": 1}])  # fmt: skip
    (tmp_path / "one.yaml").write_text(
        f"dataset: {data}\nruns:\n  - {{file: {run}, run: solo, id: id, answer: pred, verdict: ok}}\n"
    )
    assert main(["import", str(tmp_path / "one.yaml"), "--out", str(tmp_path / "one")]) == 0
    out = capsys.readouterr().out
    assert "2 scored otherwise by the source" in out
    methods = list(csv.DictReader(open(tmp_path / "one" / "tables" / "methods.csv")))
    assert [(m["method"], m["correct"]) for m in methods] == [("solo", "2")]  # olakit's: questions 0 and 2
    listed = list(csv.DictReader(open(tmp_path / "one" / "tables" / "score_disagreements.csv")))
    assert {d["question_id"] for d in listed} == {"0", "1"}
    for verdict, want in (("olakit", "2"), ("source", "2")):
        folder = tmp_path / f"c-{verdict}"
        assert main(["compare", "--sources", str(tmp_path / "one"), "--verdict", verdict, "--out", str(folder)]) == 0
        rows = list(csv.DictReader(open(folder / "tables" / "methods.csv")))
        assert [r["correct"] for r in rows] == [want]  # 0, 2 right by olakit; 1, 2 by the source: 2 each
    source_rows = list(csv.DictReader(open(tmp_path / "c-source" / "tables" / "paired_tests.csv")))
    assert source_rows == [] or all(r for r in source_rows)


def test_ids_not_found_and_a_column_absent_are_one_error_and_nothing_is_written(tmp_path):
    from olakit.cli import main

    run = jsonl(tmp_path / "run.jsonl", [{"qid": "q-1", "prediction": "A"}, {"qid": "q-2", "prediction": "B"}])
    (tmp_path / "ids.yaml").write_text(f"dataset: aqua\nruns:\n  - {{file: {run}, id: qid, answer: prediction}}\n")
    with pytest.raises(DataError) as err:
        import_runs(load_import_spec(tmp_path / "ids.yaml"))
    message = str(err.value)
    for part in ("run.jsonl", "none of its 2 rows", "id 'q-1'", "test-0, test-1", "0-based row positions", "text"):
        assert part in message, part
    assert main(["import", str(tmp_path / "ids.yaml"), "--out", str(tmp_path / "out")]) != 0
    assert not (tmp_path / "out").exists()
    (tmp_path / "col.yaml").write_text(f"dataset: aqua\nruns:\n  - {{file: {run}, id: qid, answer: answer}}\n")
    with pytest.raises(
        DataError, match=r"answer field 'answer' is in no row of the file; its rows have: prediction, qid"
    ):
        import_runs(load_import_spec(tmp_path / "col.yaml"))
    assert main(["import", str(tmp_path / "col.yaml"), "--out", str(tmp_path / "out2")]) != 0
    assert not (tmp_path / "out2").exists()


def test_big_bench_layouts_list_indexes_and_joined_questions(tmp_path):
    bb = tmp_path / "task.json"
    bb.write_text(json.dumps({"name": "t", "examples": [
        {"input": "2+2?", "target_scores": {"3": 0, "4": 1, "5": 0}},
        {"input": "Sky colour?", "target_scores": {"green": 0, "red": 0, "blue": 1}},
    ]}))  # fmt: skip
    qs = load_file(bb)
    assert [(q.options, q.gold, q.kind) for q in qs] == [
        ({"A": "3", "B": "4", "C": "5"}, "B", "choice"),
        ({"A": "green", "B": "red", "C": "blue"}, "C", "choice"),
    ]  # the highest score's option, not A
    free = tmp_path / "free.json"
    free.write_text(json.dumps({"examples": [{"input": "Capital of France?", "target": ["Paris", "paris, France"]}]}))
    (q,) = load_file(free)
    assert q.gold == "Paris" and q.meta["alternatives"] == ["Paris", "paris, France"]
    run = jsonl(tmp_path / "run.jsonl", [{"input": "Capital of France?", "out": "Paris, France"}])
    df, _ = import_runs(ImportSpec(dataset=str(free), runs=[{"file": str(run), "question": "input", "answer": "out"}]))
    assert df["correct"].tolist() == [True]  # any accepted answer
    sol = jsonl(tmp_path / "sol.jsonl", [{"sQuestion": "3 + 36?", "lSolutions": [39.0]}])
    for path in ("lSolutions[0]", "lSolutions.0"):
        (q,) = load_file(sol, {"question": "sQuestion", "answer": path})
        assert (q.gold, q.kind) == ("39", "number")
    svamp = jsonl(tmp_path / "svamp.jsonl", [{"Body": "Ann has 3 apples.", "Question": "How many?", "Answer": 3}])
    (q,) = load_file(svamp, {"question": ["Body", "Question"], "answer": "Answer"})
    assert q.text == "Ann has 3 apples. How many?" and q.gold == "3"
    (q,) = load_file(svamp, "question=[Body,Question],answer=Answer")
    assert q.text == "Ann has 3 apples. How many?"
