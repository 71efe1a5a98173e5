"""The review loop against a loopback server scripted with reviews of chosen scores: each stop rule, the unparseable
review, literal against intended, the standard mode's similar questions and best answer; parsing of step counts and
similar questions on crafted outputs; bad input."""

import json
import re

import pytest

from olakit.analysis.intervals import verdict_shares
from olakit.config import ConfigError, Stats
from olakit.errors import DataError
from olakit.llm import Endpoint
from olakit.llm.answerer import Counted, ScriptedModel
from olakit.llm.endpoint import LLMError
from olakit.llm.judge import judge_pairs
from olakit.review.config import ReviewConfig
from olakit.review.loop import Loop
from olakit.review.parse import parse_scores, parse_similar, parse_steps
from olakit.review.run import run_review
from tests import replies

SCORES = {"Q5": [5], "Q44": [4, 4], "Q45": [4, 5], "Q333": [3, 3, 3], "Qbad": [None, 4, 4], "Q3then4": [3, 4]}


def scripted(prompt, req):
    REQS.append(req)
    q = re.search(r"(Q\w+)", prompt).group(1) if re.search(r"Q\w+", prompt) else "?"
    if prompt.startswith("Please break down the following problem"):
        return "1. Understand\n2. Solve\nTotal Steps: 2"
    if prompt.startswith("Generate three similar problems"):
        return "Similar one?\nSimilar two?\nSimilar three?"
    if prompt.startswith("Analysis and Explain"):
        return f"analysis of {prompt.rsplit(': ', 1)[-1]}"
    if "Please summarise the common reasoning" in prompt:
        return "1. common step\n2. another\n2"
    if prompt.startswith("Based on the following preliminary outline"):
        return "1. a\n2. b\n3. c\n4. d\nSteps: 4"
    if prompt.startswith("Here is the outline of the question"):
        part = re.search(r"generate PART (\d)", prompt).group(1)
        return f"part {part} of {q} (sample seed {req.get('seed')})"
    if "Think about this question and answer it step-by-step" in prompt:
        return f"first answer to {q} (seed {req.get('seed')})"
    if prompt.startswith("Here is the answer to the question"):
        n = sum(1 for p in SEEN if p == q)
        SEEN.append(q)
        score = SCORES[q][min(n, len(SCORES[q]) - 1)]
        return score if isinstance(score, str) else review_text(score)  # a review's own text, or one of a score
    if "Please polish the answer" in prompt:
        return f"polished answer to {q}"
    if "Please improve the original answer" in prompt:
        REVISED.append(q)
        return f"revised answer to {q} ({REVISED.count(q)})"
    return f"direct answer to {q}"


review_text, graded_reply = replies.review_text, replies.graded

SEEN: list = []
REVISED: list = []
REQS: list = []


def run_loop(tmp_path, questions, **cfg):
    SEEN.clear()
    REVISED.clear()
    REQS.clear()
    counter = Counted(ScriptedModel(scripted))
    hs = Loop({"answerer": counter, "reviewer": counter}, ReviewConfig(**cfg)).run(questions)
    return hs, counter.counts


def test_each_stop_rule(tmp_path):
    hs, _ = run_loop(tmp_path, ["Q5", "Q44", "Q45", "Q333", "Qbad", "Q3then4"])
    by = {h.question: h for h in hs}
    # first review 5: polish once and stop
    assert [r["scores"]["overall"] for r in by["Q5"].reviews] == [5] and by["Q5"].final == "polished answer to Q5"
    # first 4: one more round; two 4s in a row stop (the revision stands)
    assert [r["scores"]["overall"] for r in by["Q44"].reviews] == [4, 4]
    assert by["Q44"].reviews[-1]["decision"] == "two 4s in a row: stop" and by["Q44"].final.startswith("revised")
    assert [r["scores"]["overall"] for r in by["Q45"].reviews] == [4, 5]
    # below the threshold three times: three revisions, the last is final
    assert len(by["Q333"].reviews) == 3 and by["Q333"].final == "revised answer to Q333 (3)"
    assert "iterations used up" in by["Q333"].reviews[-1]["decision"]
    # unparseable: recorded, revised as below threshold, then 4 -> one more round? (a later 4 with no first
    # score is at the threshold: stop)
    assert by["Qbad"].reviews[0]["unparseable"] and by["Qbad"].reviews[0]["scores"]["overall"] is None
    assert [r["scores"]["overall"] for r in by["Qbad"].reviews] == [None, 4]
    assert [r["scores"]["overall"] for r in by["Q3then4"].reviews] == [3, 4]
    # every question has an answer per iteration 0..3, carried forward after it stopped
    assert all(len(h.answers) == 4 for h in hs) and by["Q5"].answers[1:] == ["polished answer to Q5"] * 3


def test_intended_reviews_the_revision_literal_regenerates(tmp_path):
    intended, _ = run_loop(tmp_path, ["Q333"], behaviour="intended")
    inputs = [s["input"] for s in intended[0].stages if s["stage"].startswith("review")]
    assert "revised answer to Q333 (1)" in inputs[1] and "revised answer to Q333 (2)" in inputs[2]
    literal, counts = run_loop(tmp_path / "l", ["Q333"], behaviour="literal")
    inputs = [s["input"] for s in literal[0].stages if s["stage"].startswith("review")]
    assert not any("revised" in i for i in inputs)  # a revision never reaches the next review
    assert "(seed 1)" in inputs[1] and "(seed 2)" in inputs[2]  # each iteration regenerates (a new sample)


def test_standard_mode_similar_questions_best_answer_and_steps(tmp_path):
    hs, counts = run_loop(tmp_path, ["Q5"], mode="standard")
    h = hs[0]
    assert h.similar == ["Similar one?", "Similar two?", "Similar three?"] and h.steps == 4
    assert h.reference == "analysis of Similar two?"  # the best of three: line "2"
    parts = [s for s in h.stages if s["stage"] == "step answers"]
    assert len(parts) == 4  # more than 3 steps: each step answered separately, then merged
    assert (
        "reference answer to a similar question" in parts[0]["input"]
        and "analysis of Similar two?" in parts[0]["input"]
    )
    assert h.answers[0].count("part ") == 4 and counts["paid"] == counts["unique_prompts"]


def test_step_count_parsing_on_crafted_outlines():
    assert parse_steps("1. a\n2. b\n3. c\nTotal Steps: 3") == 3
    assert parse_steps("Steps: 4") == 4
    assert parse_steps("...\nThere are four steps in total.") == 4
    assert parse_steps("...\n共五个步骤") == 5
    assert parse_steps("...\n总共有3个步骤") == 3
    assert parse_steps("1. a\n2. b\n\n2") == 2
    assert parse_steps("just prose without a count") == 0
    assert parse_steps("Total steps: 12") == 0  # more than 10 is no step count


def test_similar_question_parsing_when_the_model_returns_other_than_three_lines():
    assert parse_similar("A?\nB?\nC?") == ["A?", "B?", "C?"]
    assert parse_similar("Here they are:\n1. A?\n2. B?\n3. C?") == ["A?", "B?", "C?"]
    assert parse_similar("A? B?\nNote: these are similar.") == ["A? B?", "Note: these are similar."]
    assert parse_similar("A? B? C?") == ["A?", "B?", "C?"]
    assert parse_similar("only one?") == ["only one?"]
    assert parse_similar("") == []


def test_scores_are_parsed_strictly():
    s = parse_scores("1. Accuracy: 4\n2. Completeness: 3/5\n3. Clarity: five\nDepth: 4 of 5\nGeneral Score: 4")
    assert s == {"accuracy": 4, "completeness": 3, "clarity": 5, "depth": 4, "overall": 4}
    assert parse_scores("I rate it 4 out of 5 overall.")["overall"] is None
    assert parse_scores("Overall Score: 7")["overall"] is None


def test_bad_input_gets_a_clear_error(tmp_path, monkeypatch):
    with pytest.raises(ConfigError, match="mode='quick': input should be 'lite' or 'standard'"):
        ReviewConfig(mode="quick")
    with pytest.raises(ConfigError, match="behaviour='literally'"):
        ReviewConfig(behaviour="literally")
    with pytest.raises(DataError, match="an empty question"):
        run_review(ReviewConfig(dataset="open"), ask="   ")
    with pytest.raises(LLMError, match="unknown role 'critic'"):
        Endpoint.from_env("critic")
    monkeypatch.setenv("OLAKIT_REVIEWER_BASE_URL", "http://127.0.0.1:9/v1")
    with pytest.raises(LLMError, match="OLAKIT_REVIEWER_BASE_URL is set but OLAKIT_REVIEWER_MODEL is not"):
        Endpoint.from_env("reviewer")
    assert not (tmp_path / "out").exists()


def test_an_outline_of_eight_steps_gets_eight_step_calls_and_none_is_noted(tmp_path):
    """No cap: an 8-step outline once got 5 step calls, parts 6-8 dropped."""

    def reply(prompt, req):
        if prompt.startswith("Please break down the following problem"):
            return "1. a\n...\nTotal Steps: 8"
        return scripted(prompt, req)

    SEEN.clear()
    model = ScriptedModel(reply)
    h = Loop({"answerer": model, "reviewer": model}, ReviewConfig()).run(["Q5"])[0]
    parts = [s for s in h.stages if s["stage"] == "step answers"]
    assert h.steps == 8 and len(parts) == 8 and "generate PART 8 of" in parts[-1]["input"]
    model = ScriptedModel(lambda p, r: "no outline at all" if p.startswith("Please break") else reply(p, r))
    h = Loop({"answerer": model, "reviewer": model}, ReviewConfig()).run(["Q5"])[0]
    assert h.steps == 0 and any("no step count" in s.get("note", "") for s in h.stages)
    assert [s["stage"] for s in h.stages if s["stage"].startswith("answer")] == ["answer"]  # one call


def test_literal_reads_the_step_count_with_the_seeds_parser(tmp_path):
    """The seed's parse_steps (V1.4), worked through by hand on each outline: lines from the last up, the first that
    matches one of its patterns."""
    from olakit.review.parse import parse_steps_seed

    cases = {
        "1. Gather facts\n2. Compare\nStep 4: conclude": 4,  # "Step n" anywhere in a line (olakit's parser: 0)
        "1. a\n2. b\nTotal Steps: 8": 8,
        "Outline\nThere are 3 sub-problems.": 3,
        "...\n总共有6个步骤": 6,
        "...\n分为五个步骤": 5,
        "...\nIt takes seven steps": 7,
        "1. a\n2. b\n\n3": 3,  # a bare number on the last line
        "...\nthree": 3,
        "...\nTotal Steps: 12\nStep 2 of the plan": 2,  # the last line first
        "...\nTotal Steps: 12": 0,  # outside 1-10, and nothing above
        "prose only": 0,
    }
    assert {text: parse_steps_seed(text) for text in cases} == cases
    assert parse_steps("1. Gather facts\n2. Compare\nStep 4: conclude") == 0  # intended reads a stated count only

    def reply(prompt, req):
        if prompt.startswith("Please break down the following problem"):
            return "1. Gather facts\n2. Compare\n3. Weigh\nStep 4: conclude"
        return scripted(prompt, req)

    SEEN.clear()
    model = ScriptedModel(reply)
    h = Loop({"answerer": model, "reviewer": model}, ReviewConfig(behaviour="literal")).run(["Q5"])[0]
    assert h.steps == 4 and len([s for s in h.stages if s["stage"] == "step answers"]) == 4


def test_standard_mode_asks_again_once_when_the_similar_questions_are_not_three(tmp_path):
    asked = []

    def reply(prompt, req):
        if prompt.startswith("Generate three similar problems"):
            asked.append(req.get("seed"))
            return "Only one similar question?" if len(asked) == 1 else "Two?\nThree?\nFour?"
        return scripted(prompt, req)

    SEEN.clear()
    model = ScriptedModel(reply)
    h = Loop({"answerer": model, "reviewer": model}, ReviewConfig(mode="standard")).run(["Q5"])[0]
    assert len(asked) == 2 and asked[0] != asked[1]  # a new sample, not the cached reply
    assert h.similar == ["Two?", "Three?", "Four?"]
    stages = [s["stage"] for s in h.stages if s["stage"].startswith("similar questions")]
    assert stages == ["similar questions", "similar questions (regenerated)"]

    asked.clear()
    model = ScriptedModel(
        lambda p, r: (asked.append(1), "Just one?")[1] if p.startswith("Generate three") else reply(p, r)
    )
    h = Loop({"answerer": model, "reviewer": model}, ReviewConfig(mode="standard")).run(["Q5"])[0]
    assert len(asked) == 2 and h.similar == ["Just one?"]  # once only: the loop goes on with what came


def test_reviews_cut_at_the_token_limit_are_counted(tmp_path):
    from olakit.analysis.iterations import stage_cost

    def reply(prompt, req):
        if prompt.startswith("Here is the answer to the question"):
            assert req["max_tokens"] == 77
            return "Accuracy: 4\nCompleteness: 3\nClari", "length"  # stopped before its overall score
        return graded_reply(prompt, req)

    model = ScriptedModel(reply)
    res = run_review(
        ReviewConfig(dataset="aqua", n_questions=2, max_iterations=2, stages={"review": {"max_tokens": 77}}),
        llms={"answerer": model, "reviewer": model, "direct": model},
    )
    reviews = [r for h in res.extras.histories for r in h.reviews]
    assert len(reviews) == 4 and all(r["cut_off"] and r["unparseable"] for r in reviews)
    cost = stage_cost(res.records).set_index("stage")
    assert cost.loc["review", "cut_off"] == 4 and cost.loc["revise", "cut_off"] == 0


def test_each_stage_of_the_loop_takes_its_generation_settings():
    """The loop through the one generation-settings type (olakit.generation): an outline, answer or revision 400
    tokens, a review 300, a step 200, each at the blog's 0.7 seeded 0, the direct answer greedy at 400
    (``intended``); the seed's 800 on every loop call (``literal``); a run's --max-tokens reaches every stage, a
    stage's own setting only that one."""
    sent = set()

    def stage(request):
        system = request["messages"][0]["content"] if request["messages"][0]["role"] == "system" else ""
        user = request["messages"][-1]["content"]
        if system.startswith("Provide detailed feedback"):
            return "review"
        if system.startswith("You should only write it in one paragraph"):
            return "step"
        if system or any(m in user for m in ("Think about this question", "Here is the", "According to the question")):
            return "answer"
        return "direct"

    def reply(prompt, request):
        sent.add((stage(request), request.get("max_tokens"), request.get("temperature"), request.get("seed")))
        if request["messages"][0]["content"].startswith("You are an organized analyst"):  # four steps: one call each
            return "1. Read.\n2. Plan.\n3. Work.\n4. Check.\nTotal Steps: 4"
        return graded_reply(prompt, request)

    def run(**settings):
        sent.clear()
        model = ScriptedModel(reply)
        run_review(ReviewConfig(dataset="aqua", n_questions=2, max_iterations=2, **settings),
                   llms={"answerer": model, "reviewer": model, "direct": model})  # fmt: skip
        return sorted(sent, key=str)

    assert run() == sorted({("answer", 400, 0.7, 0), ("step", 200, 0.7, 0), ("review", 300, 0.7, 0),
                            ("direct", 400, 0.0, None)}, key=str)  # fmt: skip
    literal = {(s, m, t) for s, m, t, _ in run(behaviour="literal")}
    assert literal == {("answer", 800, 0.7), ("step", 800, 0.7), ("review", 800, 0.7), ("direct", 400, 0.0)}
    assert run(max_tokens=64, stages={"review": {"max_tokens": 500}}) == sorted(
        {("answer", 64, 0.7, 0), ("step", 64, 0.7, 0), ("review", 500, 0.7, 0), ("direct", 64, 0.0, None)}, key=str
    )
    with pytest.raises(ConfigError, match=r"unknown stages \['outline'\]; ReviewConfig's: answer, review"):
        ReviewConfig(stages={"outline": {"max_tokens": 3}})


def test_the_prompts_are_the_seeds_word_for_word(data_dir):
    """Every prompt of the loop against the seed's code (V1.4), read from the seed itself: the code is parsed, each
    message content rebuilt from its f-string with a placeholder per field, and compared."""
    import ast

    from olakit.review.loop import prompts

    seed = (data_dir.parent / "seeds/003_f638e0674a62da63.txt").read_text()
    code = seed[seed.index("# V1.4") : seed.index("\nKevin's Blog")].replace("\u00a0", " ")  # the page's spaces
    tree = ast.parse(code)

    def text(node):
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.JoinedStr):
            return "".join(v.value if isinstance(v, ast.Constant) else "{}" for v in node.values)
        return None

    seed_prompts, assigned = set(), {}
    nodes = sorted(
        (n for n in ast.walk(tree) if isinstance(n, ast.Assign | ast.Dict)), key=lambda n: (n.lineno, n.col_offset)
    )
    for node in nodes:
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
            assigned[node.targets[0].id] = text(node.value)
        elif isinstance(node, ast.Dict):
            fields = {k.value: v for k, v in zip(node.keys, node.values) if isinstance(k, ast.Constant)}
            if "content" in fields:
                v = fields["content"]
                seed_prompts.add(assigned.get(v.id) if isinstance(v, ast.Name) else text(v))
    seed_prompts.discard(None)
    assert len(seed_prompts) == 16

    own = {"source", "reference", "score_format", "direct_user"}  # olakit's additions, named in the file's source
    ours = {k: re.sub(r"\{\w+\}", "{}", v) for k, v in prompts().items() if k not in own}
    assert {k: v for k, v in ours.items() if v not in seed_prompts} == {}
    assert seed_prompts - set(ours.values()) == set()  # and every prompt of the seed is used
    assert all(name in prompts()["source"] for name in own - {"source"})


def test_graded_run_records_every_iteration_and_flips(tmp_path, data_dir):
    """On AQuA with scripted answers: the iteration records carry the extracted answers of the history."""
    model = ScriptedModel(graded_reply)
    res = run_review(
        ReviewConfig(dataset="aqua", n_questions=2, max_iterations=2),
        llms={"answerer": model, "reviewer": model, "direct": model},
    )
    df = res.records.assign(at=res.records["loop"] + "@" + res.records["iteration"].astype(str))
    df = df.set_index(["question_id", "at"])
    assert (
        df.loc[("test-0", "direct@0"), "extracted"] == "C" and df.loc[("test-0", "review-lite@0"), "extracted"] == "A"
    )
    assert (
        df.loc[("test-0", "review-lite@1"), "extracted"] == "B"
        and df.loc[("test-0", "review-lite@2"), "extracted"] == "B"
    )
    trace = json.loads(df.loc[("test-0", "review-lite@2"), "trace"])
    assert [r["scores"]["overall"] for r in trace["reviews"]] == [3, 3] and trace["answers"][
        0
    ] == "First try. Answer: A"
    res.write(tmp_path / "out")
    assert (tmp_path / "out" / "records.parquet").is_file()


def test_judge_counts_unclear_replies_and_position_bias(tmp_path):
    def reply(prompt, req):
        if "[Answer 1]\nloop" in prompt:
            return "Answer 1 is better."
        if "[Answer 1]\ndirect" in prompt:
            return "Answer 2 is better."  # consistent: the loop's answer wins in both orders
        return "Both have merit."

    items = [("Q?", "loop", "direct"), ("Q2?", "x", "y")]
    js = judge_pairs(ScriptedModel(reply), items, 48)
    assert [j.verdict for j in js] == ["a", "unclear"]
    s = verdict_shares(js, labels=("loop", "direct"))
    assert s["loop"] == 0.5 and s["unclear"] == 0.5 and s["position_bias_first"] == 0.5


def test_iteration_tables_by_hand():
    from olakit.analysis.iterations import flips, iteration_accuracy, stage_cost
    from olakit.data.records import to_frame
    from olakit.types import ReviewRecord

    right = {"q1": [1, 0, 0], "q2": [0, 1, 1], "q3": [1, 1, 0], "q4": [0, 0, 0]}
    stages = [
        {"stage": "decomposition", "input": "x", "prompt_tokens": 10, "completion_tokens": 5, "latency": 1.0},
        {"stage": "review 1", "input": "x", "prompt_tokens": 20, "completion_tokens": 10, "latency": 2.0},
        {"stage": "review 2", "input": "x", "prompt_tokens": 20, "completion_tokens": 10, "latency": 2.0},
    ]
    rows = []
    for q, marks in right.items():
        rows.append(
            ReviewRecord(
                dataset="aqua",
                question_id=q,
                loop="direct",
                iteration=0,
                model="m",
                prompt_hash="h",
                raw_output="",
                extracted="A",
                gold="A",
                correct=True,
            )
        )
        for i, ok in enumerate(marks):
            trace = json.dumps({"stages": stages}) if i == 2 else ""
            rows.append(
                ReviewRecord(
                    dataset="aqua",
                    question_id=q,
                    loop="review-lite",
                    iteration=i,
                    model="m",
                    prompt_hash="h",
                    raw_output="",
                    extracted="A" if ok else "B",
                    gold="A",
                    correct=bool(ok),
                    trace=trace,
                )
            )
    df = to_frame(rows)
    acc = iteration_accuracy(df, Stats(n_boot=50)).set_index(["method", "iteration"])["accuracy"]
    assert acc.to_dict() == {
        ("direct", 0): 1.0,
        ("review-lite", 0): 0.5,
        ("review-lite", 1): 0.5,
        ("review-lite", 2): 0.25,
    }
    f = flips(df).set_index("iteration")
    # iteration 1: q1 right -> wrong, q2 wrong -> right; iteration 2: q3 right -> wrong
    assert f.loc[1, ["right_to_wrong", "wrong_to_right", "net"]].tolist() == [1, 1, 0]
    assert f.loc[2, ["right_to_wrong", "wrong_to_right", "net"]].tolist() == [1, 0, -1]
    # exact McNemar with 1 vs 1 and 1 vs 0 discordant answers: p = 1 both; Holm keeps 1
    assert f["p_mcnemar"].tolist() == [1.0, 1.0] and f["p_mcnemar_holm"].tolist() == [1.0, 1.0]
    cost = stage_cost(df).set_index("stage")
    # every question's history: one decomposition (15 tokens, 1 s) and two reviews (30 tokens, 2 s each)
    assert cost.loc["decomposition", "calls_per_question"] == 1 and cost.loc["review", "calls_per_question"] == 2
    assert cost.loc["review", "tokens_per_question"] == 60 and cost.loc["review", "seconds_per_question"] == 4.0


def test_iteration_tables_by_hand_in_any_row_order_with_unread_answers_and_reviews():
    """Two loops whose records come in reverse order (the tables do not depend on it): review-lite on 8 questions,
    all wrong at iteration 0 (q1 unread), all right at 1, q1-q6 wrong again at 2; review-standard on 2 questions,
    one of them with no history (no trace on any of its records). Every figure is worked in the comments."""
    from olakit.analysis.iterations import answer_trend, flips, iteration_accuracy, stage_cost
    from olakit.data.records import to_frame
    from olakit.types import ReviewRecord

    def record(q, loop, i, ok, extracted="A", trace=""):
        return ReviewRecord(dataset="aqua", question_id=q, loop=loop, iteration=i, model="m", prompt_hash="h",
                            raw_output=" ".join(["w"] * (i + 1)), extracted=extracted if ok else (extracted and "B"),
                            gold="A", correct=ok, trace=trace)  # fmt: skip

    lite = [f"q{k}" for k in range(1, 9)]
    rows = [record(q, "direct", 0, True) for q in lite]
    for q in lite:
        reviews = [{"iteration": 1, "scores": {"overall": None if q == "q8" else 4}},
                   {"iteration": 2, "scores": {"overall": 2}}]  # fmt: skip
        stage = {"stage": "review 1", "input": "x", "prompt_tokens": 20, "completion_tokens": 10, "latency": 2.0,
                 "cut_off": q == "q1"}  # fmt: skip
        rows.append(record(q, "review-lite", 0, False, extracted=None if q == "q1" else "A"))
        rows.append(record(q, "review-lite", 1, True))
        trace = json.dumps({"reviews": reviews, "stages": [stage, {**stage, "stage": "review 2"}]})
        rows.append(record(q, "review-lite", 2, q in ("q7", "q8"), trace=trace))
    stages = [
        {"stage": "decomposition", "input": "x", "prompt_tokens": 10, "completion_tokens": 5, "latency": 1.0},
        {"stage": "steps", "note": "outline states no step count: answered in one call"},  # a note, not a call
        {"stage": "review 1", "input": "x", "prompt_tokens": 20, "completion_tokens": 10, "latency": 2.0},
    ]
    rows += [record("q1", "review-standard", 0, True), record("q2", "review-standard", 0, True)]
    rows += [record("q1", "review-standard", 1, False, trace=json.dumps({"reviews": [], "stages": stages})),
             record("q2", "review-standard", 1, True)]  # fmt: skip
    df = to_frame(rows[::-1])

    acc = iteration_accuracy(df, Stats(n_boot=50))
    assert acc[["method", "iteration", "n", "correct", "unparsed"]].values.tolist() == [
        ["direct", 0, 8, 8, 0],
        ["review-standard", 0, 2, 2, 0],
        ["review-standard", 1, 2, 1, 0],
        ["review-lite", 0, 8, 0, 1],  # q1's answer unread
        ["review-lite", 1, 8, 8, 0],
        ["review-lite", 2, 8, 2, 0],
    ]

    f = flips(df)
    # lite: 8 wrong -> right at 1 (p = 2 / 2^8 = 0.0078125), 6 right -> wrong at 2 (p = 2 / 2^6 = 0.03125); Holm
    # over the two: 2 x 0.0078125 = 0.015625, then max(0.015625, 1 x 0.03125); standard: one pair, 1 right -> wrong
    assert f[["loop", "iteration", "n", "right_to_wrong", "wrong_to_right", "net"]].values.tolist() == [
        ["review-standard", 1, 2, 1, 0, -1],
        ["review-lite", 1, 8, 0, 8, 8],
        ["review-lite", 2, 8, 6, 0, -6],
    ]
    assert f["p_mcnemar"].tolist() == [1.0, 0.0078125, 0.03125]
    assert f["p_mcnemar_holm"].tolist() == [1.0, 0.015625, 0.03125]

    trend = answer_trend(df)
    # answers of i + 1 words ("w w ..."): 2i + 1 characters; lite's reviews: at 1, 8 with q8's unread (the mean of
    # the 7 others' 4), at 2, 8 scored 2; none at 0, and none in standard's one history
    assert trend[["loop", "iteration", "n", "mean_chars", "mean_words", "reviews", "unparseable"]].values.tolist() == [
        ["review-lite", 0, 8, 1.0, 1.0, 0, 0],
        ["review-lite", 1, 8, 3.0, 2.0, 8, 1],
        ["review-lite", 2, 8, 5.0, 3.0, 8, 0],
        ["review-standard", 0, 2, 1.0, 1.0, 0, 0],
        ["review-standard", 1, 2, 3.0, 2.0, 0, 0],
    ]
    assert trend["mean_score"].tolist()[1:3] == [4.0, 2.0] and trend["mean_score"].isna().tolist() == [
        True, False, False, True, True]  # fmt: skip
    direct_only = answer_trend(df[df["loop"] == "direct"])
    assert direct_only.empty and list(direct_only.columns) == list(trend.columns)

    cost = stage_cost(df).set_index(["loop", "stage"])
    # standard: one history (q2 has none) of a decomposition (15 tokens, 1 s) and one review (30, 2 s); the steps
    # note is no call. lite: 8 histories of two reviews (30 tokens, 2 s each), q1's two cut off
    assert cost.loc[("review-standard", "decomposition")].tolist() == [1.0, 15.0, 1.0, 0]
    assert cost.loc[("review-standard", "review")].tolist() == [1.0, 30.0, 2.0, 0]
    assert cost.loc[("review-lite", "review")].tolist() == [2.0, 60.0, 4.0, 2]
    assert len(cost) == 3


@pytest.mark.slow
def test_review_notebook_against_a_scripted_endpoint(tmp_path, monkeypatch):
    from tests.test_notebook import manifest, run

    monkeypatch.setenv("OLAKIT_BASE_URL", "scripted://tests.replies:graded")  # the kernel reaches it, no server
    monkeypatch.setenv("OLAKIT_MODEL", "scripted")
    out, nb = run("review_loop.ipynb", tmp_path, n_questions=2, max_iterations=2, open_questions=2, n_boot=50)
    import pandas as pd

    text = "\n".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.outputs)
    assert "power: 2 pairs of iterations" in text and "2 questions cannot decide any pair" in text

    acc = pd.read_csv(out / "tables" / "iteration_accuracy.csv")
    assert list(zip(acc["method"], acc["iteration"])) == [("direct", 0), *(("review-lite", i) for i in range(3))]
    assert (acc["n"] == 2).all()
    judged = pd.read_csv(out / "tables" / "open_judgement.csv").iloc[0]
    assert judged["tie"] == 1.0 and judged["position_bias_first"] == 1.0  # "Answer 1" both ways: a tie, pure bias
    log = manifest(out)
    assert log["calls"]["answerer"]["failed"] == 0 and set(log["roles"]) == {"answerer", "reviewer", "direct"}
    assert log["parts"]["open_questions"]["parts"]["judge"]["calls"]["judge"]["requests"] == 4  # 2 questions x 2


def test_ask_shows_the_direct_answer_and_says_when_the_final_answer_states_none(tmp_path, monkeypatch, capsys):
    """`olakit review --ask` on a model like the embedded one: an outline without a count, reviews without scores,
    a "final answer" that talks about the review. The report shows all of it as it is, with the direct answer."""
    from olakit.cli import main

    monkeypatch.setenv("OLAKIT_BASE_URL", "scripted://tests.replies:idiom")
    monkeypatch.setenv("OLAKIT_MODEL", "scripted")
    assert main(["review", "--ask", "What does face the music mean?", "--max-iterations", "1"]) == 0
    out = capsys.readouterr().out
    assert "outline (no step count found: answered in one call):\n1. Meaning" in out
    assert "review 1: no overall score found -> unparseable review" in out
    assert "direct answer (one call, no loop):\nTo face the music is to accept" in out
    assert "final answer (after 1 review):\nThe original answer is clear" in out
    assert "note: the final answer states no answer" in out


def seed_functions(data_dir, *names):
    """The seed's own functions (V1.4's code, read from the seed itself and run, never copied here)."""
    import ast

    seed = (data_dir.parent / "seeds/003_f638e0674a62da63.txt").read_text()
    code = seed[seed.index("# V1.4") : seed.index("\nKevin's Blog")].replace("\u00a0", " ")
    defs = [n for n in ast.parse(code).body if isinstance(n, ast.FunctionDef)]
    for node in defs:
        node.decorator_list = []  # the timing decorator prints; the functions are what is compared
    namespace = {"re": re}
    exec(compile(ast.Module(body=defs, type_ignores=[]), "seed-003", "exec"), namespace)
    return [namespace[n] for n in names]


REVIEWS = [
    "Accuracy: 4\nCompleteness: 3\nClarity: 5\nDepth: 4\nOverall Score: 4",
    "Overall Score: four of five",
    "Overall Score: 4/5\nThanks.",
    "Overall score: **4**",  # the rule fails on the bold: the same line's lone digit gives it
    "Great answer. I would give it 3 of five.",  # olakit's strict parser: none
    "Score: 2/5",
    "Rated 3/4 here, so 2",  # x/y with y not 5: the lone digit after
    "Overall Score: 10",  # the seed reads 10
    "1. Accuracy: 5\n2. Completeness: 4\n\nAll in all a fine answer.",  # the last line has none: 4 above
    "Depth: 2\n",
    "Average Score: 3.5",
    "No scores at all.",
    "评分：4",  # no word boundary between a CJK character and the digit
    "",
]


def test_literal_reads_review_scores_as_the_seeds_own_parser_does(data_dir):
    """The port against the seed's extract_average_score_from_review on crafted reviews and on generated ones."""
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from olakit.review.parse import parse_score_seed

    (seed,) = seed_functions(data_dir, "extract_average_score_from_review")
    assert [parse_score_seed(r) for r in REVIEWS] == [seed(r) for r in REVIEWS]
    assert [parse_score_seed(r) for r in REVIEWS[:6]] == [4, 4, 4, 4, 3, 2]  # worked by hand
    assert parse_scores(REVIEWS[4])["overall"] is None  # where the two readers part

    piece = st.sampled_from(["Overall Score:", "Average Score:", "overall score: ", "of", "/", "/5", " of five",
                             "four", "five", "Three", "Depth:", "**", "\n", " ", "3", "5", "7", "10", "0",
                             "x"])  # fmt: skip

    @settings(max_examples=400, deadline=None, database=None)
    @given(st.lists(st.one_of(piece, st.text(max_size=4)), max_size=12).map("".join))
    def same(review):
        assert parse_score_seed(review) == seed(review)

    same()


def test_literal_is_the_seeds_code_in_behaviour(tmp_path):
    """The literal loop: the seed's review prompt (no score-format line), its score reading, its 800-token limit on
    every call, and no revision after an unparseable review (the seed's final answer so far stands)."""
    from olakit.review.loop import prompts

    SCORES["Qloose"] = [None, "I would give it a 3 of five.", None]  # unread, then read only by the seed's parser
    try:
        literal, _ = run_loop(tmp_path, ["Qloose"], behaviour="literal")
        limits = {"literal": {r["max_tokens"] for r in REQS}}
        intended, _ = run_loop(tmp_path / "i", ["Qloose"], behaviour="intended")
        limits["intended"] = {r["max_tokens"] for r in REQS}
    finally:
        del SCORES["Qloose"]
    h = literal[0]
    reviews = [s for s in h.stages if s["stage"].startswith("review")]
    assert not any(prompts()["score_format"] in s["input"] for s in reviews)
    assert [r["scores"]["overall"] for r in h.reviews] == [None, 3, None]
    assert [r["decision"].startswith("unparseable review: no revision") for r in h.reviews] == [True, False, True]
    assert [s["stage"] for s in h.stages if s["stage"].startswith("revise")] == ["revise 2"]
    # after review 1 (unread) the seed has no final answer yet; after 2 the revision; after 3 (unread) it stands
    assert h.answers[1:] == ["", "revised answer to Qloose (1)", "revised answer to Qloose (1)"]
    assert limits["literal"] == {800}  # the seed's limit on every call
    g = intended[0]
    assert all(prompts()["score_format"] in s["input"] for s in g.stages if s["stage"].startswith("review"))
    assert [r["scores"]["overall"] for r in g.reviews] == [None, None, None]  # the strict reader reads none
    assert len([s for s in g.stages if s["stage"].startswith("revise")]) == 3  # revised after each
    assert limits["intended"] == {400, 300}  # answers and revisions, reviews (two steps: no step calls)


def test_the_iterations_sweep_is_mode_by_iterations_and_each_run_records_length_and_score(tmp_path):
    """sweeps/review_iterations.yaml expands to every mode x max_iterations x behaviour (20 runs of the review
    notebook); each iteration's answer length and mean review score come from the records, worked by hand here."""
    from pathlib import Path

    from olakit.analysis.iterations import answer_trend
    from olakit.notebook.sweep import expand, load_spec

    spec = load_spec(Path(__file__).parents[1] / "sweeps" / "review_iterations.yaml")
    jobs = expand(spec, "t", tmp_path / "runs", tmp_path / "results")
    grid = {(j.parameters["mode"], j.parameters["max_iterations"], j.parameters["behaviour"]) for j in jobs}
    assert len(jobs) == 20 and len(grid) == 20 and {Path(j.notebook).name for j in jobs} == {"review_loop.ipynb"}
    hs, _ = run_loop(tmp_path, ["Q333", "Q5"])
    rows = [{"loop": "review-lite", "iteration": i, "raw_output": a, "question_id": h.question,
             "trace": json.dumps({"reviews": h.reviews}) if i == len(h.answers) - 1 else ""}
            for h in hs for i, a in enumerate(h.answers)]  # fmt: skip
    import pandas as pd

    trend = answer_trend(pd.DataFrame(rows)).set_index("iteration")
    first = ["first answer to Q333 (seed 0)", "first answer to Q5 (seed 0)"]
    assert trend.loc[0, "mean_chars"] == sum(map(len, first)) / 2 and trend.loc[0, "reviews"] == 0
    # review 1: Q333 scored 3, Q5 scored 5 (then polished and stopped); reviews 2 and 3: Q333 alone, 3 each
    assert trend["reviews"].tolist() == [0, 2, 1, 1] and trend.loc[1, "mean_score"] == 4.0
    assert (
        trend.loc[3, "mean_words"]
        == (len("revised answer to Q333 (3)".split()) + len("polished answer to Q5".split())) / 2
    )
