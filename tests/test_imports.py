"""Runs made elsewhere (olakit.data.imported, `olakit import`): the Program of Thoughts paper's recorded outputs on
AQuA and GSM8K, each count checked against an independent count over the raw files and against the numbers the
PoT README prints; unmatched rows, gold conflicts, runs missing questions and bad specs on files the tests write."""

import csv
import json
import math
import shlex
from pathlib import Path

import pytest

from olakit.config import ConfigError
from olakit.data.imported import ImportSpec, import_runs, load_import_spec
from olakit.errors import DataError

REPO = Path(__file__).resolve().parent.parent
POT = ("PoT", "PoT-SC", "PoT zero-shot", "GPT-4 CoT")


def raw_rows(path):
    return [r for r in (json.loads(line) for line in Path(path).read_text().splitlines()) if "question" in r]


def test_pot_on_aqua_imported_and_counted_as_the_files_say(tmp_path, data_dir, capsys):
    from olakit.cli import main
    from olakit.data.records import load_records

    assert main(["import", str(REPO / "imports" / "pot_aqua.yaml"), "--out", str(tmp_path / "pot")]) == 0
    printed = capsys.readouterr().out
    assert "gold conflicts, first: test-139 run 'D' dataset 'E'" in printed
    df = load_records(tmp_path / "pot" / "records.parquet")
    assert list(dict.fromkeys(df["template"])) == list(POT) and df.groupby("template").size().eq(253).all()
    # independently: the official gold by question text (aqua/test.json), each run's own letter
    official = {
        json.loads(line)["question"]: json.loads(line)["correct"] for line in (data_dir / "aqua" / "test.json").open()
    }
    spec = load_import_spec(REPO / "imports" / "pot_aqua.yaml")
    counts, right = {}, {}
    for run in spec.runs:
        rows = raw_rows(run.file)
        if run.answer:
            letters = [r["prediction"] for r in rows]
        else:  # GPT-4: the one "X)" of the last line, read by hand here: a letter followed by ")"
            letters = []
            for r in rows:
                found = {c for c in "ABCDE" if f"{c})" in r["generated_prediction"]}
                letters.append(found.pop() if len(found) == 1 else None)
        right[run.run] = {r["question"]: a == official[r["question"]] for a, r in zip(letters, rows)}
        counts[run.run] = (
            sum(a == official[r["question"]] for a, r in zip(letters, rows)),
            sum(a == r["answer"] for a, r in zip(letters, rows)),  # against the run's own gold
            sum(a is None or a not in "ABCDE" for a in letters),
        )
    from olakit.runlog import command, read_log

    again = command(read_log(tmp_path / "pot"), tmp_path / "again")  # `olakit again` on an import
    assert again.startswith(f"olakit import {REPO / 'imports' / 'pot_aqua.yaml'} --out {tmp_path / 'again'} --")
    assert main(shlex.split(again)[1:]) == 0
    assert load_records(tmp_path / "again" / "records.parquet").equals(df)
    ours = df.groupby("template")["olakit_correct"].sum().to_dict()
    assert {k: v[0] for k, v in counts.items()} == ours  # olakit's reading, against the official gold
    # the records' verdict: as PoT's scripts scored each run (the spec's score rules), against the run's own gold
    source = {"PoT": counts["PoT"][1], "PoT-SC": counts["PoT-SC"][1]}
    zs = raw_rows(spec.runs[2].file)
    source["PoT zero-shot"] = sum(("A" if r["prediction"] == "None" else r["prediction"]) == r["answer"] for r in zs)
    gpt4 = raw_rows(spec.runs[3].file)
    source["GPT-4 CoT"] = sum(f"{r['answer']})" in r["generated_prediction"] for r in gpt4)
    assert df.groupby("template")["correct"].sum().to_dict() == source
    assert source == {"PoT": 137, "PoT-SC": 147, "PoT zero-shot": 111, "GPT-4 CoT": 184}  # README .541 .582 .438 .727
    disagree = list(csv.DictReader(open(tmp_path / "pot" / "tables" / "score_disagreements.csv")))
    assert {(d["run"], d["question_id"]) for d in disagree if d["run"] != "PoT zero-shot"} == {
        (run, "test-139") for run in ("PoT", "PoT-SC", "GPT-4 CoT")
    }  # the gold: D in PoT's copy, E in the official file
    assert sum(d["run"] == "PoT zero-shot" for d in disagree) == 15  # 14 "None" counted as A, and test-139
    assert counts["GPT-4 CoT"][2] == 22  # SOURCES.md: 22 of 253 replies name no letter
    # exact McNemar, PoT against PoT-SC: the discordant questions counted here, the p-value from the binomial
    only_a = sum(right["PoT"][q] and not right["PoT-SC"][q] for q in right["PoT"])
    only_b = sum(right["PoT-SC"][q] and not right["PoT"][q] for q in right["PoT"])
    p = min(
        1.0, 2 * sum(math.comb(only_a + only_b, i) for i in range(min(only_a, only_b) + 1)) / 2 ** (only_a + only_b)
    )
    tests = list(csv.DictReader(open(tmp_path / "pot" / "tables" / "paired_tests.csv")))
    pair = next(t for t in tests if {t["a"], t["b"]} == {"PoT", "PoT-SC"})
    if pair["a"] == "PoT-SC":
        only_a, only_b = only_b, only_a
    assert (int(pair["a_only"]), int(pair["b_only"])) == (only_a, only_b)
    assert float(pair["p_mcnemar"]) == pytest.approx(p)
    assert len(tests) == 6  # 4 runs: every pair, Holm over the 6 (a vote across them only when the spec asks)
    methods = {r["method"]: r for r in csv.DictReader(open(tmp_path / "pot" / "tables" / "methods.csv"))}
    assert set(methods) == set(POT)
    # the README's numbers, scored as PoT did (the run's own gold: question 139 is D there)
    spec_run_gold = spec.replace(gold_from="run")
    by_run, _ = import_runs(spec_run_gold.replace(runs=[r.replace(score="olakit") for r in spec.runs]))
    acc = by_run.groupby("template")["correct"].mean().round(3).to_dict()
    assert acc["PoT"] == 0.542 and round(counts["PoT"][1] / 253, 3) == 0.542  # README 0.541 (137/253 = 0.5415)
    assert acc["GPT-4 CoT"] == 0.727  # README 72.7%
    assert acc["PoT-SC"] == 0.581  # README 0.582: 147/253; no count of 253 gives 0.582
    zero = by_run[by_run["template"] == "PoT zero-shot"]
    as_a = (zero["extracted"].fillna("A") == zero["gold"]).mean()  # README: "None" counted as "A"
    assert round(as_a, 3) == 0.439 and round(zero["correct"].mean(), 3) == 0.379  # README 0.438 (111/253 = 0.4387)


def test_pot_on_gsm8k_reads_the_executed_values_as_numbers(tmp_path, capsys):
    from olakit.cli import main

    assert main(["import", str(REPO / "imports" / "pot_gsm8k.yaml"), "--out", str(tmp_path / "g")]) == 0
    out = capsys.readouterr().out
    assert "tables over the 1317 questions every run answered; 1 left out (some run lacks them): 1040" in out
    from olakit.notebook.explorers.questions import open_explorers

    explorer, _ = open_explorers(tmp_path / "g" / "records.parquet", tmp_path / "notes.jsonl")
    assert "Janet" in explorer.render() and len(explorer.keys) == 1317 and "1040" not in explorer.keys
    log = json.loads((tmp_path / "g" / "run.json").read_text())
    runs = {r["run"]: r for r in log["extra"]["report"]["runs"]}
    assert runs["PoT"]["matched"] == 1318 and runs["PoT zero-shot"]["matched"] == 1317
    assert runs["PoT"]["gold_conflicts"] == [] and runs["PoT"]["skipped"] == 2  # the two prompt lines
    assert any(p.endswith("gsm8K_s0_e-1_11_17_10_20.jsonl") for p in log["data"])  # its sha256 is kept


def write(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_unmatched_rows_gold_conflicts_and_missing_questions_are_reported(tmp_path):
    data = write(tmp_path / "qs.jsonl", [{"id": f"q{i}", "question": f"Q number {i}?", "choices": ["x", "y"],
                                          "answer": "A"} for i in range(4)])  # fmt: skip
    a = write(tmp_path / "a.jsonl", [
        {"q": "q number 0?", "pred": "A", "gold": "A"},
        {"q": "Q  number 1?", "pred": "B", "gold": "B"},  # the run's gold disagrees
        {"q": "Something else?", "pred": "A"},  # not in the dataset
        {"prompt": "few-shot examples ..."},  # no question field
    ])  # fmt: skip
    b = write(tmp_path / "b.jsonl", [{"q": f"Q number {i}?", "pred": "A"} for i in range(4)])
    spec = ImportSpec(dataset=str(data), runs=[
        {"file": str(a), "run": "a", "question": "q", "answer": "pred", "gold": "gold"},
        {"file": str(b), "run": "b", "question": "q", "answer": "pred"},
    ])  # fmt: skip
    df, report = import_runs(spec)
    ra, rb = report.runs
    assert (ra.rows, ra.skipped, ra.matched, ra.unmatched, ra.missing) == (4, 1, 2, 1, 2)
    assert "Something else?" in ra.unmatched_examples[0] and ra.missing_examples == ["q2", "q3"]
    assert ra.gold_conflicts == [{"question_id": "q1", "run_gold": "B", "dataset_gold": "A"}]
    assert (rb.matched, rb.missing) == (4, 0)
    a_rows = df[df["template"] == "a"].set_index("question_id")
    assert a_rows.loc["q1", "gold"] == "A" and not a_rows.loc["q1", "correct"]  # the dataset's gold scores
    by_run, _ = import_runs(spec.replace(gold_from="run"))
    assert bool(by_run[(by_run["template"] == "a") & (by_run["question_id"] == "q1")]["correct"].iloc[0])


def test_a_run_missing_questions_is_compared_on_the_shared_ones(tmp_path):
    from olakit.analysis.imports import import_spec
    from olakit.analysis.report import report as report_of

    data = write(tmp_path / "qs.jsonl", [{"question": f"Q{i}?", "answer": i} for i in range(12)])
    write(tmp_path / "full.jsonl", [{"question": f"Q{i}?", "value": i} for i in range(12)])
    write(tmp_path / "part.jsonl", [{"question": f"Q{i}?", "value": 0} for i in range(10)])
    (tmp_path / "spec.yaml").write_text(
        f"dataset: {data}\nruns:\n  - {{file: full.jsonl, answer: value}}\n  - {{file: part.jsonl, answer: value}}\n"
    )
    result = import_spec(tmp_path / "spec.yaml")
    tables, report = report_of(result), result.extras.report
    assert len(result.records) == 22 and report.compared == 10 and report.left_out == ["10", "11"]  # numeric order
    methods = tables["methods"].set_index("method")
    assert methods.loc["full", "n"] == 10 and methods.loc["full", "correct"] == 10
    assert methods.loc["part", "correct"] == 1  # only Q0's answer is 0


def test_bad_specs_are_one_error_before_anything_is_written(tmp_path):
    data = write(tmp_path / "qs.jsonl", [{"question": "Q?", "answer": 1}])
    run = write(tmp_path / "r.jsonl", [{"question": "Q?", "value": 1}])
    with pytest.raises(DataError, match="reextract 'fuzzy'; known: olagpt, option_mark, strict"):
        ImportSpec(dataset=str(data), runs=[{"file": str(run), "reextract": "fuzzy"}])
    with pytest.raises(DataError, match="two runs are named 'r'"):
        import_runs(ImportSpec(dataset=str(data), runs=[{"file": str(run), "answer": "value"}] * 2))
    with pytest.raises(DataError, match=r"run r \(.*r.jsonl\): name its answer field \('answer'\) or an extractor"):
        import_runs(ImportSpec(dataset=str(data), runs=[{"file": str(run)}]))
    (tmp_path / "s.yaml").write_text("dataset: aqua\nruns:\n  - {file: nowhere.jsonl}\n")
    with pytest.raises(DataError, match="run file nowhere.jsonl not found"):
        load_import_spec(tmp_path / "s.yaml")
    (tmp_path / "s.yaml").write_text("dataset: gsm\nruns:\n  - {file: r.jsonl}\n")
    with pytest.raises(ConfigError, match=r"ImportSpec: dataset='gsm': not a built-in dataset"):
        load_import_spec(tmp_path / "s.yaml")
    (tmp_path / "s.yaml").write_text("dataset: aqua\nrunz: []\n")
    with pytest.raises(ConfigError, match="runz=\\[\\]: not a setting of ImportSpec"):
        load_import_spec(tmp_path / "s.yaml")


def test_one_table_of_many_runs_split_by_its_condition_columns_and_reextraction_beside(tmp_path):
    data = write(tmp_path / "qs.jsonl", [{"id": f"q{i}", "question": f"Q number {i}?", "choices": ["x", "y", "z"],
                                          "answer": "B"} for i in range(3)])  # fmt: skip
    rows = []
    for method, model, picks, texts in (
        ("cot", "m1", ["B", "B", "A"], ["so B", "Answer: C", "A"]),
        ("cot", "m2", ["A", "B", "B"], ["A", "B", "Answer: B"]),
        ("plain", "m1", ["B", None, "C"], ["B", "no idea", "C"]),
    ):
        rows += [{"method": method, "model": model, "qid": f"q{i}", "pred": p, "text": t}
                 for i, (p, t) in enumerate(zip(picks, texts))]  # fmt: skip
    table = tmp_path / "all.csv"
    with open(table, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows({**r, "pred": r["pred"] or ""} for r in rows)
    run = {"file": str(table), "conditions": ["method", "model"], "id": "qid", "answer": "pred", "output": "text",
           "reextract": "strict"}  # fmt: skip
    spec = ImportSpec(dataset=str(data), runs=[run])
    df, report = import_runs(spec)
    names = [r.run for r in report.runs]
    assert names == ["cot/m1", "cot/m1 (strict)", "cot/m2", "cot/m2 (strict)", "plain/m1", "plain/m1 (strict)"]
    got = df.pivot(index="template", columns="question_id", values="extracted")
    assert got.loc["cot/m1"].tolist() == ["B", "B", "A"]  # the file's own answers
    assert got.loc["cot/m1 (strict)"].tolist()[1] == "C"  # "Answer: C" read by olakit's strict extractor
    assert df.set_index("template").loc["cot/m2", "model"].iloc[0] == "m2"  # the model column gives the model
    assert all(r.matched == 3 and r.missing == 0 for r in report.runs)
