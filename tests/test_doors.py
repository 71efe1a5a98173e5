"""The door defects a newcomer found (issue 40), one test each where no other test holds it; each failed on the code
before the fix. The others: items 1 and 2 (`olakit notebook NAME` with no out_dir, the result in the command's
folder) tests/test_docs.py::test_every_notebook_runs_by_olakit_notebook_with_no_parameters; 7's registration edited
after its run tests/test_power.py (plan --after); 8 tests/test_datasets.py::test_free_text_answers_are_scored_by_
normalised_exact_match_unless_a_judge_is_asked_for; 9 tests/test_wheel.py::test_every_door_of_a_base_install; 10
tests/test_datasets.py::test_a_data_folder_reached_through_a_symlink_is_logged_as_reached; 11 tests/test_batch.py::
test_exported_requests_answered_by_the_embedded_model_complete_the_run_from_the_cache."""

import hashlib
import json
import math
import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from olakit.data.records import load_records

ROOT = Path(__file__).resolve().parent.parent


def scripted(monkeypatch, reply: str, model: str = "scripted"):
    module = "tests.test_doors" if reply in globals() else "tests.replies"
    monkeypatch.setenv("OLAKIT_BASE_URL", f"scripted://{module}:{reply}")
    monkeypatch.setenv("OLAKIT_MODEL", model)


def always_a(prompt, request):
    """Every answer A (the other run of item 5 answers B: tests/replies.py steady)."""
    if "question type" in prompt.lower() or "type of the question" in prompt.lower():
        return "math word problem"
    return 'Step by step: the first option fits. {"Answer": "A"}'


def mostly_right(prompt, request):
    """Item 6's quiz: "Pick I" has answer A for even I, B for odd; wrong (C) where the prompt's hash says so, one
    in five: two templates disagree now and then, by about as much either way."""
    if "question type" in prompt.lower() or "type of the question" in prompt.lower():
        return "a multiple-choice question"
    i = int(re.search(r"Pick (\d+)", prompt).group(1))
    wrong = int(hashlib.sha256(prompt.encode()).hexdigest(), 16) % 5 == 0
    return f'So: {{"Answer": "{"C" if wrong else "AB"[i % 2]}"}}'


def exact_mcnemar(k: int, j: int) -> float:
    """Two-sided exact McNemar p from the discordant counts, by hand (the binomial at 1/2)."""
    if k + j == 0:
        return 1.0
    return min(1.0, 2 * sum(math.comb(k + j, i) for i in range(min(k, j) + 1)) / 2 ** (k + j))


def test_item3_a_figure_without_pyplots_canvas_is_saved(tmp_path):
    """save_figure assumed the Agg canvas ('FigureCanvasBase' object has no attribute 'get_renderer'); a Figure
    made without pyplot, as under JupyterLab's inline backend, has the base canvas."""
    from matplotlib.backend_bases import FigureCanvasBase
    from matplotlib.figure import Figure

    from olakit.data.provenance import save_figure

    fig = Figure(figsize=(3, 2))
    fig.subplots().plot([0, 1], [1, 0])
    assert type(fig.canvas) is FigureCanvasBase
    written = save_figure(fig, tmp_path, "line")
    assert sorted(p.name for p in written) == ["line.pdf", "line.png"]
    assert (tmp_path / "line.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (tmp_path / "line.pdf").read_bytes()[:5] == b"%PDF-"


def test_item4_a_spec_is_found_where_the_user_is_and_its_dataset_beside_it(tmp_path, monkeypatch, capsys):
    """`olakit import /abs/sub/spec.yaml` with `dataset: data.json` beside the spec said "dataset file not found",
    while its run files were found beside it; a spec named relative to the working directory was looked for in the
    repository."""
    from olakit.cli import main

    sub = tmp_path / "sub"
    sub.mkdir()
    questions = [{"id": str(i), "question": f"What is {i} + {i}?", "answer": 2 * i} for i in range(4)]
    (sub / "data.json").write_text(json.dumps(questions))
    (sub / "answers.jsonl").write_text("".join(json.dumps({"qid": str(i), "pred": 2 * i if i < 3 else 0}) + "\n"
                                               for i in range(4)))  # fmt: skip
    (sub / "spec.yaml").write_text("dataset: data.json\nruns:\n  - {file: answers.jsonl, run: mine, id: qid, "
                                   "answer: pred}\n")  # fmt: skip
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    assert main(["import", str(sub / "spec.yaml"), "--out", "i"]) == 0, capsys.readouterr().err
    df = load_records(elsewhere / "i" / "records.parquet")
    assert df.set_index("question_id")["correct"].to_dict() == {"0": True, "1": True, "2": True, "3": False}
    monkeypatch.chdir(tmp_path)  # relative to the working directory, not to the repository
    assert main(["import", "sub/spec.yaml", "--out", "j"]) == 0
    assert len(load_records(tmp_path / "j" / "records.parquet")) == 4


def two_runs(tmp_path, monkeypatch):
    """Two runs of ST on the first 12 AQuA questions: one always answering B (steady), one always A."""
    from olakit.cli import main

    flags = ["-n", "12", "--templates", "ST", "--strategies", "zero-shot"]
    scripted(monkeypatch, "steady", "model-b")
    assert main(["run", *flags, "--out", str(tmp_path / "b")]) == 0
    scripted(monkeypatch, "always_a", "model-a")
    assert main(["run", *flags, "--out", str(tmp_path / "a")]) == 0
    return tmp_path / "a", tmp_path / "b"


def test_item5_two_runs_compared_are_one_pair_and_a_vote_only_when_asked(tmp_path, monkeypatch, capsys, data_dir):
    """`olakit compare` of two runs added a regex vote as a third condition: Holm over three pairs (p 0.078 became
    0.235) and three rows in paired_tests.csv."""
    from olakit.cli import main

    a, b = two_runs(tmp_path, monkeypatch)
    assert main(["compare", "--sources", f"{a},{b}", "--out", str(tmp_path / "c")]) == 0
    tests_ = pd.read_csv(tmp_path / "c" / "tables" / "paired_tests.csv")
    assert len(tests_) == 1
    gold = [json.loads(x)["correct"] for x in (data_dir / "aqua" / "test.json").open()][:12]
    k, j = sum(g == "A" for g in gold), sum(g == "B" for g in gold)  # A right and B wrong, and the other way
    p = exact_mcnemar(k, j)
    row = tests_.iloc[0]
    assert row["p_mcnemar"] == pytest.approx(p) and row["p_mcnemar_holm"] == pytest.approx(p)  # Holm over one pair
    assert main(["compare", "--sources", f"{a},{b}", "--vote-over", "all", "--out", str(tmp_path / "v")]) == 0
    assert len(pd.read_csv(tmp_path / "v" / "tables" / "paired_tests.csv")) == 3  # asked: the vote is a third
    capsys.readouterr()
    with pytest.raises(SystemExit):
        main(["compare", "--help"])
    helped = capsys.readouterr().out
    assert "PydanticUndefined" not in helped and "--vote-over" in helped
    assert "[required]" in " ".join(helped.split("--sources", 2)[2].split()[:40])


def test_item6_the_plan_takes_its_ceiling_from_the_estimates_run_and_warns_of_borrowed_rates(
    tmp_path, monkeypatch, capsys
):
    """`olakit plan --estimates RUN` took AQuA's 254 as the ceiling when RUN held another dataset's questions; a plan
    for a file dataset without estimates used AQuA's gpt-3.5 rates, only naming the source."""
    from olakit.cli import main

    rows = [{"question": f"Pick {i}", "options": ["x", "y", "z"], "answer": "y" if i % 2 else "x"} for i in range(30)]
    quiz = tmp_path / "quiz.jsonl"
    quiz.write_text("".join(json.dumps(r) + "\n" for r in rows))
    scripted(monkeypatch, "mostly_right")
    flags = ["--dataset", str(quiz), "-n", "all", "--templates", "ST,DT", "--strategies", "zero-shot"]
    assert main(["run", *flags, "--out", str(tmp_path / "r")]) == 0
    capsys.readouterr()
    assert main(["plan", "--comparisons", "ST:zero-shot vs DT:zero-shot", "--estimates", str(tmp_path / "r")]) == 0
    printed = capsys.readouterr().out
    assert "of 30 questions" in printed and "254" not in printed  # the estimate's questions, and the ceiling:
    assert f"cannot be decided on {quiz}'s 30 questions: 30 questions give" in printed  # the run's dataset
    assert main(["plan", "--comparisons", "ST:zero-shot vs DT:zero-shot", "--dataset", str(quiz)]) == 0
    printed = capsys.readouterr().out
    assert "warning: the rates are borrowed from" in printed and "254" in printed  # AQuA's, said so


def test_item7_a_registered_split_is_the_runs_and_an_unknown_cell_costs_nothing(tmp_path, monkeypatch, capsys):
    """A registration with `split: test` and no --split was refused (the check compared the unresolved setting);
    one naming a template that does not exist paid for every call, then reported "not run"."""
    from olakit.cli import main
    from olakit.llm.loopback import Loopback
    from tests.replies import steady

    family = tmp_path / "family.yaml"
    family.write_text('comparisons: ["ST:zero-shot vs DT:zero-shot"]\ndataset: aqua\nsplit: test\nn_questions: 2\n')
    typo = tmp_path / "typo.yaml"
    typo.write_text('comparisons: ["XYZ:zero-shot vs DT:zeroshot"]\n')
    flags = ["-n", "2", "--templates", "ST,DT", "--strategies", "zero-shot"]
    with Loopback(reply=steady) as server:
        monkeypatch.setenv("OLAKIT_BASE_URL", server.base_url)
        monkeypatch.setenv("OLAKIT_MODEL", "m")
        assert main(["run", *flags, "--registration", str(typo), "--out", str(tmp_path / "t")]) == 2
        assert server.requests == 0 and not (tmp_path / "t").exists()
        err = capsys.readouterr().err
        assert "XYZ" in err and "zeroshot" in err
        assert main(["run", *flags, "--registration", str(family), "--out", str(tmp_path / "f")]) == 0
    assert json.loads((tmp_path / "f" / "run.json").read_text())["registration"]["settings"]["split"] == "test"


def test_item12_the_command_line_start_benchmark_reports_its_figure_and_its_verdict(tmp_path):
    """`olakit --help` and an argument error took 0.77 CPU s (pandas alone was 0.5 s): the goal is half of importing
    pandas, side by side in one run. A speed goal is a benchmark's (benchmarks/bench_cli.py), never a test's: this
    test asserts what the benchmark reports (every case measured, the ratio of the slowest to pandas, the verdict and
    its exit status agreeing with the figures), not the machine's speed."""
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bench_cli.py"), "--out",
                           str(tmp_path / "cli.json")], capture_output=True, text=True, timeout=300)  # fmt: skip
    figures = json.loads((tmp_path / "cli.json").read_text())
    cases = figures["min_cpu_s"]
    assert {"--help", "run --bad", "method geek --bad"} <= set(cases) and all(v > 0 for v in cases.values())
    ratio = max(cases.values()) / figures["pandas_import_cpu_s"]
    assert abs(figures["figure"] - ratio) < 1e-3 and figures["goal"] == 0.5
    assert figures["met"] == (figures["figure"] <= 0.5)
    assert (done.returncode == 0) == figures["met"], done.stdout + done.stderr


def test_item13_messages_read_as_one_phrase_and_name_what_is_there(tmp_path, monkeypatch, capsys):
    """ "Unterminated string starting at at column 30"; a CSV mapping naming a missing column did not list the
    columns found, as the unknown-layout message does."""
    from olakit.cli import main

    scripted(monkeypatch, "steady")
    bad = tmp_path / "bad.jsonl"
    text = '{"question": "a", "answer": "b}'  # the string runs to the end of the file
    bad.write_text(text)
    column = text.index('"b') + 1
    assert main(["run", "--dataset", str(bad), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert f"bad.jsonl line 1: malformed JSON: unterminated string starting at column {column}" in err
    assert "at at" not in err
    quiz = tmp_path / "quiz.csv"
    quiz.write_text("prompt,w,x,y,z,key\nFirst?,a,b,c,d,x\n")
    mapping = "question=prompt,choices=w|x|y|q,answer=key"
    assert main(["run", "--dataset", str(quiz), "--dataset-map", mapping, "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert "option column(s) 'q' missing (the row has: prompt, w, x, y, z, key)" in err
    assert main(["run", "--dataset", str(quiz), "--dataset-map", mapping.replace("=prompt", "=prompx"), "--out",
                 str(tmp_path / "o")]) == 2  # fmt: skip
    assert "field 'prompx' missing (the row has: key, prompt, w, x, y, z)" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()
