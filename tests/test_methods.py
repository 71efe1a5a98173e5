"""The table of methods and a method of one's own (olakit.method, olakit.methods, olakit.steps, olakit.generation):
the lockstep driver against a scripted model whose every call is logged, the errors a user's steps function gets,
the generation settings per stage as the model receives them, the names a method is found by, and the public face.
Expected values are worked out from the scripted replies, never from the code under test."""

import json
import subprocess
import sys
import textwrap

import pytest

import olakit
from olakit.config import ConfigError
from olakit.door import run_method
from olakit.errors import DataError
from olakit.generation import Generation
from olakit.llm import ScriptedModel
from olakit.methods import BUILTIN, method_of
from olakit.steps import StepwiseConfig, ask, stepwise

AQUA_GOLDS = ["A", "E", "A", "B"]
"""The golds of AQuA test-0 .. test-3 (../shared/data/aqua/test.json), read by hand."""


class Logged(ScriptedModel):
    """A scripted model that keeps each batch's size and each request's parameters."""

    def __init__(self, reply):
        super().__init__(reply)
        self.batches, self.params = [], []

    def batch(self, requests, desc=None):
        self.batches.append(len(requests))
        self.params += [dict(r.call_params()) for r in requests]
        return super().batch(requests, desc)


def _walks(q, cfg):
    """Question test-i takes i + 1 calls: 'step 0', 'step 1', ...; the last reply names the answer."""
    k = int(q.id.split("-")[1])
    text = ""
    for step in range(k + 1):
        text = yield ask(f"{q.id} step {step}", stage=f"s{step}")
    return text


def _reply(prompt, request):
    qid, _, step = prompt.partition(" step ")
    k = int(qid.split("-")[1])
    last = int(step) == k
    return f"done {k} words here. Answer: B" if last else "working"


def test_questions_walk_in_lockstep_and_each_record_counts_every_call():
    model = Logged(_reply)
    res = run_method(stepwise("walks", _walks), {"n_questions": 3}, model)
    # three questions of 1, 2 and 3 calls: rounds of 3, 2 and 1 calls
    assert model.batches == [3, 2, 1]
    recs = res.records.sort_values("question_id").reset_index(drop=True)
    assert list(recs["question_id"]) == ["test-0", "test-1", "test-2"]
    assert list(recs["template"]) == ["walks"] * 3 and set(recs["notes_strategy"]) == {"zero-shot"}
    assert list(recs["extracted"]) == ["B", "B", "B"]
    assert list(recs["correct"]) == [g == "B" for g in AQUA_GOLDS[:3]]
    # the scripted model counts completion tokens in words: "working" is 1, the last reply 6
    assert list(recs["completion_tokens"]) == [6, 1 + 6, 2 + 6]
    traces = [json.loads(t) for t in recs["trace"]]
    assert [[s["stage"] for s in t["steps"]] for t in traces] == [["s0"], ["s0", "s1"], ["s0", "s1", "s2"]]
    assert traces[2]["steps"][0]["output"] == "working" and traces[2]["method"] == "walks"
    assert res.kind == "olagpt" and res.templates == ["walks"] and res.log.door == "method"


def test_a_list_of_asks_is_one_step_and_gives_a_list_back():
    seen = []

    def both(q, cfg):
        a, b = yield [ask("first"), ask("second")]
        seen.append((a, b))
        return f"Answer: {'A' if a == 'one' else 'C'}"

    model = Logged(lambda p, r: {"first": "one", "second": "two"}[p])
    res = run_method(stepwise("both", both), {"n_questions": 2}, model)
    assert seen == [("one", "two"), ("one", "two")]
    assert model.batches == [4]  # both asks of both questions in one round
    assert list(res.records["extracted"]) == ["A", "A"]


@pytest.mark.parametrize(
    "steps, message",
    [
        (lambda q, cfg: "not a generator", "not a generator"),
        (lambda q, cfg: (yield 3), "yielded int"),
        (lambda q, cfg: (yield []), "yielded an empty list"),
        (lambda q, cfg: ((yield ask("x")), 5)[1], "returned int"),
    ],
)
def test_a_steps_function_that_breaks_the_protocol_is_one_clear_error(steps, message):
    with pytest.raises(DataError, match=message):
        run_method(stepwise("bad", steps), {"n_questions": 1}, ScriptedModel(lambda p, r: "Answer: A"))


def test_a_method_that_asks_nothing_is_refused():
    def nothing(q, cfg):
        return "Answer: A"
        yield  # a generator that never yields

    with pytest.raises(DataError, match="returned before asking anything"):
        run_method(stepwise("nothing", nothing), {"n_questions": 1}, ScriptedModel(lambda p, r: ""))


def test_each_stage_is_sent_its_own_generation_settings_and_samples_their_seeds():
    def two(q, cfg):
        plan = yield ask("plan it", stage="plan")
        return (yield ask(f"{plan} then answer", stage="extract", temperature=0.5))

    model = Logged(lambda p, r: "Answer: A")
    cfg = {"n_questions": 1, "max_tokens": 100, "seed": 7, "samples": 2, "stages": {"extract": {"max_tokens": 16}}}
    res = run_method(stepwise("two", two), cfg, model)
    # sample 0 and 1 of the plan, then of the extraction; a sample's seed is seed + its index
    assert model.params == [
        {"max_tokens": 100, "seed": 7},
        {"max_tokens": 100, "seed": 8},
        {"max_tokens": 16, "seed": 7, "temperature": 0.5},
        {"max_tokens": 16, "seed": 8, "temperature": 0.5},
    ]
    assert sorted(res.records["sample"]) == [0, 1]


def test_nothing_unset_is_sent():
    model = Logged(lambda p, r: "Answer: A")
    run_method(stepwise("plain", lambda q, cfg: (yield ask("hi"))), {"n_questions": 1}, model)
    assert model.params == [{}]


def test_generation_settings_merge_from_run_to_stage():
    base = Generation(max_tokens=256, temperature=0.0, stages={"vote": {"max_tokens": 8, "stop": ["\n"]}})
    assert base.params() == {"max_tokens": 256, "temperature": 0.0}
    assert base.for_stage("vote").params() == {"max_tokens": 8, "temperature": 0.0, "stop": ["\n"]}
    assert base.for_stage("answer", top_p=0.9).params() == {"max_tokens": 256, "temperature": 0.0, "top_p": 0.9}
    assert Generation(max_tokens=5).merge({"max_tokens": None}).max_tokens is None  # set to "the model's default"
    with pytest.raises(ConfigError, match="max_length"):
        Generation(stages={"vote": {"max_length": 3}})
    with pytest.raises(ConfigError, match="stages"):
        Generation(stages={"vote": {"max_tokens": 0}})


def test_a_method_is_found_by_name_module_or_file(tmp_path, monkeypatch):
    assert method_of("geek") is BUILTIN["geek"] and method_of(BUILTIN["olagpt"]) is BUILTIN["olagpt"]
    with pytest.raises(DataError, match=r"'gek': not a method's name \(olagpt, geek, review, notes"):
        method_of("gek")
    source = textwrap.dedent("""
        from olakit import ask, stepwise
        method = stepwise("mine", lambda q, cfg: (yield ask(q.text)))
        not_a_method = 3
    """)
    (tmp_path / "mine_method.py").write_text(source)
    found = method_of(f"{tmp_path / 'mine_method.py'}:method")
    assert found.name == "mine" and found is method_of(f"{tmp_path / 'mine_method.py'}:method")  # loaded once
    monkeypatch.syspath_prepend(str(tmp_path))
    assert method_of("mine_method:method").name == "mine"
    with pytest.raises(DataError, match="a int, not a Method"):
        method_of("mine_method:not_a_method")
    with pytest.raises(DataError, match="cannot import it"):
        method_of("no_such_module_here:method")


def test_an_installed_package_declares_a_method_by_entry_point(tmp_path, monkeypatch):
    (tmp_path / "pkg_methods.py").write_text(
        "from olakit import ask, stepwise\nmethod = stepwise('pkg', lambda q, cfg: (yield ask(q.text)))\n"
    )
    info = tmp_path / "olakit_pkg-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: olakit-pkg\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[olakit.methods]\npkg = pkg_methods:method\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert method_of("pkg").name == "pkg"
    assert "pkg" in olakit.known_methods()


def test_a_door_option_a_method_does_not_take_is_refused_before_any_call():
    model = ScriptedModel(lambda p, r: "x")
    with pytest.raises(DataError, match="method review does not take batch"):
        run_method("review", {"n_questions": 1}, model, batch=True)
    with pytest.raises(DataError, match="config is GeekConfig; it takes ReviewConfig"):
        run_method("review", BUILTIN["geek"].config(), model)
    assert model.calls == 0
    assert BUILTIN["olagpt"].options() == ("parameters", "registration", "concurrency", "batch", "export", "announce")


def test_a_stepwise_config_of_ones_own_is_validated_as_every_config():
    class Mine(StepwiseConfig):
        depth: int = 2
        """how deep"""

    m = stepwise("mine", lambda q, cfg: (yield ask("x")), config=Mine)
    with pytest.raises(ConfigError, match="depth"):
        m({"depth": "deep"}, ScriptedModel(lambda p, r: "x"))
    with pytest.raises(DataError, match="not a StepwiseConfig type"):
        stepwise("bad", lambda q, cfg: (yield ask("x")), config=dict)


def test_the_public_face_is_cheap_to_import_and_every_name_resolves():
    code = (
        "import sys, olakit\n"
        "heavy = [m for m in ('pandas', 'openai', 'pydantic', 'numpy') if m in sys.modules]\n"
        "missing = [n for n in olakit.__all__ if getattr(olakit, n, None) is None]\n"
        "print(heavy, missing)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split("\n")[0] == "[] []"
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        olakit.nope  # noqa: B018
    # the runs the table names are the functions themselves, with their own names and help (a Jupyter user's `?`)
    runs = {n: getattr(olakit, n) for n in ("run_olagpt", "run_geek", "run_review", "build_notes")}
    assert {n: (f.__module__, f.__name__) for n, f in runs.items()} == {
        "run_olagpt": ("olakit.olagpt.run", "run"),
        "run_geek": ("olakit.geek.run", "run_geek"),
        "run_review": ("olakit.review.run", "run_review"),
        "build_notes": ("olakit.olagpt.active_learning", "build_notes"),
    }
    assert all(f.__doc__ for f in runs.values())


def test_a_sweep_file_names_a_method_file_as_its_own_folder_does(tmp_path, monkeypatch):
    from olakit.notebook.sweep import expand, load_spec

    folder = tmp_path / "study"
    folder.mkdir()
    (folder / "mine.py").write_text(
        "from olakit import ask, stepwise\nmethod = stepwise('mine', lambda q, c: (yield ask('x')))\n"
    )
    (folder / "s.yaml").write_text(
        "notebooks:\n  - notebook: method\n    parameters: {n_questions: 1}\n"
        "    grid: {method: [mine.py:method, geek]}\n"
    )
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    spec = load_spec(folder / "s.yaml")
    jobs = expand(spec, "r", tmp_path / "runs", tmp_path / "results")
    assert [j.name for j in jobs] == ["method__method-mine.py-method", "method__method-geek"]
    assert jobs[0].parameters["method"] == f"{folder / 'mine.py'}:method" and jobs[1].parameters["method"] == "geek"
    (folder / "bad.yaml").write_text(
        "notebooks:\n  - notebook: method\n    parameters: {method: geek, n_question: 3}\n"
    )
    with pytest.raises(DataError, match=r"unknown parameters \['n_question'\]"):
        load_spec(folder / "bad.yaml")


def test_the_docs_plan_and_solve_reads_a_reply_that_continues_its_trigger(tmp_path):
    """docs/methods.md's PS+ as a user writes it (the file taken from the page): the extraction call's reply continues
    the paper's trigger, " C." or " 18." as a model writes it; on its own that states no answer, so every answer
    read nothing and PS+ scored 0 of 4 where the script is right on all four."""
    import re
    from pathlib import Path

    page = (Path(__file__).parent.parent / "docs" / "methods.md").read_text()
    source = re.search(r"cat > ps_plus.py <<'PY'\n(.*?)\nPY\n", page, re.S).group(1)
    (tmp_path / "ps_plus_page.py").write_text(source)

    golds = {}

    def by_question(prompt, request):
        if prompt.rstrip().endswith("the answer is"):  # the extraction call: the gold, as a bare continuation
            return f" {next(g for text, g in golds.items() if text in prompt)}."
        return "Plan: read the options. Then solve."

    from olakit.data.loaders import load_questions, resolve_data_dir

    questions = load_questions("aqua", "test", str(resolve_data_dir()))[:4]
    golds.update({q.text[:60]: q.gold for q in questions})
    assert [q.gold for q in questions] == AQUA_GOLDS
    method = method_of(f"{tmp_path / 'ps_plus_page.py'}:method")
    res = run_method(method, {"n_questions": 4}, ScriptedModel(by_question))
    assert list(res.records.sort_values("question_id")["extracted"]) == AQUA_GOLDS
    assert res.records["correct"].all()
