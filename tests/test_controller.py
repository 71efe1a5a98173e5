"""Prompt assembly against golden text, templates as data files, intention framing, and the grid plan."""

import json

import pytest

from olakit.config import ConfigError
from olakit.errors import DataError, UnknownNameError
from olakit.llm.request import cache_key
from olakit.olagpt.config import OlaGPTConfig
from olakit.olagpt.controller import build_prompt, plan
from olakit.olagpt.intent import frame_question, parse_type, type_request
from olakit.olagpt.notes import NotesLibrary
from olakit.templates import load_templates, templates_for
from olakit.types import Note, Question

Q = Question(id="t-1", dataset="aqua", text="What is 2 + 3?", options={"A": "4", "B": "5", "C": "6"}, gold="B")
NOTE = Note(
    id="n-1",
    source="test",
    question="What is 1 + 1?",
    options={"A": "2", "B": "3"},
    answer="A",
    explanation="1 + 1 = 2.",
    error_reason="Added wrongly.",
    llm_task_type="addition",
    dataset="aqua",
)

GOLDEN = """\
Here are notes on similar questions that were answered wrongly before, with their solutions:

Note 1 (addition):
question: What is 1 + 1?
choices:
A)2
B)3
Answer: A
Error reason: Added wrongly.
Explanation: 1 + 1 = 2.

Now give you the arithmetic question and choices:
question: What is 2 + 3?
choices:
A)4
B)5
C)6
The answer must end with JSON format: Answer: one of options[A,B,C].

Let's think step by step."""


FRAMED = GOLDEN.split("\n\n")[-2]
# The authors' note layout (their notes/prompts.py construct_note, whitespace included), written out by hand
PAPER_NOTE = (
    "\n        This is a kind of addition: question: What is 1 + 1?\n\nchoices: \nA)2\nB)3\n\n \n\n"
    "        {prefix} 1 + 1 = 2..\n"
    '        Therefore, the answer is: {{"Answer": "A)2"}}.\n'
    "        "
)
PAPER_HEADER = (
    "Here are some similar questions, and the solving process that may assist you in answering your questions: \n"
)


def test_prompt_order_of_fig3_against_golden_text_olakit_preset():
    """olakit's preset: its note layout, then the question, then the template's text (template_position="after");
    template_position="before" puts the text between the notes and the question, as in Fig 3."""
    templates = load_templates()
    assert build_prompt(Q, "arithmetic", templates["ST"], [NOTE], OlaGPTConfig(preset="olakit")) == GOLDEN
    notes, framed, st = GOLDEN.split("\n\n" + FRAMED.split("\n")[0])[0], FRAMED, "Let's think step by step."
    before = OlaGPTConfig(notes_layout="olakit", template_position="before")
    assert build_prompt(Q, "arithmetic", templates["ST"], [NOTE], before) == f"{notes}\n\n{st}\n\n{framed}"
    # every template of one question shares all but its last line under olakit's preset
    dt = build_prompt(Q, "arithmetic", templates["DT"], [NOTE], OlaGPTConfig(preset="olakit"))
    assert dt == f"{notes}\n\n{framed}\n\n{templates['DT'].prefix}"


def test_paper_preset_golden_prompts():
    """The authors' layout: their header, each note with the template's own note prefix and the answer at the end;
    ST's trigger after the answer-format sentence, DT's text before the question."""
    templates = load_templates()
    st = build_prompt(Q, "arithmetic", templates["ST"], [NOTE], OlaGPTConfig(preset="paper"))
    want_note = PAPER_NOTE.format(prefix="Let's think step by step.")
    assert st == PAPER_HEADER + want_note + "\n" + "\n\n" + FRAMED + "\n\nLet's think step by step."
    dt = build_prompt(Q, "arithmetic", templates["DT"], [NOTE, NOTE], OlaGPTConfig(preset="paper"))
    want_note = PAPER_NOTE.format(prefix="Let's think with disaggregated_thought:")
    assert dt == (PAPER_HEADER + 2 * (want_note + "\n") + "\n\n" + templates["DT"].prefix + "\n\n" + FRAMED)
    # zero-shot under the paper preset: ST's trigger still follows the question
    assert build_prompt(Q, "arithmetic", templates["ST"], []) == FRAMED + "\n\nLet's think step by step."


def test_a_preset_contradicted_by_a_setting_is_refused_before_anything_runs():
    with pytest.raises(ConfigError, match="preset 'paper' sets unparsed='raw' but unparsed='abstain'"):
        OlaGPTConfig(preset="paper", unparsed="abstain")
    with pytest.raises(ConfigError, match="notes='paper': not a setting of OlaGPTConfig"):
        OlaGPTConfig(notes="paper")
    with pytest.raises(ConfigError, match="preset='authors': input should be 'paper' or 'olakit'"):
        OlaGPTConfig(preset="authors")
    with pytest.raises(ConfigError, match="fill_up='maybe'"):
        OlaGPTConfig(fill_up="maybe")
    assert OlaGPTConfig(unparsed="abstain").unparsed == "abstain"
    assert OlaGPTConfig(preset="olakit", unparsed="abstain").fill_up is True  # agreeing with the preset is fine


def test_turbo_and_zero_shot_prompt_is_the_framed_question():
    turbo = load_templates()["turbo"]
    assert build_prompt(Q, "arithmetic", turbo, []) == frame_question(Q, "arithmetic") == FRAMED


def test_builtin_templates_carry_the_paper_texts():
    lib = load_templates()
    assert list(lib) == ["turbo", "AT", "DT", "DST", "PT", "ST", "PoT"]  # PoT: olakit's program template
    assert lib["PoT"].answer == "program" and {t.answer for n, t in lib.items() if n != "PoT"} == {"text"}
    assert lib["DST"].prefix == "Disassemble the following complex problems to solve them step by step"
    assert lib["PT"].prefix == "Think carefully about the problem to be solved and make a detailed plan to solve it."
    assert lib["AT"].prefix.startswith("For the problem of analogical reasoning, it is completed in three steps.")
    assert [t.name for t in templates_for("aqua")] == ["turbo", "DT", "DST", "PT", "ST"]
    assert [t.name for t in templates_for("ekar_zh")] == ["turbo", "AT", "DT", "DST", "PT", "ST"]
    with pytest.raises(DataError, match=r"templates \['AT'\] do not list dataset 'aqua'"):
        templates_for("aqua", ["ST", "AT"])
    with pytest.raises(UnknownNameError, match="unknown template 'XT'"):
        templates_for("aqua", ["XT"])


def test_user_templates_from_a_folder(tmp_path, monkeypatch):
    (tmp_path / "CT.json").write_text(
        json.dumps({"name": "CT", "prefix": "Criticise, then answer.", "datasets": ["aqua"]})
    )
    (tmp_path / "ST.json").write_text(json.dumps({"name": "ST", "prefix": "Step by step, please."}))
    monkeypatch.setenv("OLAKIT_TEMPLATES_DIR", str(tmp_path))
    lib = load_templates()
    assert lib["CT"].prefix == "Criticise, then answer." and lib["ST"].prefix == "Step by step, please."
    assert [t.name for t in templates_for("aqua")][-1] == "CT" and "CT" not in [
        t.name for t in templates_for("ekar_zh")
    ]
    (tmp_path / "bad.json").write_text(json.dumps({"name": "bad"}))
    with pytest.raises(DataError, match=r"bad.json: template 'bad' needs a string 'prefix'"):
        load_templates()


def test_type_prompt_and_parse():
    req = type_request(Q, OlaGPTConfig().for_stage("question_type"))
    text = req.message_dicts()[0]["content"]
    assert text.startswith("As a mathematics professor, you need to judge the type of the following question")
    assert "question: What is 2 + 3?" in text and dict(req.params) == {"temperature": 0, "max_tokens": 24}
    assert parse_type('{"task_type": "Arithmetic"}') == "arithmetic"
    assert parse_type('"task_type": "类比推理题"', "ekar_zh") == "类比推理题"
    assert parse_type("", "ekar_zh") == "analogy" and parse_type('{"task_type": "question type"}') == "math"


def test_plan_counts_cells_and_unique_prompts():
    lib = NotesLibrary([NOTE])
    tmpl = templates_for("aqua", ["turbo", "ST"])
    calls = plan(
        [Q],
        {"t-1": "arithmetic"},
        tmpl,
        lib,
        OlaGPTConfig(strategies=["zero-shot", "random", "retrieval"], n_notes=[0, 1]),
    )
    # zero-shot: n=0 only (2 templates); random and retrieval: n in {0, 1} (2 x 2 x 2)
    assert len(calls) == 2 + 8
    # n=0 under random/retrieval is the zero-shot prompt; n=1 random = n=1 retrieval (one note in the library)
    assert len({cache_key("x|m", c.request) for c in calls}) == 4
    zero = OlaGPTConfig(strategies=["zero-shot"], n_notes=[0])
    sc = plan([Q], {"t-1": "arithmetic"}, tmpl[1:], lib, zero, stage="sc", samples=3, name="SC")
    assert [c.sample for c in sc] == [0, 1, 2] and {c.template for c in sc} == {"SC"}
    assert {(dict(c.request.params)["temperature"], dict(c.request.params)["max_tokens"]) for c in sc} == {(0.7, 256)}
    assert len({cache_key("x|m", c.request) for c in sc}) == 3
