"""Notes library: selection strategies on a tiny library with neighbours known by hand, persistence, sampling,
and building notes from a tiny pool (active learning)."""

import json

import pytest

from olakit.errors import DataError, UnknownNameError
from olakit.olagpt.active_learning import build_library, error_book, sample_pool, write_notes
from olakit.olagpt.config import NotesConfig
from olakit.olagpt.notes import NotesLibrary, olagpt_library
from olakit.olagpt.selection import select
from olakit.retrieval.embedder import embed
from olakit.types import Note, Question

PROB, GEO, INT = "probability question", "geometry problem", "simple interest problem"
NOTES = [
    ("coin", PROB, "A fair coin is tossed twice. What is the probability of getting two heads?"),
    ("dice", PROB, "Two dice are rolled. What is the probability that the sum of the faces is 7?"),
    ("balls", PROB, "A bag has 3 red and 2 blue balls. What is the probability of drawing a red ball?"),
    ("triangle", GEO, "A right triangle has legs 3 and 4. What is the area of the triangle?"),
    ("circle", GEO, "What is the area of a circle with radius 2?"),
    ("interest", INT, "Find the simple interest on 1000 dollars at 5% per year for 2 years."),
]
OPTS = {"A": "1", "B": "2", "C": "3"}


def note(id, qtype, text):
    return Note(id=id, source="test", question=text, options=OPTS, answer="A", llm_task_type=qtype, dataset="aqua")


@pytest.fixture(scope="module")
def library():
    return NotesLibrary([note(*n) for n in NOTES])


COIN_Q = Question(
    id="q-coin",
    dataset="aqua",
    options=OPTS,
    gold="A",
    text="A coin is tossed three times. What is the probability of getting exactly two heads?",
)
TRI_Q = Question(
    id="q-tri",
    dataset="aqua",
    options=OPTS,
    gold="A",
    text="A triangle has base 6 and height 4. What is the area of the triangle?",
)


def ids(picked):
    return [n.id for n, _ in picked]


def test_zero_shot_selects_nothing(library):
    assert select("zero-shot", library, COIN_Q, "probability", 3, seed=0, fill_up=False) == []
    assert select("zero-shot", None, COIN_Q, "probability", 3, seed=0, fill_up=False) == []


def test_retrieval_nearest_type_then_most_similar(library):
    assert ids(select("retrieval", library, COIN_Q, "probability", 1, seed=0, fill_up=False)) == ["coin"]
    assert ids(select("retrieval", library, TRI_Q, "geometry", 1, seed=0, fill_up=False)) == ["triangle"]
    two = ids(select("retrieval", library, TRI_Q, "geometry", 2, seed=0, fill_up=False))
    assert two == ["triangle", "circle"]
    # four asked, three probability notes: the authors' code gives the three (fill_up off, the paper setting) ...
    three = select("retrieval", library, COIN_Q, "probability", 4, seed=0, fill_up=False)
    assert ids(three)[0] == "coin" and set(ids(three)) == {"coin", "dice", "balls"}
    # ... olakit's fill-up adds the best note of the next type
    four = select("retrieval", library, COIN_Q, "probability", 4, fill_up=True, seed=0)
    assert ids(four)[:3] == ids(three) and ids(four)[3] in {"triangle", "circle", "interest"}
    combine = select("combine", library, COIN_Q, "probability", 4, seed=0, fill_up=False)
    assert set(ids(combine)) == {"coin", "dice", "balls"}
    assert len(select("combine", library, COIN_Q, "probability", 4, fill_up=True, seed=0)) == 4
    # the similarities recorded are the cosine of the embeddings, and decrease within the type
    q = embed([COIN_Q.text])[0]
    for n, sim in four:
        assert sim == pytest.approx(float(embed([n.question])[0] @ q), abs=1e-5)
    assert four[0][1] >= four[1][1] >= four[2][1]


def test_combine_nearest_type_then_random_within(library):
    a = ids(select("combine", library, COIN_Q, "probability", 2, seed=0, fill_up=False))
    assert set(a) <= {"coin", "dice", "balls"} and len(set(a)) == 2
    assert a == ids(select("combine", library, COIN_Q, "probability", 2, seed=0, fill_up=False))  # seeded
    three = ids(select("combine", library, COIN_Q, "probability", 3, seed=5, fill_up=False))
    assert set(three) == {"coin", "dice", "balls"}
    draws = {tuple(ids(select("combine", library, COIN_Q, "probability", 2, seed=s, fill_up=False))) for s in range(12)}
    assert len(draws) > 1  # random within the type, not the top-2


def test_random_is_seeded_and_varies(library):
    a = ids(select("random", library, COIN_Q, "probability", 3, seed=1, fill_up=False))
    assert len(set(a)) == 3 and a == ids(select("random", library, COIN_Q, "probability", 3, seed=1, fill_up=False))
    draws = {tuple(ids(select("random", library, COIN_Q, "probability", 3, seed=s, fill_up=False))) for s in range(12)}
    assert len(draws) > 3


def test_a_note_that_is_the_question_itself_is_never_given(library):
    own = Note(
        id="own",
        source="test",
        question="  a coin is tossed THREE times. What is the probability of getting exactly two heads?",
        options=OPTS,
        answer="A",
        llm_task_type=PROB,
    )
    lib = NotesLibrary([*library.notes, own])
    for strategy in ("random", "retrieval", "combine"):
        for seed in range(5):
            picked = ids(select(strategy, lib, COIN_Q, "probability", len(lib), seed=seed, fill_up=True))
            assert "own" not in picked and len(picked) == len(library)


def test_unknown_strategy_and_missing_library(library):
    with pytest.raises(UnknownNameError, match="unknown note strategy 'nearest'; known: combine, random"):
        select("nearest", library, COIN_Q, "x", 1, seed=0, fill_up=False)
    with pytest.raises(DataError, match="needs a non-empty notes library"):
        select("retrieval", None, COIN_Q, "x", 1, seed=0, fill_up=False)


def test_library_round_trip_and_bad_files(library, tmp_path):
    path = library.save(tmp_path / "lib.jsonl")
    back = NotesLibrary.load(path)
    assert back.notes == library.notes
    bad = tmp_path / "bad.jsonl"
    lines = path.read_text().splitlines()
    obj = json.loads(lines[1])
    obj["answer"] = "Z"
    bad.write_text("\n".join([lines[0], json.dumps(obj)]) + "\n")
    with pytest.raises(DataError, match=r"bad.jsonl line 2: answer 'Z' is not one of the options"):
        NotesLibrary.load(bad)
    bad.write_text(lines[0] + "\n{not json\n")
    with pytest.raises(DataError, match="bad.jsonl line 2: malformed JSON"):
        NotesLibrary.load(bad)
    with pytest.raises(DataError, match="duplicate note ids"):
        NotesLibrary([*library.notes, library.notes[0]])


def test_olagpt_notes_load_into_the_schema():
    lib = olagpt_library()
    assert len(lib) == 81 and len({n.llm_task_type for n in lib.notes}) == 54
    assert all(n.answer in n.options and n.source == "olagpt" for n in lib.notes)


def test_sample_pool_in_proportion_to_cluster_sizes():
    topics = {
        "coin": ("A coin is tossed {} times; what is the probability of all heads?", 15),
        "train": ("A train travels {} km in 2 hours; what is its speed in km per hour?", 10),
        "recipe": ("A cake recipe needs {} eggs and flour; how many cakes can a baker make from 30 eggs?", 5),
    }
    pool = [
        Question(id=f"{t}-{i}", dataset="aqua", text=tpl.format(i + 2), options=OPTS, gold="A")
        for t, (tpl, size) in topics.items()
        for i in range(size)
    ]
    chosen = sample_pool(pool, 6, k=3, seed=0)
    counts = {t: sum(q.id.startswith(t) for q in chosen) for t in topics}
    assert counts == {"coin": 3, "train": 2, "recipe": 1}  # 6 x 15/30, 6 x 10/30, 6 x 5/30
    assert sample_pool(pool, 6, k=3, seed=0) == chosen


def test_error_book_keeps_questions_wrong_every_time(tmp_path):
    from olakit.llm import LLM, Endpoint
    from olakit.llm.loopback import Loopback

    # gold is A for all; "alpha" is always answered B (wrong 3/3), "beta" always A (right), "gamma" is right only
    # on the sample whose seed is 1 (wrong 2/3), "delta" gets no parseable answer (counts as wrong)
    temperatures = []

    def reply(prompt, req):
        if "judge the type" in prompt:
            return '{"task_type": "toy question"}'
        temperatures.append(req.get("temperature"))
        if "alpha" in prompt:
            return "so Answer: B"
        if "beta" in prompt:
            return "so Answer: A"
        if "gamma" in prompt:
            return "so Answer: A" if req.get("seed") == 1 else "so Answer: C"
        return "I am not sure."

    pool = [
        Question(id=w, dataset="aqua", text=f"Question {w}?", options=OPTS, gold="A", rationale=f"why {w}")
        for w in ("alpha", "beta", "gamma", "delta")
    ]
    with Loopback(reply=reply) as srv:
        llm = LLM(Endpoint(srv.base_url, "toy"), cache_dir=tmp_path / "c", progress=False)
        book, wrong, answers = error_book(llm, pool, NotesConfig(dataset="aqua", r=3, temperature=0.3, max_tokens=256))
        assert temperatures == [0.3] * 12  # the config's sampling temperature, not a second default
        assert [q.id for q in book] == ["alpha", "delta"]
        assert wrong == {"alpha": ["B", "B", "B"], "delta": [None, None, None]}
        assert len(answers) == 12 and [a.extracted for a in answers if a.question_id == "gamma"] == ["C", "A", "C"]
        lib, _, stats = build_library(llm, pool, NotesConfig(r=3, explainer="dataset", check=False))
        # the build reads with its config's reader: the authors' regex reads no "so Answer: A", so every question
        # is wrong every time (strict, above, read them)
        book, wrong, _ = error_book(llm, pool, NotesConfig(dataset="aqua", r=3, temperature=0.3, extractor="olagpt"))
        assert [q.id for q in book] == ["alpha", "beta", "gamma", "delta"] and wrong["beta"] == [None] * 3
        lib.save(tmp_path / "lib.jsonl")
        llm.close()
    assert [n.id for n in lib.notes] == ["aqua:alpha", "aqua:delta"]
    alpha = lib["aqua:alpha"]
    assert (alpha.explanation, alpha.error_reason, alpha.model_expert, alpha.llm_task_type) == (
        "why alpha",
        "answered B, B, B instead of A",
        "dataset",
        "toy question",
    )
    assert NotesLibrary.load(tmp_path / "lib.jsonl").notes == lib.notes
    assert stats["calls"] == {"question types": 4, "error book": 12, "writing notes": 0} and stats["error_book"] == 2
    drafts = write_notes(book, wrong, NotesConfig(explainer="person"))
    assert all(n.explanation == "" and n.error_reason == "" for n in drafts.notes)
    with pytest.raises(DataError, match="explainer 'self-correction' writes no notes from an error book here"):
        write_notes(book, wrong, NotesConfig(explainer="self-correction"))


def test_self_correction_refined_drafts_and_the_note_check(tmp_path):
    """The paper's two other ways to write notes, on a loopback server: "alpha" (answered B in the error book) is
    wrong again at the first retry and right at the second, "delta" never: one note, its two tries as provenance;
    an expert's draft refined by the model keeps the draft; each note checked by the model answering its own
    question with the note as its example."""
    from olakit.llm import LLM, Endpoint
    from olakit.llm.loopback import Loopback
    from olakit.olagpt.active_learning import HINTS

    retries = []

    def reply(prompt, req):
        if "judge the type" in prompt:
            return '{"task_type": "toy question"}'
        if prompt.startswith("An expert drafted"):
            return '{"error_reason": "models skip the units", "explanation": "refined: convert, then add"}'
        if "Earlier answers to this question" in prompt:
            retries.append(prompt)
            if "alpha" in prompt:
                return "so Answer: A" if HINTS[1] in prompt else "so Answer: C"
            return "still unsure"
        if (
            prompt.count("Question alpha?") == 2 or prompt.count("Question epsilon?") == 2
        ):  # the note, then the question
            return "so Answer: A"
        if "alpha" in prompt:
            return "so Answer: B"
        return "I am not sure."

    pool = [Question(id=w, dataset="aqua", text=f"Question {w}?", options=OPTS, gold="A") for w in ("alpha", "delta")]
    with Loopback(reply=reply) as srv:
        llm = LLM(Endpoint(srv.base_url, "toy"), cache_dir=tmp_path / "c", progress=False)
        lib, _, stats = build_library(llm, pool, NotesConfig(r=2, explainer="self-correction", tries=3, check=True))
        draft = Note(id="e1", source="expert", question="Question epsilon?", options=OPTS, answer="A",
                     explanation="add them", model_expert="Ada", dataset="aqua")  # fmt: skip
        refine = NotesConfig(explainer="refine", drafts="drafts.jsonl", check=True)  # the file: read by build_notes
        refined, _, rstats = build_library(llm, [], refine, NotesLibrary([draft]))
        llm.close()
    assert [n.id for n in lib.notes] == ["aqua:alpha"]  # delta never corrected: no note
    alpha = lib["aqua:alpha"]
    tries = [p for p in alpha.provenance if "try" in p]
    assert [(t["try"], t["answer"], t["right"]) for t in tries] == [(1, "C", False), (2, "A", True)]
    assert alpha.explanation == "so Answer: A" and alpha.error_reason == "answered B, B, C instead of A"
    assert "self-corrected at try 2" in alpha.model_expert
    assert not any("the answer is A" in p or "correct answer" in p for p in retries)  # never told the answer
    assert HINTS[1] in retries[-1] and "none of" not in retries[-1]  # delta's third: no option to rule out
    assert alpha.provenance[-1]["right"] and stats["passed"] == 1 and stats["checked"] == 1
    assert stats["calls"]["self-correction"] == 2 + 2 + 1  # try 1: both; try 2: both; try 3: delta alone
    (note,) = refined.notes
    assert note.explanation == "refined: convert, then add" and note.error_reason == "models skip the units"
    assert note.provenance[0] == {"draft": "add them", "error_reason": "", "by": "Ada", "refined_by": "llm:toy"}
    assert note.provenance[1]["right"] and rstats["passed"] == 1 and rstats["calls"]["refining drafts"] == 1
    lib.save(tmp_path / "lib.jsonl")
    assert NotesLibrary.load(tmp_path / "lib.jsonl").notes[0].provenance == alpha.provenance  # saved whole


def test_notes_written_by_the_model_take_the_configs_token_limit():
    """write_notes restated its explainer ('dataset') and its token limit (none: the model's own, where
    NotesConfig says 256): a notebook that called it got other notes than the build. It takes the config whole."""
    from olakit.llm.answerer import ScriptedModel

    limits = []

    def reply(prompt, request):
        limits.append(request.get("max_tokens"))
        return '{"explanation": "because", "error_reason": "a slip"}'

    book = [Question(id=w, dataset="aqua", text=f"Question {w}?", options=OPTS, gold="A") for w in ("a", "b")]
    wrong = {"a": ["B"], "b": ["C"]}
    lib = write_notes(book, wrong, NotesConfig(explainer="llm", max_tokens=77), llm=ScriptedModel(reply))
    assert limits == [77, 77]
    assert [(n.explanation, n.error_reason) for n in lib.notes] == [("because", "a slip")] * 2


def test_each_stage_of_the_build_takes_its_generation_settings():
    """The notes build through the one generation-settings type (olakit.generation): the pool's answers seeded
    samples at 0.7 (seed 0, offset by the sample), the written explanations and the checks greedy, 256 tokens each;
    a stage's own setting (the checks' 99 tokens) only that stage's."""
    from olakit.llm.answerer import ScriptedModel
    from olakit.olagpt.active_learning import check_notes

    sent = []

    def reply(prompt, request):
        sent.append((request.get("max_tokens"), request.get("temperature"), request.get("seed")))
        if prompt.startswith("You are an expert teacher"):
            return '{"explanation": "because", "error_reason": "a slip"}'
        return "so Answer: B"  # wrong for every question (gold A)

    pool = [Question(id=w, dataset="aqua", text=f"Question {w}?", options=OPTS, gold="A") for w in ("a", "b")]
    cfg = NotesConfig(dataset="aqua", r=2, explainer="llm", stages={"check": {"max_tokens": 99}})
    model = ScriptedModel(reply)
    book, wrong, _ = error_book(model, pool, cfg, qtypes={"a": "toy", "b": "toy"})
    assert sorted(set(sent)) == [(256, 0.7, 0), (256, 0.7, 1)] and len(book) == 2
    sent.clear()
    notes = write_notes(book, wrong, cfg, llm=model).notes
    assert set(sent) == {(256, 0.0, None)}
    sent.clear()
    check_notes(model, notes, cfg)
    assert set(sent) == {(99, 0.0, None)}
