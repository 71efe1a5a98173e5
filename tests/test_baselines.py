"""Auto-CoT: published demos load, clusters pick members nearest their centre, and a demo is the first of them
whose zero-shot-CoT rationale gives an answer."""

import numpy as np
import pytest

from olakit.generation import Generation
from olakit.olagpt.baselines import COT_TRIGGER, auto_cot_demos, cluster_candidates, cot_prompt, published_demos
from olakit.retrieval.embedder import embed
from olakit.types import Question

GREEDY_256 = Generation(temperature=0, max_tokens=256)  # the auto_cot stage's default settings

OPTS = {"A": "1", "B": "2"}
TOPICS = {
    "coin": ["A coin is tossed {} times; what is the probability of all heads?"],
    "train": ["A train travels {} km in 2 hours; what is its speed?"],
}


def pool():
    return [
        Question(id=f"{t}-{i}", dataset="aqua", text=tpl[0].format(i + 2), options=OPTS, gold="A")
        for t, tpl in TOPICS.items()
        for i in range(5)
    ]


def test_published_demos_match_the_aurora_files():
    demos = published_demos("aqua")
    assert len(demos) == 4 and demos[0].question.startswith("Julie’s yard is rectangular.")
    assert not demos[0].rationale.startswith(COT_TRIGGER) and demos[0].answer == "A"
    assert len(published_demos("strategyqa")) == 6
    text = cot_prompt(demos[:1], "Q2?")
    assert text.startswith("Q: Julie’s") and text.endswith("Q: Q2?\nA: Let's think step by step.")


@pytest.mark.slow
def test_clusters_are_ordered_by_distance_to_their_centre():
    clusters = cluster_candidates(pool(), k=2, seed=0)
    assert sorted(len(c) for c in clusters) == [5, 5]
    assert all(len({q.id.split("-")[0] for q in c}) == 1 for c in clusters)  # one topic per cluster
    for members in clusters:
        vecs = embed([q.text for q in members])
        dist = np.linalg.norm(vecs - vecs.mean(axis=0), axis=1)
        assert list(dist) == sorted(dist)  # nearest the centre first


def test_a_demo_is_the_nearest_member_whose_rationale_answers(tmp_path):
    from olakit.llm import LLM, Endpoint
    from olakit.llm.loopback import Loopback

    clusters = cluster_candidates(pool(), k=2, seed=0)
    silent = {clusters[0][0].id}  # the nearest member of the first cluster gives no answer

    def reply(prompt, req):
        return (
            "I cannot tell."
            if any(f"question: {q.text}" in prompt for q in pool() if q.id in silent)
            else "So the answer is (B)."
        )

    with Loopback(reply=reply) as srv, LLM(Endpoint(srv.base_url, "toy"), cache_dir=tmp_path, progress=False) as llm:
        demos = auto_cot_demos(llm, pool(), k=2, tries=3, seed=0, generation=GREEDY_256)
    assert [d.question_id for d in demos] == [clusters[0][1].id, clusters[1][0].id]
    assert all(d.answer == "B" and d.rationale == "So the answer is (B)." for d in demos)


def test_auto_cot_filters_long_rationales_and_long_questions(tmp_path):
    """Auto-CoT's filters: a rationale of more than 5 reasoning steps, or a question of more than 60 tokens, is
    passed over for the next member nearest the centre."""
    from olakit.llm import LLM, Endpoint
    from olakit.llm.loopback import Loopback

    questions = pool()
    long_text = questions[1].text + " Also" + " very" * 60 + " long."
    questions[1] = Question(id=questions[1].id, dataset="aqua", text=long_text, options=OPTS, gold="B")
    clusters = cluster_candidates(questions, k=2, seed=0)
    verbose = {clusters[0][0].id}  # the nearest member answers, but in 7 steps
    assert [q for c in clusters for q in c if len(q.text.split()) > 60] == [questions[1]]

    def reply(prompt, req):
        if any(f"question: {q.text}" in prompt for q in questions if q.id in verbose):
            return "\n".join(f"Step {i}." for i in range(1, 7)) + "\nSo the answer is (B)."
        return "Step 1.\nSo the answer is (B)."

    with Loopback(reply=reply) as srv, LLM(Endpoint(srv.base_url, "toy"), cache_dir=tmp_path, progress=False) as llm:
        demos = auto_cot_demos(llm, questions, k=2, tries=3, seed=0, generation=GREEDY_256)
    short = [[q for q in c if len(q.text.split()) <= 60] for c in clusters]
    assert [d.question_id for d in demos] == [short[0][1].id, short[1][0].id]
    assert all(d.answer == "B" and d.rationale == "Step 1.\nSo the answer is (B)." for d in demos)
