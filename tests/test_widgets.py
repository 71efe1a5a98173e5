"""The explorers with real ipywidgets objects, on hand-made records whose answers are known; corrections and
draft notes go to real files and every analysis sees the corrections."""

import json

import pytest

from olakit.analysis.tables import compute_tables
from olakit.data.records import load_records, save_records, to_frame
from olakit.notebook.explorers.heatmaps import HeatmapExplorer
from olakit.notebook.explorers.questions import QuestionExplorer
from olakit.olagpt.notes import NotesLibrary
from olakit.settings import Analysis
from olakit.types import Question
from tests.toys import record

OPTS = {"A": "one", "B": "two", "C": "three"}
# question -> answers of T1, T2, T3 (gold A everywhere)
ANSWERS = {
    "q1": ("A", "A", "A"),  # all right, no split
    "q2": ("B", "B", "A"),  # vote wrong (B), one template right
    "q3": ("A", None, "C"),  # split, one unparsed, vote A (first of the tie)
    "q4": ("C", "C", "C"),
}  # all wrong alike


def records():
    rows = [
        record(qid, t, a, dataset="aqua", raw_output=f"{t} reasoning for {qid}", question_type="toy")
        for qid, answers in ANSWERS.items()
        for t, a in zip(("T1", "T2", "T3"), answers)
    ]
    return to_frame(rows)


QUESTIONS = {
    qid: Question(id=qid, dataset="aqua", text=f"What is {qid}?", options=OPTS, gold="A", rationale=f"because {qid}")
    for qid in ANSWERS
}


@pytest.fixture
def saved(tmp_path):
    path = tmp_path / "records.parquet"
    save_records(records(), path)
    return path


def test_filters_pick_the_questions_worked_out_by_hand(saved):
    qe = QuestionExplorer(load_records(saved), QUESTIONS, records_path=saved)
    assert list(qe.question.options) == ["q1", "q2", "q3", "q4"]
    qe.filter.value = "split"
    assert list(qe.question.options) == ["q2", "q3"]
    qe.filter.value = "vote_wrong_some_right"
    assert list(qe.question.options) == ["q2"]
    qe.filter.value = "unparsed"
    assert list(qe.question.options) == ["q3"] and qe.count.value.strip().endswith("1 question")


def test_view_shows_answers_votes_gold_and_agreement(saved):
    qe = QuestionExplorer(load_records(saved), QUESTIONS, records_path=saved)
    qe.question.value = "q2"
    v = qe.view.value
    assert "What is q2?" in v and "<b>gold</b>: A" in v and "<b>regex vote</b>: B" in v
    assert "2 of 3 templates say B (wrong; gold A); 1 correct" in v
    assert "T3 reasoning for q2" in v and v.count("&#10007;") == 2 and v.count("&#10003;") == 1


def test_correction_is_saved_beside_the_records_and_applied_by_every_analysis(saved):
    qe = QuestionExplorer(load_records(saved), QUESTIONS, records_path=saved)
    qe.question.value = "q2"
    qe.fix_template.value, qe.fix_label.value, qe.fix_reason.value = "T1", "A", "wrote 'option one' in words"
    qe.fix_button.click()
    assert "saved: T1 on q2 is now A" in qe.status.value
    assert "<b>regex vote</b>: A" in qe.view.value and "(corrected)" in qe.view.value
    line = json.loads((saved.parent / "records.overrides.jsonl").read_text().splitlines()[0])
    assert (line["question_id"], line["template"], line["extracted"]) == ("q2", "T1", "A")
    df = load_records(saved)  # every analysis loads records this way
    assert df["overridden"].sum() == 1
    tables = compute_tables(df, analysis=Analysis(n_boot=50))
    effect = tables["overrides"].iloc[0]
    assert (effect["overrides"], effect["records_changed"], effect["votes_changed"]) == (1, 1, 1)
    acc = tables["accuracy_ci"].set_index("method")
    assert acc.loc["T1", "correct"] == 3 and acc.loc["T1", "overrides"] == 1 and acc.loc["regex_vote", "correct"] == 3
    assert load_records(saved, apply_overrides=False)["correct"].sum() == records()["correct"].sum()
    # a label that is not an option, or no reason, is refused and nothing is written
    qe.fix_reason.value = ""
    qe.fix_button.click()
    assert "needs a reason" in qe.status.value
    assert len((saved.parent / "records.overrides.jsonl").read_text().splitlines()) == 1


def test_draft_note_from_a_wrong_question(saved, tmp_path):
    notes = tmp_path / "drafts.jsonl"
    qe = QuestionExplorer(load_records(saved), QUESTIONS, records_path=saved, notes_path=notes)
    qe.question.value = "q4"
    qe.note_button.click()
    lib = NotesLibrary.load(notes)
    assert len(lib) == 1
    n = lib.notes[0]
    assert (n.question, n.answer, n.explanation, n.llm_task_type) == ("What is q4?", "A", "because q4", "toy")
    assert n.error_reason == "answered C, C, C instead of A"
    qe.question.value = "q1"
    qe.note_button.click()
    assert "answered q1 correctly" in qe.status.value and len(NotesLibrary.load(notes)) == 1


def test_heatmap_cells_list_their_questions(saved):
    he = HeatmapExplorer(load_records(saved))
    # (templates correct, largest wrong group): q1 (3, 0), q2 (1, 2), q3 (1, 1), q4 (0, 3)
    cells = dict(he.cell.options)
    assert set(cells) == {
        "correct=0, wrong=3 (1 question)",
        "correct=1, wrong=2 (1 question)",
        "correct=1, wrong=1 (1 question)",
        "correct=3, wrong=0 (1 question)",
    }
    he.cell.value = cells["correct=1, wrong=2 (1 question)"]
    assert he.cell_questions() == ["q2"] and "q2" in he.listing.value
    he.metric.value = "agreement"
    # T1 vs T2 agree on q1, q2, q4 and differ on q3 (A vs unparsed)
    assert he.cell.options[0][0] == "T1 vs T2: 0.75"
    he.cell.value = he.cell.options[0][1]
    assert he.cell_questions() == ["q3"]
    he.subset.value = ("T1",)
    assert "at least two templates" in he.map.value


def test_trace_explorer_shows_steps_and_filters(tmp_path, data_dir):
    """GEEK traces from a scripted loopback run: the filters pick the questions worked out here, and the view shows
    each step, the retrieved paragraph and the answer against gold."""
    from olakit.geek.config import GeekConfig
    from olakit.geek.run import run_geek
    from olakit.llm import ScriptedModel
    from olakit.notebook.explorers.traces import TraceExplorer
    from olakit.retrieval.knowledge import read_corpus
    from tests.test_geek import PARAGRAPHS, scripted

    path = tmp_path / "albany.jsonl"
    path.write_text("".join(json.dumps(p) + "\n" for p in PARAGRAPHS))
    cfg = GeekConfig(n_questions=2, rows=("+De", "+RE"), corpus=str(path), k=1, max_steps=3)
    df = run_geek(cfg, llm=ScriptedModel(scripted)).records
    te = TraceExplorer(df, read_corpus(path))
    assert te.row.value == "+RE" and list(te.question.options) == list(df["question_id"].unique())
    te.filter.value = "wrong"
    assert list(te.question.options) == list(df[(df["row"] == "+RE") & ~df["correct"]]["question_id"])
    te.filter.value = "forced"  # max_steps 3: every +RE branch runs out of steps before the final answer
    assert len(te.question.options) == 2
    te.filter.value = "all"
    v = te.render()
    assert "select &rarr; retrieve" in v and "ga (" in v and "Albany, GA has around 75,000 people." in v
    assert f"<b>gold</b>: {df.iloc[0]['gold']}" in v and "budget exhausted" in v


def test_review_explorer_shows_history_and_where_the_answer_changed(tmp_path):
    from olakit.llm import ScriptedModel
    from olakit.notebook.explorers.reviews import ReviewExplorer
    from olakit.review.config import ReviewConfig
    from olakit.review.run import run_review
    from tests.test_review import graded_reply

    model = ScriptedModel(graded_reply)
    df = run_review(
        ReviewConfig(dataset="aqua", n_questions=1, max_iterations=2),
        llms={"answerer": model, "reviewer": model, "direct": model},
    ).records
    re_ = ReviewExplorer(df)
    assert re_.answers_by_iteration("test-0", "review-lite") == [(0, "A"), (1, "B"), (2, "B")]
    v = re_.render()
    assert "review 1</b>: accuracy 3" in v and "below threshold 4: revise" in v
    assert v.count("background:#fdd") == 1  # the answer changed at iteration 1 only
    assert "outline (2 steps)" in v and "Improved. Answer: B" in v


def test_linked_views_open_their_questions_in_the_question_explorer(saved):
    from olakit.answering.extract import UNPARSED_CAUSES
    from olakit.notebook.explorers.pairs import PairExplorer
    from olakit.notebook.explorers.questions import CAUSES, link

    df = load_records(saved)
    qe = QuestionExplorer(df, QUESTIONS, records_path=saved, about="door: run")
    he, pe = HeatmapExplorer(df), PairExplorer(df, rule=Analysis(n_boot=50))
    link(qe, he, pe)
    assert "3 templates" in qe.header.value and "model: m" in qe.header.value and "n = 4 questions" in qe.header.value
    # a Fig-12 cell: (1 correct, largest wrong group 2) is q2 alone
    he.cell.value = dict(he.cell.options)["correct=1, wrong=2 (1 question)"]
    he.open_button.click()
    assert list(qe.question.options) == ["q2"] and qe.filter.value == "selected"
    assert "1 correct, largest wrong group 2" in dict((v, k) for k, v in qe.filter.options)["selected"]
    # a McNemar pair's discordant questions: T1 right & T3 wrong on q3 only (q3: T1 A, T3 C); T3 right & T1 wrong: q2
    pe.pair.value = next(v for _, v in pe.pair.options if v == ("T1 | zero-shot", "T3 | zero-shot"))
    assert pe.discordant() == ["q3"]
    pe.side.value = 1
    pe.open_button.click()
    assert list(qe.question.options) == ["q2"]
    assert "T3 | zero-shot right, T1 | zero-shot wrong" in str(qe.filter.options)
    # why an answer is unparsed, said in words; the explorer knows every cause
    qe.filter.value = "unparsed"
    assert list(qe.question.options) == ["q3"] and set(CAUSES) == set(UNPARSED_CAUSES)
    cause = df[(df["question_id"] == "q3") & (df["template"] == "T2")]["unparsed_cause"].iloc[0]
    assert f"unparsed ({CAUSES.get(cause, 'cause unknown')})" in qe.view.value


def test_question_ids_in_numeric_order(tmp_path):
    rows = [record(f"test-{i}", t, "A", dataset="aqua") for i in (10, 2, 1) for t in ("T1", "T2")]
    qe = QuestionExplorer(to_frame(rows), {})
    assert list(qe.question.options) == ["test-1", "test-2", "test-10"]


def test_the_pair_explorer_marks_a_registered_family_confirmatory_and_lists_it_first(saved, tmp_path):

    from olakit.notebook.explorers.pairs import PairExplorer
    from olakit.registration import Registered, Registration, registration_of
    from olakit.runlog import RunLog

    df = load_records(saved)
    assert registration_of(RunLog(door="run")) is None
    family = Registered(Registration(comparisons=["T3:zero-shot vs T1:zero-shot"]), "f.yaml", "0" * 64, "now")
    assert registration_of(RunLog(door="run", registration=family.entry())) == family  # as the log holds it
    pe = PairExplorer(df, rule=Analysis(n_boot=50), registration=family)
    first, *rest = [label for label, _ in pe.pair.options]
    assert first.startswith("[confirmatory] T1 | zero-shot vs T3 | zero-shot: 1 / 1 discordant")
    assert rest and all(label.startswith("[exploratory] ") for label in rest)
    # one registered comparison: its family Holm p is its own exact p, 2 x P(Bin(2, 1/2) <= 1) capped at 1
    assert "Holm p = 1" in first and "confirmatory" in pe.table.value and "p_holm_family" in pe.table.value


def test_the_question_explorer_shows_a_registered_family_and_what_each_question_says_in_it(saved):
    """A registered run's question explorer (open_explorers reads the registration its run log holds) names the
    confirmatory comparisons in its header and, on each question, which side of each one it favours: worked out
    here from the records' own correct column."""
    from olakit.notebook.explorers.questions import open_explorers
    from olakit.registration import Registered, Registration
    from tests.toys import write_run

    df = load_records(saved)
    family = Registration(comparisons=["T3:zero-shot vs T1:zero-shot", "T9:zero-shot vs T1:zero-shot"])
    entry = Registered(family, "f.yaml", "0" * 64, "now").entry()
    folder = write_run(saved.parent / "registered", df, registration=entry)
    qe, _ = open_explorers(folder / "records.parquet", folder / "notes.jsonl")
    assert qe.registration.settings == family
    assert "confirmatory" in qe.header.value and "T3:zero-shot vs T1:zero-shot" in qe.header.value
    zero = df[df["notes_strategy"] == "zero-shot"].set_index(["template", "question_id"])["correct"]
    for qid in sorted(set(df["question_id"])):
        x, y = bool(zero[("T3", qid)]), bool(zero[("T1", qid)])
        said = (f"discordant: {'the first' if x else 'the second'} is right" if x != y
                else f"both {'right' if x else 'wrong'} (concordant)")  # fmt: skip
        assert qe.registered_here(qid) == [
            f"T3:zero-shot vs T1:zero-shot [confirmatory]: {said}",
            "T9:zero-shot vs T1:zero-shot [confirmatory]: not in this run",
        ]
    qe.question.value = qe.question.options[0]
    assert "[confirmatory]" in qe.view.value


def test_the_question_explorer_shows_each_tool_call_and_a_programs_run(tmp_path):
    from dataclasses import replace

    loop = {
        "tools": ["calculator"],
        "protocol": "text",
        "calls": 2,
        "stopped": "answered",
        "replies": [],
        "steps": [{"step": 1, "tool": "calculator", "input": "16 - 3 - 4", "output": "9", "status": "ok"}],
    }
    program = {
        "program": "ans = 18 / 0",
        "status": "error",
        "ans": None,
        "error": "ZeroDivisionError: division by zero",
    }
    rows = [record("q1", "T1", "A", dataset="aqua", raw_output="Action: calculator[16 - 3 - 4]"),
            record("q1", "T2", None, dataset="aqua"), record("q1", "T3", "A", dataset="aqua")]  # fmt: skip
    rows[0] = replace(rows[0], trace=json.dumps(loop))
    rows[1] = replace(rows[1], trace=json.dumps(program))
    path = tmp_path / "records.parquet"
    save_records(to_frame(rows), path)
    html = QuestionExplorer(load_records(path), QUESTIONS, records_path=path).render()
    assert "1 tool call(s), 2 model call(s), answered" in html
    assert "<td>calculator</td><td>ok</td><td><pre style='white-space:pre-wrap'>16 - 3 - 4</pre>" in html
    assert "program: error, ans = None" in html and "ZeroDivisionError: division by zero" in html
    assert html.count("olakit-tools") == 2  # T3 answered without tools: nothing shown for it


def test_the_question_explorer_shows_each_answers_thinking_apart_and_a_cut_off_one(tmp_path):
    """Issue 50: the thinking is in the explorer, folded under its own summary with the reasoning tokens, never in
    the rationale; an answer cut off while thinking says so; a template without thinking shows none."""
    from dataclasses import replace

    rows = [record("q1", "T1", "A", dataset="aqua", raw_output="So A."), record("q1", "T2", None, dataset="aqua"),
            record("q1", "T3", "A", dataset="aqua")]  # fmt: skip
    rows[0] = replace(rows[0], reasoning="B? No: A <because> of X.", reasoning_tokens=12)
    rows[1] = replace(rows[1], reasoning="Weighing C", unparsed_cause="unfinished")
    path = tmp_path / "records.parquet"
    save_records(to_frame(rows), path)
    html = QuestionExplorer(load_records(path), QUESTIONS, records_path=path).render()
    assert "<summary>thinking (12 reasoning tokens)</summary>" in html
    assert "B? No: A &lt;because&gt; of X." in html and "<pre style='white-space:pre-wrap'>So A.</pre>" in html
    assert "<summary>thinking, cut off: no answer</summary>" in html and "Weighing C" in html
    assert html.count("olakit-thinking") == 2
