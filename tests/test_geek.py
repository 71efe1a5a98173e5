"""GEEK: a loopback server scripted to answer a fixed action sequence gives an exact trace; action parsing and the
fallback; the budget; strategy exploration; recall@k computed independently; the exemplar leakage check; bad input;
and three questions end to end on the embedded model."""

import json

import numpy as np
import pandas as pd
import pytest

from olakit.config import ConfigError, Stats
from olakit.data.loaders import load_questions
from olakit.errors import DataError, UnknownNameError
from olakit.geek import prompts
from olakit.geek.actions import DECOMP, FINAL, RETRIEVE, SELF, fallback, parse_action
from olakit.geek.config import GeekConfig
from olakit.geek.retrievers import recall_at_k
from olakit.geek.run import run_geek
from olakit.llm import LLM, Endpoint
from olakit.llm.answerer import CallsFailed, ScriptedModel
from olakit.llm.loopback import Loopback
from olakit.retrieval.knowledge import load_corpus, read_corpus
from olakit.retrieval.retrievers import make_retriever
from tests import replies

PARAGRAPHS = [
    {"id": "ga", "title": "Albany, Georgia", "text": "Albany, GA has around 75,000 people."},
    {"id": "ny", "title": "Albany, New York", "text": "Albany, NY has almost 100,000 people."},
    {"id": "kh", "title": "Genghis Khan", "text": "Genghis Khan had sixteen children."},
    {"id": "po", "title": "The Police", "text": "The Police were an English rock band."},
]


@pytest.fixture
def corpus_file(tmp_path):
    path = tmp_path / "albany.jsonl"
    path.write_text("".join(json.dumps(p) + "\n" for p in PARAGRAPHS))
    return path


scripted = replies.albany


def geek(tmp_path, model, **kw):
    """GEEK on one question: ``model`` is a loopback server (through the cached client: for what the cache and HTTP
    do) or an in-process ScriptedModel (for what the loop does)."""
    cfg = GeekConfig(n_questions=1, corpus=kw.pop("corpus"), retriever="bm25", k=1, **kw)
    if isinstance(model, ScriptedModel):
        return run_geek(cfg, llm=model)
    # one identity for every loopback server of a test (its port changes), so a rerun finds the cached answers
    endpoint = Endpoint(model.base_url, "fake", identity="loopback|fake")
    with LLM(endpoint, cache_dir=tmp_path / "c", progress=False) as llm:
        return run_geek(cfg, llm=llm)


def test_scripted_action_sequence_gives_the_exact_trace(tmp_path, corpus_file):
    with Loopback(reply=scripted) as srv:
        res = geek(tmp_path, srv, rows=("+RE",), corpus=str(corpus_file))
    rec = res.records.iloc[0]
    trace = json.loads(rec["trace"])["branches"][0]
    assert [s["action"] for s in trace["steps"]] == [
        "select",
        "decomp",
        "select",
        "retrieve",
        "select",
        "decomp",
        "select",
        "self",
        "select",
        "final",
    ]
    assert [s.get("chosen") for s in trace["steps"] if s["action"] == "select"] == [
        DECOMP,
        RETRIEVE,
        DECOMP,
        SELF,
        FINAL,
    ]
    assert trace["steps"][3]["retrieved"][0][0] == "ga" and trace["fallbacks"] == 0 and not trace["forced_final"]
    assert "Sub-question 1: What is the population of Albany, Georgia?" in trace["state"]
    assert "Fact 2 (self): Albany, NY has almost 100,000 people." in trace["state"]
    assert rec["extracted"] == "no" and rec["correct"] == (rec["gold"] == "no")
    assert (rec["k"], rec["corpus"], rec["retriever"], rec["row"]) == (1, "oracle", "bm25", "+RE")
    # every call went through the cache: calls = unique prompts; a rerun pays nothing
    assert res.calls["total"]["paid"] == res.calls["total"]["unique_prompts"] == 10
    with Loopback(reply=scripted) as srv:
        again = geek(tmp_path, srv, rows=("+RE",), corpus=str(corpus_file))
        assert srv.requests == 0 and again.calls["total"]["cached"] == 10


def test_unparseable_and_unusable_actions_fall_back_and_are_counted(tmp_path, corpus_file):
    def reply(prompt, req):
        if "Reply with the letter of the next action only." in prompt:
            return "hmm, let me think" if "Current sub-question" not in prompt else "D"  # D: final while pending
        return scripted(prompt, req)

    res = geek(tmp_path, ScriptedModel(reply), rows=("+De",), corpus=str(corpus_file), max_steps=4, max_sub_questions=2)
    trace = json.loads(res.records.iloc[0]["trace"])["branches"][0]
    chosen = [(s.get("fallback"), s["chosen"]) for s in trace["steps"] if s["action"] == "select"]
    # unparseable with nothing pending -> Add Decomp; "final" is usable even with a sub-question pending
    assert chosen[0] == (DECOMP, DECOMP) and trace["fallbacks"] >= 1
    assert fallback((DECOMP, SELF, FINAL), pending=True, n_sub=1, max_sub=4) == SELF
    assert fallback((DECOMP, RETRIEVE, SELF, FINAL), pending=True, n_sub=1, max_sub=4) == RETRIEVE
    assert fallback((DECOMP, SELF, FINAL), pending=False, n_sub=4, max_sub=4) == FINAL


def test_budget_forces_a_final_answer(tmp_path, corpus_file):
    def reply(prompt, req):
        if "Reply with the letter of the next action only." in prompt:
            return "A" if "Current sub-question" not in prompt else "C"
        return scripted(prompt, req)

    res = geek(tmp_path, ScriptedModel(reply), rows=("+De",), corpus=str(corpus_file), max_steps=3, max_sub_questions=9)
    trace = json.loads(res.records.iloc[0]["trace"])["branches"][0]
    executed = [s["action"] for s in trace["steps"] if s["action"] not in ("select", "final")]
    assert len(executed) == 3 and trace["forced_final"] and trace["steps"][-1]["action"] == "final"


def test_strategy_exploration_branches_and_votes(tmp_path, corpus_file):
    res = geek(tmp_path, ScriptedModel(scripted), rows=("Full",), corpus=str(corpus_file), branches=2, depth=1)
    trace = json.loads(res.records.iloc[0]["trace"])
    assert [b["branch"] for b in trace["branches"]] == ["0.0", "0.1"]
    subs = [b["state"].split("\n")[1] for b in trace["branches"]]
    assert subs == [
        "Sub-question 1: What is the population of Albany Georgia?",
        "Sub-question 1: What is the population of Albany New York?",
    ]
    assert trace["answer"] == "no" and all(b["answer"] == "no" for b in trace["branches"])
    # the branches share the first action selection (one call, in both traces); after the fork every prompt
    # carries its branch's own state, so nothing else repeats
    first = [b["steps"][0] for b in trace["branches"]]
    assert first[0]["action"] == "select" and first[0]["prompt_hash"] == first[1]["prompt_hash"]
    assert res.calls["total"]["requests"] == res.calls["total"]["unique_prompts"]


def test_each_kind_of_call_takes_its_stages_generation_settings(tmp_path, corpus_file):
    """GEEK's calls through the one generation-settings type (olakit.generation): each kind of call greedy at its
    own token limit (select 4, decomp 48, retrieve 48, self 48, final 96), the branch candidates sampled at 0.7 with
    seed 0 (offset by the sample; the Add Decomps after the first, depth 1, greedy); a run's --max-tokens reaches
    every stage, a stage's own setting only that one."""
    sent = {}

    def reply(prompt, request):
        sent.setdefault(prompt, []).append({k: request.get(k) for k in ("max_tokens", "temperature", "seed")})
        return scripted(prompt, request)

    def by_action(res):
        out = {}
        for branch in json.loads(res.records.iloc[0]["trace"])["branches"]:
            for step in branch["steps"]:
                for params in sent[step["input"]]:
                    out.setdefault(step["action"], []).append(tuple(params.values()))
        return {action: sorted(set(params), key=str) for action, params in out.items()}

    res = geek(tmp_path, ScriptedModel(reply), rows=("Full",), corpus=str(corpus_file), branches=2, depth=1)
    assert by_action(res) == {
        "select": [(4, 0.0, None)],
        "decomp": [(48, 0.0, None), (48, 0.7, 0), (48, 0.7, 1)],  # greedy after the first (depth 1)
        "retrieve": [(48, 0.0, None)],
        "self": [(48, 0.0, None)],
        "final": [(96, 0.0, None)],
    }
    sent.clear()
    stages = {"final": {"max_tokens": 200}, "branch": {"temperature": 1.0, "max_tokens": 40}}
    res = geek(tmp_path, ScriptedModel(reply), rows=("Full",), corpus=str(corpus_file), branches=2, depth=1,
               max_tokens=64, stages=stages)  # fmt: skip
    assert by_action(res) == {
        "select": [(64, 0.0, None)],
        "decomp": [(40, 1.0, 0), (40, 1.0, 1), (64, 0.0, None)],  # a branch's own limit, given in stages
        "retrieve": [(64, 0.0, None)],
        "self": [(64, 0.0, None)],
        "final": [(200, 0.0, None)],
    }
    with pytest.raises(ConfigError, match=r"unknown stages \['decide'\]; GeekConfig's: select, decomp"):
        GeekConfig(stages={"decide": {"max_tokens": 3}})
    with pytest.raises(ConfigError, match="samples=2: one answer a question"):
        GeekConfig(samples=2)


def test_action_parsing_on_crafted_outputs():
    allowed = [DECOMP, RETRIEVE, SELF, FINAL]
    assert parse_action("A", allowed) == DECOMP and parse_action("(B)", allowed) == RETRIEVE
    assert parse_action("Action: C) Self Answer", allowed) == SELF and parse_action(" d.", allowed) == FINAL
    assert parse_action("Retrieve & Extract", allowed) == RETRIEVE
    assert parse_action("B", [DECOMP, SELF, FINAL]) is None  # not an action of this row
    assert parse_action("Add Decomp or Final Answer", allowed) is None  # two actions: no choice
    assert parse_action("", allowed) is None


def test_recall_at_k_on_the_oracle_corpus_computed_independently(data_dir):
    import bm25s

    questions = load_questions("strategyqa", "dev", data_dir)[:40]
    items = [x for s in ("train", "dev") for x in json.loads((data_dir / f"strategyqa/{s}.json").read_text())]
    texts = [f"{x.get('term') or ''} {f.strip()}" for x in items for f in x["facts"]]
    owner = [x["qid"] for x in items for _ in x["facts"]]
    index = bm25s.BM25()
    index.index(bm25s.tokenize(texts, stopwords="en", return_ids=False, show_progress=False), show_progress=False)
    retriever = make_retriever("bm25", load_corpus("strategyqa-facts:oracle", data_dir))
    for k in (1, 5):
        recalls = []
        for q in questions:
            gold = {i for i, o in enumerate(owner) if o == q.id}
            docs, scores = index.retrieve(
                bm25s.tokenize([q.text], stopwords="en", return_ids=False, show_progress=False),
                k=len(texts),  # every paragraph, scored; equal scores go by paragraph order
                show_progress=False,
                n_threads=1,
            )
            top = [d for _, d in sorted(zip((-s for s in scores[0].tolist()), docs[0].tolist()))][:k]
            recalls.append(len(set(top) & gold) / len(gold))
        assert recall_at_k(retriever, questions, k) == pytest.approx(float(np.mean(recalls)))
    # open: a question's own facts are never retrieved for it
    open_corpus = load_corpus("strategyqa-facts:open", data_dir)
    q = questions[0]
    hits = make_retriever("bm25", open_corpus).search(q.text, 10, open_corpus.excluded_for(q.id))
    assert not {open_corpus.owner[i] for i, _ in hits} & {q.id}


def test_exemplars_from_the_evaluated_split_are_refused(monkeypatch, data_dir):
    dev = load_questions("strategyqa", "dev", data_dir)
    brooke = next(q for q in dev if q.text.startswith("Could Brooke Shields succeed"))
    assert [q for q in dev if "Albany" in q.text]  # the other widely used exemplar is a dev question too
    prompts.check_no_leak(dev)  # the shipped exemplars are train questions
    doc = {**prompts.prompts(), "exemplars": [{"question": brooke.text, "steps": [], "answer": "yes"}]}
    monkeypatch.setattr(prompts, "prompts", lambda: doc)
    with pytest.raises(DataError, match=f"is question {brooke.id} of the split being evaluated"):
        prompts.check_no_leak(dev)
    with pytest.raises(DataError, match=f"contains question {brooke.id}"):
        prompts.check_prompt(f"Question: {dev[0].text}\n{brooke.text}", dev[0].id, prompts.normalised(dev))


def test_two_processes_building_one_bm25_index_keep_one_whole_index(tmp_path):
    """Two processes that build the same corpus's BM25 index at once (two notebooks, two of the suite's workers) leave
    one whole index and no temporary folder, and answer alike; a kept folder without the index's parameters (a disk
    fault) is built again, not left to cost every later process a build."""
    import os
    import subprocess
    import sys

    corpus = tmp_path / "many.jsonl"  # big enough that the two builds overlap (about a second each)
    corpus.write_text("".join(json.dumps({"id": str(i), "title": f"t{i}", "text": f"w{i % 97} v{i % 13} u{i}"}) + "\n"
                              for i in range(30_000)))  # fmt: skip
    code = (
        "import sys\nfrom olakit.retrieval.knowledge import read_corpus\n"
        "from olakit.retrieval.retrievers import make_retriever\n"
        "print(make_retriever('bm25', read_corpus(sys.argv[1])).search('w5 v3', 3))"
    )
    env = {**os.environ, "OLAKIT_INDEX_DIR": str(tmp_path / "indexes")}

    def run(n: int) -> list[str]:
        procs = [subprocess.Popen([sys.executable, "-c", code, str(corpus)], env=env, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True) for _ in range(n)]  # fmt: skip
        done = [p.communicate(timeout=300) for p in procs]
        assert all(p.returncode == 0 for p in procs), [err[-2000:] for _, err in done]
        return [out for out, _ in done]

    first = run(2)
    (digest,) = (tmp_path / "indexes").iterdir()
    assert first[0] == first[1] and sorted(p.name for p in digest.iterdir()) == ["bm25"]
    (digest / "bm25" / "params.index.json").unlink()
    assert run(1) == first[:1]
    assert sorted(p.name for p in digest.iterdir()) == ["bm25"] and (digest / "bm25" / "params.index.json").is_file()


def test_bad_input_gets_one_clear_error_and_writes_nothing(tmp_path, corpus_file):
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps(PARAGRAPHS[0]) + "\n{not json\n")
    with pytest.raises(DataError, match=r"bad\.jsonl line 2: malformed JSON"):
        read_corpus(bad)
    bad.write_text(json.dumps({"id": "x", "text": "no title"}) + "\n")
    with pytest.raises(DataError, match=r"line 1: paragraph lacks \['title'\]"):
        read_corpus(bad)
    corpus = read_corpus(corpus_file)
    with pytest.raises(DataError, match="k = 9: retrieve between 1 and 4"):
        make_retriever("bm25", corpus).search("Albany", 9)
    with pytest.raises(DataError, match="empty retrieval query"):
        make_retriever("bm25", corpus).search("  ", 1)
    with pytest.raises(UnknownNameError, match="unknown retriever 'tfidf'"):
        make_retriever("tfidf", corpus)
    with pytest.raises(ConfigError, match=r"rows=\['CoT\+'\]: unknown rows \['CoT\+'\]"):
        GeekConfig(rows=("CoT+",))
    with pytest.raises(DataError, match="k = 5: the corpus"):
        run_geek(GeekConfig(n_questions=1, rows=("+RE",), corpus=str(corpus_file), k=5))


def test_failed_calls_write_nothing(tmp_path, corpus_file):
    with Loopback(fault_rate=1.0, faults=("500",)) as srv:
        cfg = GeekConfig(n_questions=1, rows=("zero-shot",), corpus=str(corpus_file))
        with (
            LLM(
                Endpoint(srv.base_url, "fake"), cache_dir=tmp_path / "c", progress=False, max_attempts=2, backoff=0.01
            ) as llm,
            pytest.raises(CallsFailed, match="nothing was written"),
        ):
            run_geek(cfg, llm=llm)


@pytest.mark.real_model
def test_three_questions_end_to_end_on_the_embedded_model(tmp_path):
    from olakit.llm.local import LocalServer
    from tests.test_local import endpoint

    cfg = GeekConfig(n_questions=3, rows=("zero-shot", "+RE"), max_steps=3, max_sub_questions=1, k=2)
    with LocalServer(n_parallel=3, n_ctx=6144) as srv, LLM(endpoint(srv), progress=False) as llm:
        res = run_geek(cfg, llm=llm)
    df = res.records
    assert len(df) == 6 and set(df["row"]) == {"zero-shot", "+RE"}
    assert df["extracted"].dropna().isin(["yes", "no"]).all()
    assert res.calls["total"]["paid"] == res.calls["total"]["unique_prompts"] and res.calls["total"]["failed"] == 0
    assert set(res.extras.recall) == {"recall@1", "recall@3", "recall@5", "recall@10"}
    steps = [s for t in df["trace"] if t for b in json.loads(t)["branches"] for s in b["steps"]]
    assert any(s["action"] == "retrieve" for s in steps) or all(
        json.loads(t)["branches"][0]["forced_final"] for t in df.loc[df["row"] == "+RE", "trace"]
    )


def test_a_sub_question_with_nothing_to_search_does_not_stop_the_run(tmp_path, corpus_file):
    """A model that writes the sub-question "No" (stopwords only): the extractor sees no paragraph, the trace
    says why, and the loop goes on (found by a live run on the embedded model)."""

    def reply(prompt, req):
        if prompt.rstrip().endswith("Sub-question:"):
            return "No"
        return scripted(prompt, req)

    res = geek(tmp_path, ScriptedModel(reply), rows=("+RE",), corpus=str(corpus_file), max_steps=3)
    steps = json.loads(res.records.iloc[0]["trace"])["branches"][0]["steps"]
    retrieve = next(s for s in steps if s["action"] == "retrieve")
    assert retrieve["retrieved"] == [] and "no searchable words" in retrieve["retrieval_error"]
    assert "(no paragraph found)" in retrieve["input"]


def test_list_markers_are_stripped_but_leading_numbers_kept(tmp_path, corpus_file, data_dir):
    """A fact or sub-question that starts with a number keeps it (the regex once cut "11 is a prime number." to "is
    a prime number."); only list markers and labels go."""
    from olakit.geek.agent import _first_line

    items = [x for s in ("train", "dev") for x in json.loads((data_dir / f"strategyqa/{s}.json").read_text())]
    numeric = [f.strip() for x in items for f in x["facts"] if f.strip()[:1].isdigit()]
    assert len(numeric) >= 17
    assert [f for f in numeric if _first_line(f) != f] == []
    assert _first_line("2) 1066 was the year of Hastings.") == "1066 was the year of Hastings."
    assert _first_line("* Sub-question 2: Who won?") == "Who won?" and _first_line("(3) 7 days") == "7 days"

    def reply(prompt, req):
        if prompt.rstrip().endswith("Sub-question:"):
            return "1. 11 players: how many on a team?"
        if prompt.rstrip().endswith("Answer:"):
            return "11 is a prime number."
        if "Reply with the letter of the next action only." in prompt:
            return "C" if "Current sub-question" in prompt else ("D" if "\nFact " in prompt else "A")
        return scripted(prompt, req)

    res = geek(tmp_path, ScriptedModel(reply), rows=("+De",), corpus=str(corpus_file))
    state = json.loads(res.records.iloc[0]["trace"])["branches"][0]["state"]
    assert "Sub-question 1: 11 players: how many on a team?\nFact 1 (self): 11 is a prime number." in state


def test_self_answer_sees_the_question_state(tmp_path, corpus_file):
    """Seeds/002 Fig 3: the question state goes to the model in every round, Self Answer included."""
    model = ScriptedModel(scripted)
    geek(tmp_path, model, rows=("+RE",), corpus=str(corpus_file))
    question = load_questions("strategyqa", "dev")[0].text
    self_prompts = [p for p in model.prompts if p.rstrip().endswith("Answer:") and "own knowledge" in p]
    assert len(self_prompts) == 1
    (prompt,) = self_prompts
    assert f"Question: {question}" in prompt  # the question, and what is known so far
    assert "Fact 1 (retrieved): Albany, GA has around 75,000 people." in prompt
    assert "Sub-question: What is the population of Albany, New York?" in prompt


def _split_reply(prompt, req):
    """Branch candidates ask about Georgia (even seed) or New York (odd); the final answer follows the branch."""
    if "Based on the facts above" in prompt:
        return "So the answer is yes." if "Albany Georgia" in prompt else "So the answer is no."
    return scripted(prompt, req)


@pytest.mark.parametrize(("tie", "expected"), [("first", "yes"), ("none", None)])
def test_a_branch_tie_follows_the_documented_rule_and_is_counted(tmp_path, corpus_file, tie, expected):
    from olakit.analysis.traces import steps_per_question

    res = geek(tmp_path, ScriptedModel(_split_reply), rows=("Full",), corpus=str(corpus_file), branches=2, tie=tie)
    trace = json.loads(res.records.iloc[0]["trace"])
    assert [b["answer"] for b in trace["branches"]] == ["yes", "no"]  # branch 0.0 asked about Georgia
    assert trace["tie"] is True and trace["answer"] == expected
    assert res.records.iloc[0]["extracted"] == expected or (
        expected is None and res.records.iloc[0]["extracted"] is None
    )
    assert steps_per_question(res.records).set_index("method").loc["Full", "ties"] == 1
    with pytest.raises(ConfigError, match="tie"):
        GeekConfig(tie="coin")


def test_a_random_branch_tie_is_broken_by_the_analysis_seed_not_the_runs(tmp_path, corpus_file):
    """Every vote's random tie-break takes ``analysis_seed`` (olakit.config.Stats): the same run (its seed, so its
    branches) broken by eight analysis seeds gives both answers, and the run's tie setting is VoteRule's own."""
    answers = set()
    for analysis_seed in range(8):
        res = geek(tmp_path, ScriptedModel(_split_reply), rows=("Full",), corpus=str(corpus_file), branches=2,
                   tie="random", analysis_seed=analysis_seed)  # fmt: skip
        trace = json.loads(res.records.iloc[0]["trace"])
        assert [b["answer"] for b in trace["branches"]] == ["yes", "no"] and trace["tie"] is True
        answers.add(trace["answer"])
        assert res.log.analysis["tie"] == "random" and res.log.analysis["analysis_seed"] == analysis_seed
    assert answers == {"yes", "no"}


def test_the_table3_judge_sees_the_answer_bearing_branch_in_the_human_layout(tmp_path, corpus_file):
    """Both chains in one layout (no source tags), the GEEK side from the branch whose answer the majority gave."""
    from olakit.geek.assessment import assess

    def reply(prompt, req):  # branch 0.0 asks about Georgia (answer yes), 0.1 and 0.2 about New York (no)
        if prompt.rstrip().endswith("Sub-question:") and req.get("seed") is not None:
            return f"What is the population of Albany {'Georgia' if req['seed'] % 3 == 0 else 'New York'}?"
        return _split_reply(prompt, req)

    res = geek(tmp_path, ScriptedModel(reply), rows=("Full",), corpus=str(corpus_file), branches=3)
    trace = json.loads(res.records.iloc[0]["trace"])
    winner = trace["answer"]
    bearing = [b for b in trace["branches"] if b["answer"] == winner]
    assert len(bearing) == 2 and trace["answer_branch"] == bearing[0]["branch"] != "0.0"  # 0.0 is the minority
    judge = ScriptedModel(lambda prompt, req: "Answer 1")
    questions = {q.id: q for q in load_questions("strategyqa", "dev")}
    judgements = assess(judge, res.records, questions, "Full", 48)
    assert len(judge.prompts) == 2 and len(judgements) == 1
    prompt = judge.prompts[0]
    first, second = prompt.split("[Answer 1]\n")[1].split("\n\n[Answer 2]\n")
    second = second.split("\n\nWhich answer is better")[0]
    for chain in (first, second):
        assert chain.startswith("Sub-questions:\n1. ") and "\nFacts:\n1. " in chain
        assert "(retrieved)" not in chain and "(self)" not in chain and "Fact 1" not in chain
    assert "Albany New York" in first + second and "Albany Georgia" not in first + second


def test_the_oracle_setting_is_labelled_an_upper_bound_in_table2(tmp_path, corpus_file):
    from olakit.analysis.traces import geek_tables

    res = geek(tmp_path, ScriptedModel(scripted), rows=("zero-shot", "+RE"), corpus=str(corpus_file))
    assert res.extras.corpus.endswith(":oracle (upper bound)")
    assert set(geek_tables(res.records, Stats(n_boot=20))["table2"]["corpus"]) == {"oracle (upper bound)"}


def test_every_figure_of_an_embedded_model_run_says_so(tmp_path):
    """Only GEEK's Table 2 carried the "embedded test model" banner; now finish stamps every figure of a run the
    embedded model made any part of (a judge's part included), and none of a run on another endpoint."""
    import matplotlib.pyplot as plt

    from olakit.notebook.outputs import finish
    from olakit.result import EMBEDDED_BANNER, Result
    from olakit.runlog import RunLog, role_entry
    from tests.test_records import rec

    def made_by(endpoint, part=False):
        roles = {"answerer": role_entry(endpoint)}
        if part:  # the embedded model made only a part (a judge) of the result
            return RunLog(door="geek", kind="olagpt", roles={"answerer": role_entry(Endpoint("http://x/v1", "gpt-x"))}
                          ).with_part("judge", RunLog(door="geek judge", roles=roles))  # fmt: skip
        return RunLog(door="geek", kind="olagpt", roles=roles)

    embedded, remote = made_by(Endpoint.embedded()), made_by(Endpoint("http://127.0.0.1:9/v1", "gpt-x"))
    assert embedded.embedded is True and remote.embedded is False and made_by(Endpoint.embedded(), True).embedded
    from olakit.data.records import to_frame

    records = to_frame([rec()])
    for name, log, banner in (("e", made_by(Endpoint.embedded(), True), True), ("r", remote, False)):
        fig, ax = plt.subplots()
        ax.set_title("Table 2")
        finish(Result(records, log), "template_count", {"out_dir": str(tmp_path / name)}, tmp_path / name, tables={},
               figures={"f": fig})  # fmt: skip
        said = [t.get_text() for t in fig.texts] + [fig.get_suptitle()]
        assert any(EMBEDDED_BANNER in t for t in said) is banner, name
        assert (tmp_path / name / "figures" / "f.png").is_file()


def test_the_trace_views_by_hand_with_two_branches_that_share_their_first_steps():
    """GEEK's trace tables on two rows worked by hand. +RE: q1 one branch of eight steps (two decompositions, a
    retrieval, a final answer; one selection fell back); q2 a selection that fell back and a retrieval, then one
    decomposition call with two samples that split it into branches 0.0 and 0.1, each carrying the first two steps
    (marked branch 0), 0.1's final answer forced. zero-shot: two direct answers, no trace."""
    from olakit.analysis.traces import action_counts, cost_per_row, judge_table, steps_per_question
    from olakit.llm.judge import Judgement

    def step(action, h, branch="0", **extra):
        return {"action": action, "prompt_hash": h, "branch": branch, **extra}

    def trace(branches, tie=False):
        return json.dumps({"tie": tie, "branches": [{"branch": n, "steps": s, "state": st, "forced_final": f}
                                                     for n, s, st, f in branches]})  # fmt: skip

    q1 = [step("select", "a1"), step("decomp", "a2"), step("select", "a3", fallback="retrieve"),
          step("retrieve", "a4"), step("select", "a5"), step("decomp", "a6"), step("select", "a7"),
          step("final", "a8")]  # fmt: skip
    shared = [step("select", "b1", fallback="retrieve"), step("retrieve", "b2")]
    left = [*shared, step("decomp", "b3", "0.0"), step("select", "b4", "0.0"), step("final", "b5", "0.0")]
    right = [*shared, step("decomp", "b3", "0.1"), step("select", "b6", "0.1", fallback="final"),
             step("final", "b7", "0.1")]  # fmt: skip
    two = "Question: Q?\nSub-question 1: A?\nFact 1 (self): a.\nSub-question 2: B?\nFact 2 (retrieved): b."
    records = pd.DataFrame([
        {"row": "+RE", "question_id": "q1", "correct": True, "prompt_tokens": 100, "completion_tokens": 20,
         "trace": trace([("0", q1, two, False)])},
        {"row": "+RE", "question_id": "q2", "correct": False, "prompt_tokens": 200, "completion_tokens": 40,
         "trace": trace([("0.0", left, "Question: Q?\nSub-question 1: A?\nFact 1 (self): a.\n"
                                       "Current sub-question (unanswered): B?", False),
                         ("0.1", right, "Question: Q?\nCurrent sub-question (unanswered): C?", True)], tie=True)},
        {"row": "zero-shot", "question_id": "q1", "correct": False, "prompt_tokens": 10, "completion_tokens": 5,
         "trace": ""},
        {"row": "zero-shot", "question_id": "q2", "correct": False, "prompt_tokens": 20, "completion_tokens": 5,
         "trace": ""},
    ])  # fmt: skip

    counts = action_counts(records).set_index(["method", "action"])["count"].to_dict()
    # q1: decomp 2, retrieve 1, final 1, fallback 1; q2: the shared fallback and retrieval once, a decomposition and
    # a final answer in each branch, 0.1's fallback
    assert counts == {("+RE", "decomp"): 4, ("+RE", "retrieve"): 2, ("+RE", "final"): 3, ("+RE", "fallback"): 3}

    (steps,) = steps_per_question(records).to_dict("records")
    # per branch, its whole path: actions 4 (q1), 3 and 3; sub-questions 2, 2 (one of them pending) and 1
    assert steps["method"] == "+RE" and steps["branches_per_question"] == 1.5
    assert (steps["mean_actions"], steps["max_actions"]) == (pytest.approx(10 / 3), 4)
    assert (steps["mean_sub_questions"], steps["forced_share"], steps["ties"]) == (pytest.approx(5 / 3), 1 / 3, 1)

    cost = cost_per_row(records).set_index("method")
    # distinct prompts: q1 8; q2 7 (the shared two once, the two samples' decomposition one call); direct: 1 each
    assert cost["calls_per_question"].to_dict() == {"+RE": 7.5, "zero-shot": 1.0}
    assert cost["accuracy"].to_dict() == {"+RE": 0.5, "zero-shot": 0.0}
    assert cost["tokens_per_question"].to_dict() == {"+RE": 180.0, "zero-shot": 20.0}

    table = judge_table([Judgement("tie", "1", "1"), Judgement("b", "2", "2")], "Full", Stats(n_boot=10))
    assert (table["equal"], table["geek"], table["row"]) == (0.5, 0.5, "Full") and "tie" not in table
