"""Every notebook runs through papermill on a tiny slice, and is committed clean (first cell tagged parameters,
no outputs, no secret among the parameters)."""

import json
import re
from pathlib import Path

import pandas as pd
import pytest

from olakit.data.provenance import SECRET_NAME
from olakit.runlog import history

pytestmark = pytest.mark.slow


NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"
ALL = sorted(p.name for p in NOTEBOOKS.glob("*.ipynb"))


def test_every_notebook_is_here():
    assert ALL == [
        "active_learning.ipynb",
        "answer_stages.ipynb",
        "compare_runs.ipynb",
        "explore.ipynb",
        "geek_ablation.ipynb",
        "method.ipynb",
        "note_strategy.ipynb",
        "notes_count.ipynb",
        "reasoning_effort.ipynb",
        "reproduce_ekar.ipynb",
        "reproduce_olagpt.ipynb",
        "review_loop.ipynb",
        "template_count.ipynb",
        "tools_ablation.ipynb",
        "variance.ipynb",
        "vote_type.ipynb",
    ]


@pytest.mark.parametrize("name", ALL)
def test_committed_clean(name):
    import nbformat
    import papermill as pm

    nb = nbformat.read(NOTEBOOKS / name, as_version=4)
    assert nb.cells[0].cell_type == "code" and "parameters" in nb.cells[0].metadata.get("tags", [])
    assert all(not c.get("outputs") and c.get("execution_count") is None for c in nb.cells if c.cell_type == "code")
    names = re.findall(r"^(\w+)\s*=", nb.cells[0].source, re.M)
    assert names and not [n for n in names if SECRET_NAME.search(n)]
    # papermill sees every parameter (a second "=" on a line, even in a comment, hides it from inspect_notebook,
    # and so from the manifest)
    assert list(pm.inspect_notebook(str(NOTEBOOKS / name))) == names


def run(name, tmp_path, **params):
    """NAME run by papermill with ``params``: (its out_dir, the executed notebook). papermill and nbformat are
    imported here, not at the top, as in tests/test_eee.py: they import jsonschema, whose import builds
    rfc3987_syntax's parsers (about 1.1 CPU s), and every worker of make test collects this file."""
    import nbformat
    import papermill as pm

    out = tmp_path / "out"
    executed = tmp_path / f"executed-{name}"
    pm.execute_notebook(
        str(NOTEBOOKS / name),
        str(executed),
        kernel_name="python3",
        progress_bar=False,
        parameters={"out_dir": str(out), **params},
    )
    return out, nbformat.read(executed, as_version=4)


def test_reproduce_olagpt(tmp_path, data_dir):
    out, nb = run("reproduce_olagpt.ipynb", tmp_path, data_dir=str(data_dir), n_boot=100, tie="random", analysis_seed=3)
    assert any("injected-parameters" in c.metadata.get("tags", []) for c in nb.cells)
    images = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs if "image/png" in o.get("data", {})]
    assert len(images) == 3
    acc = pd.read_csv(out / "tables" / "accuracy.csv", index_col=0)
    assert acc.shape == (7, 4)  # 5 templates, the regex vote and the recorded LLM vote
    assert len(list((out / "figures").glob("*.png"))) == 3
    # `make paper` twice: the second run of the notebook found its folder held by the run the function logged
    run("reproduce_olagpt.ipynb", tmp_path, data_dir=str(data_dir), n_boot=100, tie="random", analysis_seed=3)
    logs = history(out)
    assert [lg.door for lg in logs] == ["notebook:reproduce_olagpt"] * 2 and logs[0].run_id != logs[1].run_id


def manifest(out):
    """The run log a notebook wrote (olakit.runlog), as JSON."""
    return json.loads((out / "run.json").read_text())


def test_template_count_on_recorded_slice(tmp_path):
    out, _ = run("template_count.ipynb", tmp_path, n_questions=12, strategies=["zero-shot", "combine"])
    t = pd.read_csv(out / "tables" / "template_count.csv")
    assert list(t["k"].unique()) == [1, 2, 3, 4, 5] and set(t["notes_strategy"]) == {"zero-shot", "combine"}
    assert (out / "figures" / "fig6_template_count.png").is_file() and (
        out / "figures" / "fig6_template_count.pdf"
    ).is_file()
    m = manifest(out)
    assert m["door"] == "notebook:template_count" and m["extra"]["source"] == "olagpt-recorded"
    assert m["outputs"]["records"]["models"] == ["gpt-3.5-turbo"] and m["parameters"]["n_questions"] == 12
    assert (
        m["packages"]["pandas"] and m["analysis"]["analysis_seed"] == 0 and m["outputs"]["tables"] == ["template_count"]
    )
    assert m["outputs"]["figures"]["fig6_template_count"] == ["figures/fig6_template_count.png",
                                                              "figures/fig6_template_count.pdf"]  # fmt: skip


def test_notes_count_on_recorded_slice(tmp_path):
    out, _ = run("notes_count.ipynb", tmp_path, source="recorded", n_questions=20, n_boot=100)
    t = pd.read_csv(out / "tables" / "notes_count.csv")
    # recorded ST runs have n = 0 (zero-shot), 1, 3 and 5 notes per strategy
    assert sorted(set(t["n_notes"])) == [0, 1, 3, 5] and set(t["notes_strategy"]) == {"random", "retrieval", "combine"}
    assert (t["n"] == 20).all() and len(t) == 3 * 4
    m = manifest(out)
    assert m["outputs"]["records"]["questions"] == 20 and m["config"]["unparsed"] == "raw"
    assert m["parameters"]["source"] == "recorded"


def test_note_strategy_with_statistics_on_recorded_slice(tmp_path):
    import hashlib

    family = tmp_path / "family.yaml"  # a pre-registered family of two: Holm over these two alone
    family.write_text('comparisons: ["DST:retrieval vs turbo:zero-shot", "regex_vote:retrieval vs ST:retrieval"]\n')
    out, _ = run("note_strategy.ipynb", tmp_path, n_questions=25, n_boot=100, strategies=["zero-shot", "retrieval"],
                 registration=str(family))  # fmt: skip
    tests = pd.read_csv(out / "tables" / "paired_tests.csv")
    confirmatory = tests[tests["role"] == "confirmatory"]
    assert len(confirmatory) == 2 and (tests["role"] == "exploratory").sum() == len(tests) - 2
    low, high = sorted(confirmatory["p_mcnemar"])  # Holm over two, by hand: 2 x the smaller, then the running max
    assert sorted(confirmatory["p_holm_family"]) == pytest.approx([min(1, 2 * low), min(1, max(2 * low, high))])
    assert len(pd.read_csv(out / "tables" / "registered.csv")) == 2
    assert manifest(out)["registration"]["sha256"] == hashlib.sha256(family.read_bytes()).hexdigest()
    cells = 2 * 6  # 5 templates + the vote, two strategies
    m = cells * (cells - 1) // 2
    assert len(tests) == m
    # Holm's first step, by hand: the smallest raw p-value is multiplied by the number of pairs (capped at 1)
    first = tests.loc[tests["p_mcnemar"].idxmin()]
    assert first["p_mcnemar_holm"] == pytest.approx(min(1.0, m * first["p_mcnemar"]))
    for name in (
        "fleiss_kappa",
        "cohen_kappa",
        "error_overlap",
        "leave_one_out",
        "cost_accuracy",
        "similarity_bands",
        "holm_matrix",
    ):
        assert (out / "tables" / f"{name}.csv").is_file(), name
    for fig in ("table3_holm_matrix", "pareto_cost_accuracy", "template_kappa"):
        assert (out / "figures" / f"{fig}.pdf").is_file()


@pytest.mark.real_model
def test_vote_type_with_a_real_llm_vote_over_recorded_outputs(tmp_path):
    out, _ = run(
        "vote_type.ipynb",
        tmp_path,
        n_questions=10,
        strategies=["zero-shot"],
        llm_vote_questions=1,
        audit=False,
        max_tokens=12,  # every stage's: the notebook's only calls are the LLM vote's
        n_boot=100,
    )
    t = pd.read_csv(out / "tables" / "vote_type.csv")
    assert set(t["method"]) == {"regex_upper", "regex_lower", "regex_vote", "llm_vote"}
    # the embedded model re-votes the first question; the other 9 keep the authors' recorded LLM vote
    assert t.loc[t["method"] == "llm_vote", "n"].item() == 10 and t.loc[t["method"] == "regex_vote", "n"].item() == 10
    m = manifest(out)
    from olakit.llm.local import DEFAULT_MODEL

    assert m["outputs"]["records"]["models"] == sorted(["gpt-3.5-turbo", DEFAULT_MODEL["name"]])
    vote = m["parts"]["llm_vote"]  # the embedded model's vote is a part of this result, with its own calls
    assert vote["roles"]["answerer"]["embedded"] and vote["calls"]["answerer"]["paid"] >= 1


def test_explore_runs_through_papermill(tmp_path):
    _, nb = run(
        "explore.ipynb",
        tmp_path,
        records_path=str(tmp_path / "r" / "records.parquet"),
        notes_path=str(tmp_path / "r" / "notes.jsonl"),
        geek_records_path=str(tmp_path / "no-geek.parquet"),
        review_records_path=str(tmp_path / "no-review.parquet"),
    )
    assert (tmp_path / "r" / "records.parquet").is_file()  # the OlaGPT outputs imported beside the overrides file
    printed = "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.outputs)
    assert "no GEEK records at" in printed and "no review-loop records at" in printed
    widgets = [
        o
        for c in nb.cells
        if c.cell_type == "code"
        for o in c.outputs
        if "application/vnd.jupyter.widget-view+json" in o.get("data", {})
    ]
    assert len(widgets) == 2


def test_compare_runs_on_pot_and_the_olagpt_recorded_runs_with_one_question_across_them(tmp_path, data_dir):
    from olakit.data.recorded import import_olagpt
    from olakit.data.records import save_records
    from olakit.notebook.explorers.questions import open_explorers

    recorded = tmp_path / "olagpt"
    recorded.mkdir()
    save_records(import_olagpt(data_dir, parts=("templates",))[lambda d: d["notes_strategy"] == "zero-shot"],
                 recorded / "records.parquet")  # fmt: skip
    pot = str(Path(__file__).resolve().parent.parent / "imports" / "pot_aqua.yaml")
    family = tmp_path / "family.yaml"  # registered before the comparison: two of its 36 pairs
    family.write_text('comparisons: ["PoT vs GPT-4 CoT", "DST vs turbo"]\nalpha: 0.05\n')
    out, nb = run("compare_runs.ipynb", tmp_path, sources=[pot, str(recorded)], labels=["PoT", "OlaGPT"],
                  registration=str(family))  # fmt: skip
    conditions = pd.read_csv(out / "tables" / "conditions.csv")
    names = conditions["condition"].tolist()  # each named by what tells it apart: its run, its template
    assert names[:4] == ["PoT", "PoT-SC", "PoT zero-shot", "GPT-4 CoT"]
    assert sorted(names[4:]) == ["DST", "DT", "PT", "ST", "turbo"]
    assert set(conditions.loc[:3, "model"]) == {"code-davinci-002", "gpt-4"}
    assert (conditions["n"] == 253).all()  # the questions every run answered: PoT's files lack test-253
    assert pd.read_csv(out / "tables" / "left_out.csv")["question_id"].tolist() == ["test-253"]
    tests = pd.read_csv(out / "tables" / "paired_tests.csv")
    assert len(tests) == 36  # nine conditions, no vote across them (none asked for): every pair, Holm over the 36
    # the registered two are confirmatory, Holm over them alone (worked here), the other 34 exploratory
    mine = tests[tests["role"] == "confirmatory"]
    assert len(mine) == 2 and (tests["role"] == "exploratory").sum() == 34
    assert {frozenset(p) for p in zip(mine["a"], mine["b"])} == {
        frozenset(("PoT", "GPT-4 CoT")),
        frozenset(("DST", "turbo")),
    }
    low, high = sorted(mine["p_mcnemar"])
    assert sorted(mine["p_holm_family"]) == pytest.approx([min(1, 2 * low), max(min(1, 2 * low), high)])
    registered = pd.read_csv(out / "tables" / "registered.csv")
    assert list(registered["comparison"]) == ["PoT vs GPT-4 CoT", "DST vs turbo"]
    assert manifest(out)["registration"]["changes"] == []
    widgets = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs
               if "application/vnd.jupyter.widget-view+json" in o.get("data", {})]  # fmt: skip
    assert len(widgets) == 3
    # the grid's statistics shown: the tie group (each condition once), the variance and the decision tables
    printed = "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.outputs)
    assert all(f"{name}\n" in printed for name in ("tie_group", "variance", "decision"))
    assert sorted(pd.read_csv(out / "tables" / "tie_group.csv")["cell"]) == sorted(names)
    # one question across the nine runs, as the notebook's explorer shows it
    questions, _ = open_explorers(out / "records.parquet", tmp_path / "notes.jsonl", data_dir)
    questions.question.value = "test-139"
    view = questions.view.value
    assert all(f"<td>{name}" in view for name in conditions["condition"]) and "<b>gold</b>: E" in view
    assert "olakit-question" in view and "code-davinci-002" in questions.header.value
    assert "confirmatory" in questions.header.value and "PoT vs GPT-4 CoT [confirmatory]: " in view


def test_answer_stages_notebook_against_a_loopback_endpoint(tmp_path, monkeypatch):
    """The notebook's wiring, with a scripted endpoint that cuts every first answer off and answers the trigger with
    (B)."""
    monkeypatch.setenv("OLAKIT_BASE_URL", "scripted://tests.replies:cut_off_then_second_stage")
    monkeypatch.setenv("OLAKIT_MODEL", "scripted")
    out, _ = run("answer_stages.ipynb", tmp_path, n_questions=3, templates=["turbo", "ST"], n_boot=50)
    t = pd.read_csv(out / "tables" / "answer_stages.csv").set_index("template")
    assert t.loc["all", "unparsed_rate_1"] == 1.0 and t.loc["all", "unparsed_rate_2"] == 0.0
    assert t.loc["turbo", "second_calls"] == 3 and t.loc["all", "cut_off_1"] == 6
    audit = pd.read_csv(out / "tables" / "extraction_audit.csv")
    assert (
        audit.loc[audit["stages"] == 1, "cut_off"].sum() == 6
        and audit.loc[audit["stages"] == 2, "second_stage"].sum() == 6
    )


def test_geek_ablation_notebook_against_a_scripted_endpoint(tmp_path, monkeypatch):
    """The notebook's wiring with scripted endpoints (the judge role its own): every row, the OlaGPT cross-method
    row, the judge, tables."""
    monkeypatch.setenv("OLAKIT_BASE_URL", "scripted://tests.replies:geek_notebook")
    monkeypatch.setenv("OLAKIT_MODEL", "scripted")
    monkeypatch.setenv("OLAKIT_JUDGE_BASE_URL", "scripted://tests.replies:first_shown")  # a role of its own
    monkeypatch.setenv("OLAKIT_JUDGE_MODEL", "judge")
    family = tmp_path / "family.yaml"  # GEEK's rows, registered: +RE against CoT, Full against zero-shot
    family.write_text('comparisons: ["+RE vs CoT", "Full vs zero-shot"]\nn_questions: 2\n')
    out, nb = run("geek_ablation.ipynb", tmp_path, n_questions=2, branches=2, k=1, n_boot=50, judge_questions=2,
                  registration=str(family))  # fmt: skip
    t2 = pd.read_csv(out / "tables" / "table2.csv").set_index("method")
    assert (
        list(t2.index)[:5] == ["zero-shot", "CoT", "+De", "+RE", "Full"]
        and "OlaGPT regex_vote (5 templates)" in t2.index
    )
    assert (t2["n"] == 2).all()
    judge = pd.read_csv(out / "tables" / "judge.csv").iloc[0]
    assert judge["equal"] == 1.0 and judge["position_bias_first"] == 1.0  # both orders disagree: a tie, every time
    m = manifest(out)
    assert m["outputs"]["records"]["questions"] == 2 and set(m["parts"]) == {"judge", "olagpt_row"}
    assert m["parts"]["judge"]["calls"]["judge"]["requests"] == 4 and "judge" in m["extra"]
    for name in ("paired_tests", "cost", "actions", "steps"):
        assert (out / "tables" / f"{name}.csv").is_file()
    tests = pd.read_csv(out / "tables" / "paired_tests.csv")
    assert (tests["role"] == "confirmatory").sum() == 2 and (tests["role"] == "exploratory").sum() == len(tests) - 2
    assert list(pd.read_csv(out / "tables" / "registered.csv")["comparison"]) == ["+RE vs CoT", "Full vs zero-shot"]
    assert m["registration"]["settings"]["comparisons"] == ["+RE vs CoT", "Full vs zero-shot"]
    text = "\n".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.outputs)
    assert "power: 10 pairs of rows" in text and "2 questions cannot decide any pair, whatever the answers" in text
    assert "registered comparisons (Holm at 0.05" in text and "+RE vs CoT: no estimate" in text  # before any call


def test_active_learning_notebook_against_a_scripted_endpoint(tmp_path, monkeypatch, data_dir):
    """Libraries written four ways on AQuA dev's first 6 questions and the authors' 81 notes, side by side. Every
    answer is B, so the error book is the pool questions whose gold is not B (read here from the data file); a
    self-correction retry answers A at the second hint, so that way's notes are the error book's questions with gold
    A; every check answers B, so only notes of gold B questions could pass: none."""
    monkeypatch.setenv("OLAKIT_BASE_URL", "scripted://tests.replies:active_learning")
    monkeypatch.setenv("OLAKIT_MODEL", "scripted")
    out, _ = run("active_learning.ipynb", tmp_path, n_questions=2, pool=6, r=2, n_boot=50)
    golds = [json.loads(line)["correct"] for line in (data_dir / "aqua" / "dev.json").read_text().splitlines()[:6]]
    book = sum(g != "B" for g in golds)
    t = pd.read_csv(out / "tables" / "libraries.csv").set_index("library")
    assert list(t.index) == ["dataset", "llm", "self-correction", "refine", "authors"]
    assert (t.loc[["dataset", "llm", "self-correction"], "pool"] == 6).all()
    assert t.loc["dataset", "error_book"] == book and t.loc["dataset", "notes"] == book == t.loc["refine", "notes"]
    assert t.loc["self-correction", "notes"] == sum(g == "A" for g in golds) and t.loc["authors", "notes"] == 81
    assert (t.loc[["dataset", "llm", "self-correction", "refine"], "passed_check"] == 0).all()
    # calls: 6 question types + 12 answers + one check a note; llm: + one note a question; refine: one a draft
    assert t.loc["dataset", "build_calls"] == 6 + 12 + book and t.loc["refine", "build_calls"] == 2 * book
    tests = pd.read_csv(out / "tables" / "paired_tests.csv")
    assert len(tests) == 10 and "p_mcnemar_holm" in tests  # five libraries, every pair, Holm over all
    assert (out / "library_self-correction.jsonl").is_file() and manifest(out)["door"] == "notebook:active_learning"


def test_reproduce_ekar_against_an_endpoint_with_known_answers(tmp_path, monkeypatch, data_dir):
    """The E-KAR half on 12 validation questions: each template answers by a rule (tests/replies.py ekar_rule), so
    every cell of Tables 3, 4, 7 and 8 is worked out here by hand from the data file's gold labels: accuracy per
    template and strategy, the six-template consistency (c = 1..6), Table 7's mean and range over the five
    templates (turbo left out), the regex vote in the authors' order (DT, DST, PT, ST, turbo, then AT; the first of
    tied labels wins), its bounds, and the stand-in label everywhere."""
    from collections import Counter

    from tests.replies import ekar_rule

    monkeypatch.setenv("OLAKIT_BASE_URL", "scripted://tests.replies:ekar_known")
    monkeypatch.setenv("OLAKIT_MODEL", "scripted")
    n = 12
    out, nb = run("reproduce_ekar.ipynb", tmp_path, n_questions=n, pool=8, r=1, n_boot=50)
    rows = [json.loads(line) for line in (data_dir / "ekar_chinese" / "validation.json").read_text().splitlines()][:n]
    golds = [r["answerKey"] for r in rows]
    order = ["DT", "DST", "PT", "ST", "turbo", "AT"]
    label = f"validation ({n}) vs the paper's test (335)"
    acc = pd.read_csv(out / "tables" / "accuracy.csv", index_col=0)
    consistency = pd.read_csv(out / "tables" / "consistency.csv", index_col=0)
    bounds = pd.read_csv(out / "tables" / "bounds.csv").set_index(["method", "notes_strategy"])
    precision = pd.read_csv(out / "tables" / "precision.csv", index_col=0)
    for strategy in ("zero-shot", "random", "retrieval", "combine"):
        notes = strategy != "zero-shot"
        answers = [{t: ekar_rule(t, i, g, notes) for t in order} for i, g in enumerate(golds)]
        for t in order:
            assert acc.loc[t, strategy] == pytest.approx(sum(a[t] == g for a, g in zip(answers, golds)) / n), (
                t,
                strategy,
            )
        votes, tops, upper, lower = [], Counter(), 0, 0
        for a, g in zip(answers, golds):
            counts = Counter(a[t] for t in order)  # first-seen order: the authors' vote order
            top = max(counts.values())
            votes.append(next(label for label in counts if counts[label] == top))
            tops[top] += 1
            right, wrong = counts.get(g, 0), max((c for x, c in counts.items() if x != g), default=0)
            upper += right >= wrong and right > 0
            lower += right > wrong
        assert acc.loc["regex_vote", strategy] == pytest.approx(sum(v == g for v, g in zip(votes, golds)) / n)
        for c in range(1, 7):
            assert consistency.loc[c, strategy] == tops[c], (c, strategy)
        mine = [sum(a[t] == g for a, g in zip(answers, golds)) / n for t in order if t != "turbo"]  # Table 7
        assert precision.loc["Mean", strategy] == pytest.approx(sum(mine) / 5)
        assert precision.loc["Range", strategy] == pytest.approx(max(mine) - min(mine))
        assert bounds.loc[("regex_upper", strategy), "correct"] == upper
        assert bounds.loc[("regex_lower", strategy), "correct"] == lower
    cmp = pd.read_csv(out / "tables" / "paper_comparison.csv")
    at = cmp[(cmp["table"] == "table3") & (cmp["row"] == "AT") & (cmp["column"] == "zero-shot")].iloc[0]
    assert at["paper"] == 0.3851 and at["recomputed"] == 1.0  # AT answers every question right here
    assert (cmp["compared_on"] == label).all() and (acc["compared_on"] == label).all()
    m = manifest(out)
    assert m["config"]["dataset"] == "ekar_zh" and "notes_build" in m["parts"] and (out / "notes.jsonl").is_file()
    text = "\n".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.outputs)
    assert f"E-KAR, {label}" in text and len(list((out / "figures").glob("*.png"))) == 3


def test_a_misspelled_parameter_stops_the_notebook_with_its_name(tmp_path):
    """papermill only warns about a name the parameters cell lacks; the notebook refuses it, naming what it takes."""
    import papermill as pm

    with pytest.raises(pm.PapermillExecutionError, match=r"unknown parameters \['sorce'\]; template_count takes: "):
        run("template_count.ipynb", tmp_path, sorce="live", n_questions=2)
    with pytest.raises(pm.PapermillExecutionError, match=r"n_questions=-1: input should be greater than or equal to 1"):
        run("template_count.ipynb", tmp_path, n_questions=-1)
    assert not (tmp_path / "out").exists()


def test_parameter_names_are_the_ones_papermill_finds_in_every_notebook():
    import papermill as pm

    from olakit.notebook.parameters import parameter_names

    notebooks = sorted((Path(__file__).resolve().parent.parent / "notebooks").glob("*.ipynb"))
    assert len(notebooks) >= 9
    for nb in notebooks:
        assert parameter_names(nb) == list(pm.inspect_notebook(str(nb))), nb.name


def test_a_notebook_run_is_made_again_from_its_log(tmp_path):
    """`olakit again` on a notebook's folder gives the `olakit notebook` call (every parameter, settings included)
    that makes the same records, and papermill's "Passed unknown parameter" warning for each setting the parameters
    cell does not list is gone (the names were checked against the notebook's config before the kernel started)."""
    import shlex
    import subprocess
    import sys

    from olakit.runlog import command, read_log

    out, _ = run("template_count.ipynb", tmp_path, n_questions=6, strategies=["zero-shot"], tie="random")
    log = read_log(out)
    assert log.door == "notebook:template_count" and log.parameters["tie"] == "random"
    words = shlex.split(command(log, tmp_path / "again"))
    assert words[:3] == ["olakit", "notebook", "template_count"]
    assert words[-2:] == ["--output", f"{tmp_path}/again.ipynb"]
    done = subprocess.run(
        [sys.executable, "-m", "olakit.cli", *words[1:]],
        cwd=NOTEBOOKS.parent, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert "unknown parameter" not in done.stdout + done.stderr
    assert "notebook template_count: ok in " in done.stderr and done.stdout.startswith("executed: ")
    again = read_log(tmp_path / "again")
    assert again.identity == log.identity and again.outputs["records"] == log.outputs["records"]
    first, second = (pd.read_csv(p / "tables" / "template_count.csv") for p in (out, tmp_path / "again"))
    pd.testing.assert_frame_equal(first, second)


def test_the_notebook_door_takes_settings_in_their_flag_forms_and_checks_names_first(tmp_path):
    """`olakit notebook NAME -p ...`: a setting as its flag takes it ("2", "none", "a,b"), a notebook parameter as a
    YAML value; a misspelled name or a bad value is one error before any kernel starts."""
    from olakit.cli import main
    from olakit.notebook.jobs import notebook_path
    from olakit.notebook.parameters import from_text

    path = notebook_path("template_count")
    given = from_text(path, [("n_questions", "none"), ("strategies", "zero-shot,random"), ("source", "recorded")])
    assert given == {"n_questions": None, "strategies": ["zero-shot", "random"], "source": "recorded"}
    # a setting reaches the kernel as its field's value (issue 53: `-p n_questions 2` arrived as the string "2")
    assert from_text(path, [("answer_stages", "2"), ("source", "[1, 2]")]) == {"answer_stages": 2, "source": [1, 2]}
    assert from_text(path, [("n_questions", "2"), ("n_notes", "1,3")]) == {"n_questions": 2, "n_notes": [1, 3]}
    out = ["--output", str(tmp_path / "x.ipynb")]
    assert main(["notebook", "template_count", "-p", "sorce", "live", *out]) == 2
    assert main(["notebook", "template_count", "-p", "answer_stages", "3", *out]) == 2
    assert main(["notebook", "nope", *out]) == 2
    assert not (tmp_path / "x.ipynb").exists()  # nothing ran
