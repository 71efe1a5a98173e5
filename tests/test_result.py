"""One result, made once and written once (olakit.result): every door returns the same Result, whose run log is typed
and read back as written; the one writer puts a folder in place whole or leaves nothing; the seams the parallel
writers and readers had, each failing on the code before this."""

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest

from olakit.cli import main
from olakit.llm import ScriptedModel
from olakit.result import KINDS, Result
from olakit.runlog import Calls, Role, RunLog, read_log
from tests import replies

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture
def scripted(monkeypatch):
    monkeypatch.setenv("OLAKIT_BASE_URL", "scripted://tests.replies:steady")
    monkeypatch.setenv("OLAKIT_MODEL", "scripted-steady")


def check_shape(result: Result, kind: str) -> None:
    """The same Result and run-log shape whatever the door: typed roles and calls, the calls per role and a total,
    the extras of its kind, a log that reads back as written."""
    assert isinstance(result, Result) and result.kind == kind and kind in KINDS
    log = result.log
    assert isinstance(log, RunLog) and all(isinstance(r, Role) for r in log.roles.values())
    assert all(isinstance(c, Calls) for c in log.calls.values())
    calls = result.calls
    assert "total" in calls and set(calls) - {"total"} == set(log.calls_by_role())
    for what in ("requests", "paid", "cached", "failed"):
        assert calls["total"][what] == sum(c[what] for r, c in calls.items() if r != "total")
    assert RunLog.from_dict(json.loads(json.dumps(log.as_dict()))) == log
    assert type(result.extras).__name__.endswith("Extras")


def test_every_door_makes_the_same_result(tmp_path, scripted, data_dir):
    """OlaGPT, GEEK, the review loop, a notes build, an import, a comparison, the reproduction and a notebook's
    recorded source: one Result each, one shape; each written by the one writer reads back alike."""
    from olakit.analysis.compare import CompareConfig, compare_runs
    from olakit.analysis.imports import import_spec
    from olakit.analysis.report import report
    from olakit.analysis.reproduce import reproduce_olagpt
    from olakit.geek.config import GeekConfig
    from olakit.geek.run import run_geek
    from olakit.notebook.records import get_records
    from olakit.olagpt.active_learning import build_notes
    from olakit.olagpt.config import NotesConfig, OlaGPTConfig
    from olakit.olagpt.run import run
    from olakit.result import read_result
    from olakit.review.config import ReviewConfig
    from olakit.review.run import run_review
    from olakit.settings import Analysis

    tiny = OlaGPTConfig(n_questions=2, templates=["turbo", "ST"], strategies=["zero-shot"], max_tokens=16, n_boot=20)
    made = {
        "olagpt": run(tiny),
        "geek": run_geek(GeekConfig(n_questions=1, rows=["zero-shot"], n_boot=20)),
        "review": run_review(ReviewConfig(dataset="aqua", n_questions=1, max_iterations=1, max_tokens=16)),
        "notes": build_notes(NotesConfig(dataset="aqua", split="dev", pool=2, r=1)),
        "import": import_spec(REPO / "imports" / "pot_aqua.yaml", Analysis(n_boot=20)),
        "reproduction": reproduce_olagpt(data_dir, analysis=Analysis(n_boot=20)),
        "recorded": get_records("recorded", tiny.replace(templates=None)),
    }
    made["olagpt"].write(tmp_path / "olagpt")
    made["compare"] = compare_runs(CompareConfig(sources=[str(tmp_path / "olagpt")], n_boot=20))
    for kind, result in made.items():
        check_shape(result, kind)
        tables = report(result)
        assert tables and all(isinstance(t, pd.DataFrame) for t in tables.values()), kind
        written = result.write(tmp_path / f"{kind}-out", tables)
        back = read_result(tmp_path / f"{kind}-out")
        assert back.log == written.log and back.kind == kind
        assert sorted(p.name for p in (tmp_path / f"{kind}-out" / "tables").iterdir()) == sorted(
            f"{n}.csv" for n in tables
        )
    assert set(made["olagpt"].calls) == {"answerer", "total"} and made["olagpt"].calls["total"]["paid"] == 6
    assert set(made["review"].calls) == {"answerer", "reviewer", "direct", "total"}  # one shape: per role, a total
    assert made["notes"].files["notes.jsonl"] and (tmp_path / "notes-out" / "notes.jsonl").is_file()


STEPS = ("records", "files", "tables", "figures", "answers", "log", "swap")


@pytest.mark.parametrize("step", STEPS)
def test_a_writer_interrupted_at_any_step_leaves_the_folder_whole_or_absent(tmp_path, monkeypatch, step):
    """A failure at each step of the writer: a new folder is absent, a folder of the same run's earlier write is as
    it was, and no half-built folder is left beside it; a rerun then proceeds."""
    import matplotlib

    matplotlib.use("Agg")  # this test draws one figure, off-screen
    import matplotlib.pyplot as plt

    from olakit import result as result_module
    from olakit.olagpt.config import OlaGPTConfig
    from olakit.olagpt.run import run

    cfg = OlaGPTConfig(n_questions=2, templates=["turbo"], strategies=["zero-shot"], max_tokens=16, replicate=1)
    res = run(cfg, ScriptedModel(replies.steady))
    tables = {"t": pd.DataFrame({"x": [1]})}
    out = tmp_path / "out"

    def interrupt(name):
        if name == step:
            raise KeyboardInterrupt(f"interrupted at {name}")

    def figures():
        fig, ax = plt.subplots()
        ax.plot([0, 1])
        return {"f": fig}

    monkeypatch.setattr(result_module, "_step", interrupt)
    with pytest.raises(KeyboardInterrupt):
        res.write(out, tables, figures())
    assert not out.exists() and list(tmp_path.iterdir()) == []
    monkeypatch.setattr(result_module, "_step", lambda name: None)
    first = res.write(out, tables, figures())  # the rerun proceeds
    before = {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    assert {"records.parquet", "replicate.parquet", "run.json", "answers.txt"} <= {str(p) for p in before}
    (out / "records.overrides.jsonl").write_text('{"note": "a correction a person made"}\n')
    monkeypatch.setattr(result_module, "_step", interrupt)
    with pytest.raises(KeyboardInterrupt):
        res.write(out, {"t": pd.DataFrame({"x": [2]})}, figures())
    after = {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    assert after == {**before, Path("records.overrides.jsonl"): b'{"note": "a correction a person made"}\n'}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]  # nothing half-built beside it
    monkeypatch.setattr(result_module, "_step", lambda name: None)
    second = res.write(out, {"t": pd.DataFrame({"x": [2]})}, figures())
    assert read_log(out).run_id == second.log.run_id == first.log.run_id  # the same execution written again
    assert (out / "records.overrides.jsonl").is_file()  # a person's file goes on to the new folder
    assert pd.read_csv(out / "tables" / "t.csv")["x"].tolist() == [2]


def test_a_comparison_that_fails_at_its_figures_leaves_nothing_and_its_rerun_proceeds(tmp_path, data_dir):
    """compare_runs once wrote records.parquet and tables/ before its figures, and a failure there left a folder
    without run.json that every later run refused ("is there without a run log")."""
    from olakit.analysis.compare import CompareConfig, compare_runs
    from olakit.analysis.report import report

    result = compare_runs(CompareConfig(sources=[str(REPO / "imports" / "pot_aqua.yaml")], n_boot=20))
    tables = report(result)

    class Broken:  # a figure whose drawing fails, as a full disk or a bad font does
        def get_tightbbox(self, *a, **k):
            raise OSError("no space left on device")

        suptitle = savefig = get_tightbbox

    out = tmp_path / "cmp"
    with pytest.raises(OSError, match="no space left"):
        result.write(out, tables, {"accuracy_intervals": Broken()})
    assert not out.exists() and list(tmp_path.iterdir()) == []
    result.write(out, tables)  # not refused
    assert read_log(out).kind == "compare" and (out / "tables" / "paired_tests.csv").is_file()


def test_plan_after_a_registered_geek_run(tmp_path, monkeypatch, capsys):
    """`olakit plan --after RUN` on a GEEK run died with KeyError: 'template' (it assumed OlaGPT records)."""
    monkeypatch.setenv("OLAKIT_BASE_URL", "scripted://tests.replies:geek_notebook")
    monkeypatch.setenv("OLAKIT_MODEL", "scripted")
    family = tmp_path / "family.yaml"
    family.write_text('comparisons: ["+RE vs CoT"]\n')
    out = tmp_path / "g"
    argv = ["geek", "-n", "3", "--rows", "CoT,+RE", "--out", str(out), "--registration", str(family), "--n-boot", "20"]
    assert main(argv) == 0
    capsys.readouterr()
    assert main(["plan", "--after", str(out), "--comparisons", "CoT vs +RE"]) == 0
    printed = capsys.readouterr().out
    registered = pd.read_csv(out / "tables" / "registered.csv").iloc[0]
    assert f"confirmatory: +RE vs CoT: {registered['verdict']}" in printed  # the verdict the run itself wrote
    assert "exploratory: CoT vs +RE: exploratory (not registered)" in printed


def test_export_of_a_run_on_another_split_reads_that_split(tmp_path, scripted, capsys):
    """`olakit export` of a run on AQuA's dev split failed with "2 records' questions are not loaded": the log's
    config was read with fresh defaults (split: test). The log's dataset is what the run read: dev, its file, its
    sha256."""
    out = tmp_path / "dev"
    argv = ["run", "--split", "dev", "-n", "2", "--templates", "ST", "--strategies", "zero-shot", "--out", str(out)]
    assert main(argv) == 0
    ref = read_log(out).dataset
    assert (ref.dataset, ref.split) == ("aqua", "dev") and ref.file.endswith("aqua/dev.json") and len(ref.sha256) == 64
    assert main(["export", str(out), "--out", str(tmp_path / "dev.jsonl")]) == 0
    lines = [json.loads(x) for x in (tmp_path / "dev.jsonl").read_text().splitlines()]
    dev = [json.loads(x) for x in Path(ref.file).read_text().splitlines()]
    assert {x["input"]["raw"] for x in lines} == {dev[0]["question"], dev[1]["question"]}
    # the default split's run names test, resolved, never None
    assert main(["run", "-n", "1", "--templates", "ST", "--strategies", "zero-shot", "--out", str(tmp_path / "t")]) == 0
    assert read_log(tmp_path / "t").dataset.split == "test"


def test_a_family_registered_at_001_is_judged_and_powered_at_001(tmp_path, scripted, capsys):
    """A registration's alpha was used for its verdicts only: the run's power, its significant column and the printed
    sentences said 0.05. Now its level is the run's analysis alpha everywhere."""
    family = tmp_path / "family.yaml"
    family.write_text('comparisons: ["ST:zero-shot vs turbo:zero-shot"]\nalpha: 0.01\n')
    out = tmp_path / "run"
    argv = ["run", "-n", "3", "--templates", "turbo,ST", "--strategies", "zero-shot", "--max-tokens", "16",
            "--registration", str(family), "--out", str(out)]  # fmt: skip
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert "exact McNemar with Holm at 0.01 (each planned at 0.00333" in printed
    assert "registered comparisons (Holm at 0.01;" in printed and "at 0.05" not in printed
    log = read_log(out)
    assert log.analysis["alpha"] == 0.05  # the run's own setting as given; the family's level judges it
    tests = pd.read_csv(out / "tables" / "paired_tests.csv")
    assert (tests["significant"] == (tests["p_mcnemar_holm"] < 0.01)).all()
    assert main([*argv[:-2], "--alpha", "0.05", "--out", str(tmp_path / "both")]) == 0  # the default: no conflict
    assert main([*argv[:-2], "--alpha", "0.1", "--out", str(tmp_path / "conflict")]) == 2
    assert "alpha=0.1 but the registration" in capsys.readouterr().err and not (tmp_path / "conflict").exists()


def test_two_runs_in_one_kernel_list_only_their_own_data_files(data_dir):
    """A process-wide list of the files read fed every log: a notebook kernel's second run listed the files only its
    first had read."""
    from olakit.geek.config import GeekConfig
    from olakit.geek.run import run_geek
    from olakit.olagpt.config import OlaGPTConfig
    from olakit.olagpt.run import run

    model = ScriptedModel(replies.steady)
    first = run(OlaGPTConfig(n_questions=1, templates=["ST"], strategies=["zero-shot"]), model)
    second = run_geek(GeekConfig(n_questions=1, rows=["zero-shot"]), model)
    names = lambda log: {str(Path(p).relative_to(data_dir)) for p in log.data}  # noqa: E731
    assert names(first.log) == {"aqua/test.json"}
    assert "aqua/test.json" not in names(second.log) and "strategyqa/dev.json" in names(second.log)
    third = run(OlaGPTConfig(n_questions=1, templates=["ST"], strategies=["zero-shot"]), model)
    assert names(third.log) == {"aqua/test.json"}  # read again, listed again


def test_a_log_with_keys_this_olakit_does_not_know_is_an_error_naming_them(tmp_path, scripted):
    from olakit.errors import DataError
    from olakit.result import read_result

    out = tmp_path / "run"
    assert main(["run", "-n", "1", "--templates", "ST", "--strategies", "zero-shot", "--out", str(out)]) == 0
    doc = json.loads((out / "run.json").read_text())
    for where, changed in (
        ("keys this olakit does not know: colour", {**doc, "colour": "blue"}),
        ("roles.answerer: keys this olakit does not know: api_key", {**doc, "roles": {"answerer": {
            **doc["roles"]["answerer"], "api_key": "x"}}}),
        ("extra keys this olakit does not know for its kind: recall", {**doc, "extra": {**doc["extra"], "recall": {}}}),
        ("run log format 1", {**doc, "format": 1}),
    ):  # fmt: skip
        (out / "run.json").write_text(json.dumps(changed))
        with pytest.raises(DataError, match=where):
            read_result(out)
    (out / "run.json").write_text(json.dumps(doc))
    assert read_result(out).log.dataset.split == "test"


def test_a_folder_moved_aside_by_a_writer_that_died_is_put_back(tmp_path, scripted):
    """The writer's one rename where the system can exchange two folders; where it cannot, the old folder is moved
    aside first, and a writer that died between the two renames leaves it there: the next write puts it back."""
    from olakit.data.files import recover_folder

    out = tmp_path / "run"
    assert main(["run", "-n", "1", "--templates", "ST", "--strategies", "zero-shot", "--out", str(out)]) == 0
    aside = tmp_path / ".run.replaced-0000"
    shutil.move(out, aside)
    recover_folder(out)
    assert (out / "run.json").is_file() and not aside.exists()
