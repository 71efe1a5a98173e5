"""The live runner: resume after a crash (counted at the server), the E-KAR Chinese path end to end and the LLM
vote on the real embedded model, and the vote audit and SC vote on hand-worked records."""

import os
import re
import signal
import subprocess
import sys
import textwrap

import pytest

from olakit.analysis.runs import llm_vote_audit, run_tables
from olakit.analysis.tables import method_accuracy, sc_vote
from olakit.data.records import load_records, to_frame
from olakit.olagpt.llm_vote import llm_vote_prompt
from olakit.settings import Analysis
from tests.toys import record

CRASH_SCRIPT = textwrap.dedent("""
    import sys
    from olakit.llm import LLM, Endpoint
    from olakit.olagpt.config import OlaGPTConfig
    from olakit.olagpt.run import run
    cfg = OlaGPTConfig(dataset="aqua", n_questions=3, strategies=("zero-shot", "random"), n_notes=(1,),
                    baselines=("SC",), sc_k=2, votes=("regex_vote", "llm_vote"), max_tokens=16)
    with LLM(Endpoint(sys.argv[1], "fake"), cache_dir=sys.argv[2], concurrency=2, progress=False, timeout=10) as llm:
        res = run(cfg, llm=llm).write(sys.argv[3])
    total = res.calls["total"]
    print(total["unique_prompts"], total["paid"], total["cached"], len(res.records))
""")


def every_stage_reply(answer: str):
    """A scripted model for a run that reaches every OlaGPT stage: each verification review scores 2 (so every
    answer is revised), the template choice is "ST, DT", and every other call gets ``answer``."""

    def reply(prompt, req):
        if prompt.startswith("Here is the answer to the question"):
            return "Accuracy: 2\nCompleteness: 2\nClarity: 2\nDepth: 2\nOverall Score: 2"
        if prompt.startswith("Here are thinking templates"):
            return "ST, DT"
        return answer

    return reply


@pytest.mark.slow
def test_run_resumes_after_a_crash_and_pays_each_prompt_once(tmp_path):
    from olakit.llm.loopback import Loopback

    # 3 type calls; 5 templates x (zero-shot + random n=1) x 3 questions = 30; SC 2 samples x 2 strategies x 3 = 12;
    # LLM vote, in order and shuffled, per question and strategy = 12
    expected_unique = 3 + 30 + 12 + 12
    with Loopback(delay=0.15) as srv:
        cmd = [sys.executable, "-c", CRASH_SCRIPT, srv.base_url, str(tmp_path / "cache"), str(tmp_path / "out")]
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
        srv.wait_completed(20, timeout=120)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        before = srv.requests
        assert 20 <= before < expected_unique
        assert not (tmp_path / "out" / "records.parquet").exists()  # nothing half-written
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        assert out.returncode == 0, out.stderr[-2000:]
        unique, paid, cached, n_records = map(int, out.stdout.split())
        assert unique == expected_unique
        assert paid + cached == expected_unique
        # lost at the kill: calls the killed process had sent and not yet stored; each answer is stored before its
        # lane's next call, so with concurrency 2 that is at most 2 (one per lane)
        lost = before - cached
        assert 0 <= lost <= 2
        assert srv.requests - before == paid  # the rerun asked only for what was missing
        # over both runs: each distinct prompt once, plus exactly the ones lost at the kill
        assert srv.requests == expected_unique + lost
        # distinct texts: SC's two samples share a text (seeds differ), and SC's text is ST's at another temperature
        assert len(srv.per_prompt) == expected_unique - 6 - 6
        again = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        assert again.stdout.split()[1] == "0" and srv.requests - before == paid  # a third run is all cache
    df = load_records(tmp_path / "out" / "records.parquet")
    assert n_records == len(df) == 30 + 12 + 12
    random_rows = df[(df["notes_strategy"] == "random") & (df["template"] == "ST")]
    assert all(len(ids) == 1 and len(sims) == 1 for ids, sims in zip(random_rows["note_ids"], random_rows["note_sims"]))


@pytest.fixture(scope="module")
def embedded(tmp_path_factory):
    from olakit.llm import LLM
    from olakit.llm.local import LocalServer
    from tests.test_local import endpoint

    with LocalServer(n_parallel=2, n_ctx=4096) as srv:
        with LLM(endpoint(srv), cache_dir=tmp_path_factory.mktemp("cache"), progress=False) as llm:
            yield llm


@pytest.mark.real_model
def test_ekar_chinese_path_end_to_end(embedded, tmp_path):
    from olakit.olagpt.config import OlaGPTConfig
    from olakit.olagpt.run import run

    cfg = OlaGPTConfig(
        dataset="ekar_zh",
        n_questions=1,
        templates=["AT", "ST"],
        strategies=("zero-shot", "combine"),
        n_notes=(1,),
        library="olagpt-ekar",
        baselines=(),
        votes=("regex_vote",),
        max_tokens=12,
    )
    res = run(cfg, llm=embedded).write(tmp_path / "out")
    df = load_records(tmp_path / "out" / "records.parquet")
    assert len(df) == 4 and set(df["template"]) == {"AT", "ST"} and set(df["gold"]) <= {"A", "B", "C", "D"}
    assert df["extracted"].dropna().isin(["A", "B", "C", "D"]).all()
    combine = df[df["notes_strategy"] == "combine"]
    assert all(ids[0].startswith("olagpt-ekar-") for ids in combine["note_ids"])
    assert res.calls["total"]["unique_prompts"] == 1 + 4 and res.calls["total"]["failed"] == 0
    assert df["question_type"].str.len().gt(0).all()
    # the vote table over the run, under the authors' rule: their vote order (DT, DST, PT, ST, turbo) puts ST before
    # AT, which it does not list, so ST wins each tie; an unparsed ST votes as its own raw text, so it still wins,
    # and gives no answer (worked out here)
    methods = run_tables(df, ["AT", "ST"], Analysis(n_boot=50))["methods"].set_index(["method", "notes_strategy"])
    for strategy, g in df.groupby("notes_strategy"):
        want = dict(zip(g["template"], g["extracted"]))["ST"]
        assert methods.loc[("regex_vote", strategy), "correct"] == int(want == g["gold"].iloc[0])


@pytest.mark.real_model
def test_llm_vote_on_a_real_model_call(embedded):
    from olakit.data.loaders import load_questions

    q = load_questions("aqua", "test")[0]
    cands = [("Compute ... so the answer is A.", "A"), ("Working it out, Answer: C", "C"), ("Hence A.", "A")]
    prompt = llm_vote_prompt(q, "trigonometry", cands)
    assert prompt.index("Solver 1 (answer: A)") < prompt.index("Solver 2 (answer: C)") < prompt.index("Solver 3")
    assert prompt.rstrip().endswith("Answer: one of options[A,B,C,D,E].")
    r = embedded.complete(prompt, max_tokens=24, temperature=0)
    assert r.ok and r.completion_tokens > 0 and not r.cached
    assert r.finish_reason in ("stop", "length") and r.completion_tokens <= 24
    assert r.prompt_tokens > len(prompt) // 8  # the whole prompt was read, not a truncated one
    assert embedded.complete(prompt, max_tokens=24, temperature=0).cached


def rec(qid, template, extracted, gold="A", sample=0, strategy="zero-shot"):
    return record(qid, template, extracted, gold, dataset="aqua", sample=sample, notes_strategy=strategy)


def test_config_errors_come_before_any_call():
    from olakit.config import ConfigError
    from olakit.olagpt.config import OlaGPTConfig

    with pytest.raises(ConfigError, match=r"baselines\.0='turbo': input should be 'SC' or 'auto_cot'"):  # a template
        OlaGPTConfig(templates=["ST"], baselines=("turbo",))
    with pytest.raises(ConfigError, match=r"baselines\.0='CoT'"):
        OlaGPTConfig(baselines=("CoT",))
    with pytest.raises(ConfigError, match=r"n_notes=\[\]: tuple should have at least 1 item"):
        OlaGPTConfig(n_notes=())
    for bad in (-1, 0):
        with pytest.raises(ConfigError, match=rf"n_questions={bad}: input should be greater than or equal to 1"):
            OlaGPTConfig(n_questions=bad)
    with pytest.raises(ConfigError, match="choose_k=0"):
        OlaGPTConfig(choose_k=0)


def test_llm_vote_audit_and_sc_vote_by_hand():
    rows = []
    # q1: templates A, A, B -> regex right; llm says B (overrides a correct majority); shuffled says A (order change)
    # q2: templates B, B, A -> regex wrong; llm says A (rescue); shuffled says A
    # q3: templates A, B, C -> regex A (first), right; llm A; shuffled A
    for qid, answers, llm, shuf in (("q1", "AAB", "B", "A"), ("q2", "BBA", "A", "A"), ("q3", "ABC", "A", "A")):
        rows += [rec(qid, t, a) for t, a in zip(("T1", "T2", "T3"), answers)]
        rows += [rec(qid, "llm_vote", llm), rec(qid, "llm_vote_shuffled", shuf)]
    # SC: q1 samples A, B, B -> B (wrong); q2 A, A, C -> A (right); q3 None, C, None -> C (wrong)
    for qid, answers in (("q1", ["A", "B", "B"]), ("q2", ["A", "A", "C"]), ("q3", [None, "C", None])):
        rows += [rec(qid, "SC", a, sample=s) for s, a in enumerate(answers)]
    df = to_frame(rows)
    audit = llm_vote_audit(df, ["T1", "T2", "T3"]).iloc[0]
    assert (audit["n"], audit["llm_correct"], audit["regex_correct"]) == (3, 2, 2)
    assert (audit["overrides_correct_majority"], audit["rescues"], audit["order_changes"]) == (1, 1, 1)
    assert audit["position_bias_rate"] == pytest.approx(1 / 3)
    sc = sc_vote(df).set_index("question_id")
    assert list(sc["voted"]) == ["B", "A", "C"] and list(sc["correct"]) == [False, True, False]
    acc = method_accuracy(df, ["T1", "T2", "T3"], Analysis(n_boot=200)).set_index("method")
    assert acc.loc["regex_vote", "correct"] == 2 and acc.loc["SC", "correct"] == 1
    assert acc.loc["llm_vote", "correct"] == 2 and acc.loc["T3", "correct"] == 1
    assert acc.loc["llm_vote_shuffled", "correct"] == 3


def test_failed_calls_write_nothing_and_say_how_to_resume(tmp_path):
    from olakit.llm import LLM, Endpoint
    from olakit.llm.answerer import CallsFailed
    from olakit.llm.loopback import Loopback
    from olakit.olagpt.config import OlaGPTConfig
    from olakit.olagpt.run import run

    cfg = OlaGPTConfig(
        dataset="aqua",
        n_questions=2,
        templates=["turbo", "ST"],
        strategies=("zero-shot",),
        baselines=(),
        votes=("regex_vote",),
        max_tokens=8,
    )
    with (
        Loopback(fault_rate=1.0, faults=("500",)) as srv,
        LLM(
            Endpoint(srv.base_url, "fake"), cache_dir=tmp_path / "c", progress=False, max_attempts=2, backoff=0.01
        ) as llm,
    ):
        with pytest.raises(
            CallsFailed,
            match=r"2 of 2 calls \(answerer: question types\) failed after retries \(.*500.*\); nothing was written\. "
            "Rerun",
        ):
            run(cfg, llm=llm)


EXACT_STAGES = {"question types", "template choice", "answers", "SC samples", "Auto-CoT", "DIY templates",
                "DIY answers", "LLM votes"}  # fmt: skip
"""The stages whose calls a plan knows exactly; the others (tool loops, program options, Auto-CoT's demo tries, the
second answer stage, verification) are ceilings."""


@pytest.mark.parametrize(
    "settings",
    [
        dict(templates=["turbo", "DT", "ST"], strategies=["zero-shot", "random"], n_notes=[1, 3]),
        dict(templates=["turbo", "ST"], strategies=["zero-shot"], baselines=["SC"], sc_k=3, votes=["llm_vote"]),
        dict(strategies=["zero-shot"], choose_k=2, diy=True),
        dict(templates=["turbo", "ST"], strategies=["zero-shot"], verify=True, answer_stages=2),
        # three strategies over two note counts (1 + 2 + 2 = 5 cells, not 2 + 1 + 1): every stage counted per cell
        dict(
            templates=["turbo", "ST"],
            strategies=["zero-shot", "random", "retrieval"],
            n_notes=[1, 2],
            baselines=["SC"],
            sc_k=2,
            verify=True,
            answer_stages=2,
        ),
        dict(dataset="ekar_zh", templates=["AT", "turbo"], strategies=["zero-shot"]),  # a template of E-KAR's own
        # ST answers with the calculator, turbo without; SC samples ST, with it too
        dict(
            templates=["turbo", "ST"],
            strategies=["zero-shot", "random"],
            n_notes=[1],
            tools="all",
            tool_names=["calculator"],
            tool_templates=["ST"],
            tool_steps=1,
            baselines=["SC"],
            sc_template="ST",
            sc_k=2,
        ),
        # Auto-CoT's demos made by the model: no rationale answers, so every try of every cluster is paid
        dict(templates=["turbo"], strategies=["zero-shot"], baselines=["auto_cot"], autocot_k=2, autocot_tries=2),
    ],
    ids=["cells", "sc-and-llm-vote", "choice-and-diy", "verify-two-stages", "five-cells", "ekar", "tools", "auto-cot"],
)
def test_the_plan_printed_before_a_run_counts_its_calls(settings):
    """`olakit run` prints planned_calls before the first call: exact stages match the calls the run sent, stage by
    stage; ceilings are not exceeded."""
    from olakit.llm import ScriptedModel
    from olakit.llm.answerer import Counted
    from olakit.olagpt.budget import planned_calls
    from olakit.olagpt.config import OlaGPTConfig
    from olakit.olagpt.run import run

    sent: dict = {}
    limits: dict = {}  # the token limits each batch's calls carried

    class PerStage(Counted):
        def batch(self, requests, desc="LLM calls"):
            requests = list(requests)
            desc = re.sub(r" \(step \d+\)$", "", desc)  # a tool loop's rounds: one stage
            sent[desc] = sent.get(desc, 0) + len(requests)
            limits.setdefault(desc, set()).update(dict(r.params).get("max_tokens") for r in requests)
            return super().batch(requests, desc)

    reply = every_stage_reply("Thinking without an answer")  # unparsed: every answer gets its second stage

    # token limits unlike their defaults and unlike each other, so a stage priced at another's limit shows
    limits_set = {"question_type": 10, "template": 16, "sc": 14, "choose": 20, "diy": 40, "verify": 48, "llm_vote": 30,
                  "auto_cot": 18}  # fmt: skip
    cfg = OlaGPTConfig(**{"dataset": "aqua"} | settings, n_questions=2, second_stage_tokens=12,
                       stages={k: {"max_tokens": v} for k, v in limits_set.items()})  # fmt: skip
    run(cfg, llm=PerStage(ScriptedModel(reply)))
    # stages whose calls share a batch: the templates' answers with SC's samples and Auto-CoT's answers; the tool
    # loops' rounds, the templates' and SC's together
    batch_of = {"SC samples": "answers", "Auto-CoT": "answers", "SC samples with tools": "answers with tools"}
    plan = planned_calls(cfg)
    assert plan
    batches: dict = {}
    for stage in plan:
        batches.setdefault(batch_of.get(stage.name, stage.name), []).append(stage)
    for desc, stages in batches.items():
        want, got = sum(s.calls for s in stages), sent.get(desc, 0)
        assert got == want if all(s.exact for s in stages) else 0 < got <= want, (stages, sent)
        assert limits[desc] == {s.max_tokens for s in stages}, (stages, limits[desc])  # priced at the calls' limits
    assert set(sent) <= set(batches)  # no batch the plan left out
    # a stage of one call per question, cell or sample is exact; one whose calls depend on the replies is a ceiling
    assert {s.name for s in plan if s.exact} == {s.name for s in plan} & EXACT_STAGES


def test_a_notes_library_of_another_dataset_is_refused_unless_asked_for():
    """E-KAR questions were shown AQuA's math notes (olagpt-aqua-69, -78) because the default library was AQuA's
    and nothing checked: the default is now the dataset's own, and another dataset's notes are a named condition."""
    from olakit.errors import DataError
    from olakit.llm import ScriptedModel
    from olakit.olagpt.config import OlaGPTConfig
    from olakit.olagpt.run import run

    model = ScriptedModel(lambda prompt, req: "So the answer is A.")
    cfg = OlaGPTConfig(dataset="ekar_zh", n_questions=1, templates=["ST"], strategies=("random",), n_notes=(1,),
                       baselines=(), max_tokens=8)  # fmt: skip
    own = run(cfg, llm=model).records
    assert [ids[0].split("-")[1] for ids in own["note_ids"]] == ["ekar"]  # olagpt-ekar-N: E-KAR's own notes
    with pytest.raises(DataError, match=r"'olagpt-aqua' holds notes of aqua, and the questions are ekar_zh's"):
        run(cfg.replace(library="olagpt"), llm=model)
    cross = run(cfg.replace(library="olagpt", cross_dataset_notes=True), llm=model)
    assert cross.records["note_ids"].iloc[0][0].startswith("olagpt-aqua-")
    assert cross.log.config["cross_dataset_notes"] is True  # the condition is named in the run log


def test_the_notes_tool_searches_the_runs_own_library():
    """The notes tool's file names AQuA's library; on E-KAR it searches E-KAR's, the one the prompts show."""
    from olakit.olagpt.config import OlaGPTConfig
    from olakit.olagpt.tool_use import library

    def notes_tool(cfg):
        return dict(next(t for t in library(cfg) if t.name == "notes").settings)["library"]

    assert notes_tool(OlaGPTConfig(dataset="ekar_zh", tools="all")) == "olagpt-ekar"
    assert notes_tool(OlaGPTConfig(dataset="aqua", tools="all")) == "olagpt"
    assert notes_tool(OlaGPTConfig(dataset="aqua", tools="all", library="notes/mine")) == "notes/mine"
    assert notes_tool(OlaGPTConfig(dataset="gsm8k/test.jsonl", tools="all")) == "olagpt"  # no library: the tool's own


def test_each_stage_of_the_run_takes_its_generation_settings():
    """OlaGPT through the one generation-settings type (olakit.generation), each kind of call against the table
    OlaGPTConfig.STAGE_DEFAULTS documents: question types and the template choice 24 tokens, answers 256 (templates,
    DIY's and Auto-CoT's), SC's samples 256 at 0.7 seeded 0, 1, the composed DIY template 96, verification 300, the
    LLM vote 192, greedy with no seed but SC; a run's --max-tokens and --seed reach every stage, a stage's own
    setting only that one."""
    from olakit.config import ConfigError
    from olakit.llm import ScriptedModel
    from olakit.llm.answerer import Counted
    from olakit.olagpt.config import OlaGPTConfig
    from olakit.olagpt.run import run

    sent = set()

    class PerStage(Counted):
        def batch(self, requests, desc="LLM calls"):
            requests = list(requests)
            for r in requests:
                p = r.call_params()
                sent.add((desc, p.get("max_tokens"), p.get("temperature"), p.get("seed")))
            return super().batch(requests, desc)

    reply = every_stage_reply("So the answer is A.")

    def calls(**settings):
        sent.clear()
        cfg = OlaGPTConfig(dataset="aqua", n_questions=2, templates=["turbo", "DT", "ST"], strategies=["zero-shot"],
                           baselines=["SC", "auto_cot"], autocot_demos="published", sc_k=2,
                           votes=["regex_vote", "llm_vote"], verify=True, diy=True, choose_k=2, choice_comparison=True,
                           **settings)  # fmt: skip
        run(cfg, llm=PerStage(ScriptedModel(reply)))
        return sorted(sent, key=str)

    table = {("question types", 24, 0.0, None), ("template choice", 24, 0.0, None), ("answers", 256, 0.0, None),
             ("answers", 256, 0.7, 0), ("answers", 256, 0.7, 1), ("DIY templates", 96, 0.0, None),
             ("DIY answers", 256, 0.0, None), ("verification reviews", 300, 0.0, None),
             ("verification revisions", 300, 0.0, None), ("LLM votes", 192, 0.0, None)}  # fmt: skip
    assert calls() == sorted(table, key=str)
    given = calls(max_tokens=64, seed=5, stages={"llm_vote": {"max_tokens": 100}, "auto_cot": {"max_tokens": 80}})
    assert given == sorted({("question types", 64, 0.0, 5), ("template choice", 64, 0.0, 5), ("answers", 64, 0.0, 5),
                            ("answers", 80, 0.0, 5), ("answers", 64, 0.7, 5), ("answers", 64, 0.7, 6),
                            ("DIY templates", 64, 0.0, 5), ("DIY answers", 64, 0.0, 5),
                            ("verification reviews", 64, 0.0, 5), ("verification revisions", 64, 0.0, 5),
                            ("LLM votes", 100, 0.0, 5)}, key=str)  # fmt: skip
    with pytest.raises(ConfigError, match=r"unknown stages \['vote'\]; OlaGPTConfig's: question_type, template"):
        OlaGPTConfig(stages={"vote": {"max_tokens": 3}})
    with pytest.raises(ConfigError, match="this method takes no samples"):
        OlaGPTConfig(samples=3)  # SC's samples are sc_k
