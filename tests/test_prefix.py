"""Prefix lanes: grouping worked out by hand, and against the loopback server the same calls and answers as the
naive order, only sent in another order."""

from collections import Counter

from olakit.llm import LLM, Request
from olakit.llm.endpoint import Endpoint
from olakit.llm.loopback import Loopback
from olakit.llm.prefix import groups, lanes, prompt_text

NOTES = {q: f"Notes for {q}: " + "a long worked example. " * 10 for q in ("q1", "q2")}


def grid() -> list[str]:
    """Two questions x three templates with each question's notes first (as the OlaGPT grid under the olakit
    layout), interleaved template-major as a naive loop would send them, plus two short unrelated prompts."""
    prompts = [f"{NOTES[q]}Template {t}. Question {q}?" for t in ("DT", "PT", "ST") for q in ("q1", "q2")]
    return [*prompts, "2+2?", "Name a prime."]


def test_groups_follow_shared_prefixes_worked_by_hand():
    texts = grid()
    # indices: 0 q1-DT, 1 q2-DT, 2 q1-PT, 3 q2-PT, 4 q1-ST, 5 q2-ST, 6 "2+2?", 7 "Name a prime."
    # sorted by text: "2+2?" < "Name a prime." < "Notes for q1..." (DT < PT < ST) < "Notes for q2..."
    assert groups(texts) == [[6], [7], [0, 2, 4], [1, 3, 5]]
    # "Notes for q" (11 chars) is shared across questions: below half of the prompt and below 64 characters
    # concurrency 2 over 8 prompts: a lane may hold ceil(8 / 2) = 4 calls; the longest lanes go first
    assert lanes(texts, concurrency=2) == [[0, 2, 4], [1, 3, 5], [6], [7]]
    # concurrency 4: at most ceil(8 / 4) = 2 calls a lane, so each question's group is cut in two
    assert lanes(texts, concurrency=4) == [[0, 2], [1, 3], [6], [7], [4], [5]]
    # concurrency 8: one call a lane, every slot busy
    assert lanes(texts, concurrency=8) == [[6], [7], [0], [2], [4], [1], [3], [5]]


def test_a_short_common_system_line_does_not_make_a_group():
    a = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "What is the capital of France?"}]
    b = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "How many legs has a spider?"}]
    assert groups([prompt_text(a), prompt_text(b)]) == [[1], [0]]  # "How" < "What"


def _run(srv, tmp_path, prompts, **kw):
    with LLM(Endpoint(srv.base_url, "toy"), cache_dir=tmp_path, progress=False, **kw) as llm:
        return llm.batch([Request.make(p, max_tokens=8) for p in prompts])


def test_lanes_keep_the_calls_and_answers_of_the_naive_order(tmp_path):
    prompts = grid()
    arrivals = {"naive": [], "lanes": []}
    which = ["naive"]

    def reply(prompt, request):
        arrivals[which[0]].append(prompt)
        return f"answer to {prompt[-20:]}"

    with Loopback(reply=reply) as srv:
        naive = _run(srv, tmp_path / "a", prompts, concurrency=1, prefix_lanes=False)
        counts_naive = Counter(srv.per_prompt)
        which[0] = "lanes"
        laned = _run(srv, tmp_path / "b", prompts, concurrency=1)
        counts_all = Counter(srv.per_prompt)
        which[0] = "rerun"
        arrivals["rerun"] = []
        again = _run(srv, tmp_path / "b", prompts, concurrency=1)
    # the same answers, in the caller's order, from each prompt's own call
    assert [r.text for r in laned] == [r.text for r in naive] == [f"answer to {p[-20:]}" for p in prompts]
    assert [r.key for r in laned] == [r.key for r in naive]
    # the same set of calls: every prompt once in each order
    assert counts_naive == Counter(prompts)
    assert counts_all - counts_naive == Counter(prompts)
    # only the order differs: the naive order is the caller's; the lanes send each question's templates together
    assert arrivals["naive"] == prompts
    assert arrivals["lanes"] == [prompts[i] for lane in lanes(prompts, 1) for i in lane]
    assert arrivals["lanes"][:3] == [prompts[0], prompts[2], prompts[4]]
    assert arrivals["rerun"] == [] and all(r.cached for r in again)


def test_lanes_run_side_by_side_up_to_the_concurrency(tmp_path):
    prompts = grid()
    with Loopback(delay=0.2) as srv:
        results = _run(srv, tmp_path, prompts, concurrency=3)
    assert all(r.ok for r in results)
    assert srv.max_active == 3  # lanes of 3, 3, 1 and 1 calls (at most ceil(8 / 3) = 3 each), 3 at a time
