"""The CoT + self-review loop (seeds/003), standard and lite, for many questions at once (each stage is one
concurrent, cached batch across the questions still going).

- Standard: three similar questions (asked again once when the reply holds no three, as the seed does), their
  answers, a common outline with the best of the three, a detailed outline (the prompt asks for at most 5 steps, the
  count at the end), the answer (each step separately when there are more than 3, then merged), then review and
  revise.
- Lite: one decomposition (at most 5 steps, the prompt asks), the answer as above, review and revise.
- The step count: ``literal`` reads it with the seed's own parser (``parse_steps_seed``: any "Step n" from the last
  line up), ``intended`` with olakit's (``parse_steps``: a stated count in the last three lines only). Neither caps
  it: an 8-step outline gets 8 step calls (both parsers read 1-10).
- Review: another conversation (the ``reviewer`` role: optionally another model or endpoint) scores accuracy,
  completeness, clarity, depth and overall, 1-5; the stop rules are olakit.review.stop.

``behaviour``: ``intended`` (what the blog means, with olakit's improvements: the answer under review is the current
one, revised from each review, the best similar answer is given as reference, the reviewer is asked for one score line
per criterion and read strictly, an unparseable review is revised from) or ``literal`` (what its code does: every
iteration regenerates the answer from the outline, so a revision never reaches the next review; the best similar
answer is unused; its review prompt as is, its score reader (parse_score_seed), no revision after an unparseable
review, 800 tokens on every call).
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field

from olakit.data.files import RESOURCES, read_json
from olakit.errors import DataError
from olakit.llm.answerer import Answerer, refuse
from olakit.llm.request import Reply, Request
from olakit.review.config import ReviewConfig
from olakit.review.parse import (
    parse_best,
    parse_score_seed,
    parse_scores,
    parse_similar,
    parse_steps,
    parse_steps_seed,
)
from olakit.review.stop import decide

PROMPTS_FILE = RESOURCES / "review" / "prompts.json"


@dataclass
class History:
    """One question's way through the loop: every stage's output, each review with its scores and decision, and
    the answer after each iteration (``answers[0]`` is the first answer, ``answers[i]`` the one after review i:
    revised, polished, or the reviewed one when the loop stopped; a question that stopped earlier keeps its last)."""

    question: str
    stages: list = field(default_factory=list)
    outline: str = ""
    steps: int = 0
    reference: str = ""
    answers: list = field(default_factory=list)
    reviews: list = field(default_factory=list)
    first_score: int | None = None
    done: bool = False
    similar: list = field(default_factory=list)
    settled: str = ""
    """The ``literal`` behaviour's final answer so far, as the seed's code keeps it (its ``final_answer``): set by a
    polish, a revision or a stop on the reviewed answer, unchanged by an unparseable review (empty until then: the
    seed's "no valid answer")."""

    @property
    def final(self) -> str:
        return self.answers[-1] if self.answers else ""


def seed_scores(review: str | None) -> dict[str, int | None]:
    """parse_scores' shape with the seed's reading: the one score its code reads (parse_score_seed) as ``overall``,
    the criteria unread (the seed reads none of them)."""
    return {"accuracy": None, "completeness": None, "clarity": None, "depth": None, "overall": parse_score_seed(review)}


def prompts() -> dict:
    return read_json(PROMPTS_FILE)


def _msgs(system: str | None, user: str) -> list[dict]:
    return ([{"role": "system", "content": system}] if system else []) + [{"role": "user", "content": user}]


class Loop:
    """Runs the loop over many questions. ``batch[role](requests, desc) -> results`` (aligned, cached), roles
    ``answerer`` and ``reviewer``."""

    def __init__(self, answerers: dict[str, Answerer], cfg: ReviewConfig):
        self.answerers, self.cfg, self.p = answerers, cfg, prompts()

    def _req(self, messages: list[dict], stage: str, sample: int = 0) -> Request:
        """A call of one stage (answer, review, step, similar) at its settings (ReviewConfig.STAGE_DEFAULTS under
        the run's)."""
        return Request.make(messages, sample=sample, **self.cfg.for_stage(stage).params())

    def _stage(self, name: str, items: list[tuple[History, Request]], role: str = "answerer") -> list[Reply]:
        """One batch; every history records the stage's output, tokens, latency and the batch's wall time."""
        if not items:
            return []
        t0 = time.perf_counter()
        results = refuse(self.answerers[role].batch([r for _, r in items], name), f"{role}: {name}")
        if self.cfg.behaviour == "literal":  # the seed's get_response_from_model strips every reply it returns
            results = [dataclasses.replace(r, text=r.text.strip()) if r.text is not None else r for r in results]
        wall = time.perf_counter() - t0
        for (h, req), res in zip(items, results):
            h.stages.append(
                {
                    "stage": name,
                    "role": role,
                    "input": req.message_dicts()[-1]["content"],
                    "output": res.text,
                    "prompt_tokens": res.prompt_tokens,
                    "completion_tokens": res.completion_tokens,
                    "latency": res.latency,
                    "cached": res.cached,
                    "cut_off": res.finish_reason == "length",
                    "batch_wall_s": round(wall, 3),
                }
            )
        return results

    # -- stages
    def _standard_outline(self, hs: list[History]) -> None:
        p = self.p
        res = self._stage(
            "similar questions",
            [
                (
                    h,
                    self._req(
                        _msgs(p["similar_system"], p["similar_user"].format(question=h.question)),
                        "similar",
                    ),
                )
                for h in hs
            ],
        )
        for h, r in zip(hs, res):
            h.similar = parse_similar(r.text)
            h.stages[-1]["n_similar"] = len(h.similar)
        again = [h for h in hs if len(h.similar) != 3]  # the seed regenerates when it finds no three questions
        msgs = lambda h: _msgs(p["similar_system"], p["similar_user"].format(question=h.question))  # noqa: E731
        res = self._stage(
            "similar questions (regenerated)",
            [(h, self._req(msgs(h), "similar", sample=1)) for h in again],
        )
        for h, r in zip(again, res):
            h.similar = parse_similar(r.text) or h.similar  # once only: what came then is used, and counted
            h.stages[-1]["n_similar"] = len(h.similar)
        for h in hs:
            h.similar = h.similar or [h.question]
        items = [
            (h, self._req(_msgs(None, p["answer_similar"].format(question=q)), "answer")) for h in hs for q in h.similar
        ]
        res = iter(self._stage("similar answers", items))
        answers = {id(h): [next(res).text for _ in h.similar] for h in hs}
        items = []
        for h in hs:
            combined = "\n".join(
                f"Question {i}: {q}\nAnswer {i}: {a}" for i, (q, a) in enumerate(zip(h.similar, answers[id(h)]), 1)
            )
            items.append(
                (
                    h,
                    self._req(
                        _msgs(p["common_system"], p["common_user"].format(combined=combined)),
                        "answer",
                    ),
                )
            )
        common = self._stage("common outline and best", items)
        for h, r in zip(hs, common):
            best = parse_best(r.text, len(h.similar))
            h.stages[-1]["best"] = best
            h.reference = answers[id(h)][best if best is not None and best < len(h.similar) else 0]
        items = [
            (
                h,
                self._req(
                    _msgs(p["outline_system"], p["outline_user"].format(question=h.question, outline_and_best=r.text)),
                    "answer",
                ),
            )
            for h, r in zip(hs, common)
        ]
        for h, r in zip(hs, self._stage("detailed outline", items)):
            h.outline = r.text

    def _lite_outline(self, hs: list[History]) -> None:
        p = self.p
        items = [
            (
                h,
                self._req(_msgs(p["lite_system"], p["lite_user"].format(question=h.question)), "answer"),
            )
            for h in hs
        ]
        for h, r in zip(hs, self._stage("decomposition", items)):
            h.outline = r.text

    def _answer(self, hs: list[History], sample: int) -> list[str]:
        """The answer from the outline: per step when there are more than 3 steps (merged), else in one call."""
        p = self.p
        ref = lambda h: (
            p["reference"].format(reference=h.reference)  # noqa: E731
            if h.reference and self.cfg.behaviour == "intended"
            else ""
        )
        many = [h for h in hs if h.steps > 3]
        one = [h for h in hs if h.steps <= 3]
        items = [
            (
                h,
                self._req(
                    _msgs(
                        p["part_system"], p["part_user"].format(outline=h.outline, question=h.question, i=i) + ref(h)
                    ),
                    "step",
                    sample,
                ),
            )
            for h in many
            for i in range(1, h.steps + 1)
        ]
        parts = iter(self._stage("step answers", items))
        merged = {id(h): "\n".join(next(parts).text for _ in range(h.steps)) for h in many}
        items = [
            (
                h,
                self._req(
                    _msgs(None, p["whole_user"].format(question=h.question, outline=h.outline) + ref(h)),
                    "answer",
                    sample,
                ),
            )
            for h in one
        ]
        for h, r in zip(one, self._stage("answer", items)):
            merged[id(h)] = r.text
        return [merged[id(h)] for h in hs]

    def run(self, questions: list[str]) -> list[History]:
        """Every question through the loop; the histories in question order."""
        if any(not q or not q.strip() for q in questions):
            raise DataError("an empty question: the review loop needs a question to answer")
        hs = [History(q) for q in questions]
        (self._standard_outline if self.cfg.mode == "standard" else self._lite_outline)(hs)
        read_steps = parse_steps_seed if self.cfg.behaviour == "literal" else parse_steps
        for h in hs:
            h.steps = read_steps(h.outline)
            if h.steps == 0:
                h.stages.append({"stage": "steps", "note": "outline states no step count: answered in one call"})
        for h, a in zip(hs, self._answer(hs, sample=0)):
            h.answers.append(a)
        p = self.p
        literal = self.cfg.behaviour == "literal"
        for iteration in range(1, self.cfg.max_iterations + 1):
            active = [h for h in hs if not h.done]
            if not active:
                break
            reviewed = {id(h): h.answers[-1] for h in active}
            if iteration > 1 and self.cfg.behaviour == "literal":  # the code regenerates from the outline
                for h, a in zip(active, self._answer(active, sample=iteration - 1)):
                    reviewed[id(h)] = a
            items = []
            for h in active:  # literal: the seed's review prompt as is; intended: with olakit's score-format line
                text = p["review_user"].format(question=h.question, answer=reviewed[id(h)])
                text += "" if literal else p["score_format"]
                items.append((h, self._req(_msgs(p["review_system"], text), "review")))
            reviews = self._stage(f"review {iteration}", items, role="reviewer")
            polish, revise = [], []
            for h, r in zip(active, reviews):
                scores = seed_scores(r.text) if literal else parse_scores(r.text)
                if iteration == 1:
                    h.first_score = scores["overall"]
                d = decide(iteration, scores["overall"], h.first_score, self.cfg.max_iterations, self.cfg.threshold,
                           revise_unparseable=not literal)  # fmt: skip
                h.reviews.append(
                    {
                        "iteration": iteration,
                        "review": r.text,
                        "scores": scores,
                        "unparseable": scores["overall"] is None,
                        "cut_off": r.finish_reason == "length",  # at the review stage's limit: maybe no scores
                        "decision": d.reason,
                    }
                )
                if d.polish:
                    polish.append((h, r))
                elif d.revise:
                    revise.append((h, r))
                h.done = d.stop
            items = [
                (
                    h,
                    self._req(
                        _msgs(None, p["polish_user"].format(question=h.question, answer=reviewed[id(h)])),
                        "answer",
                    ),
                )
                for h, _ in polish
            ]
            for (h, _), r in zip(polish, self._stage(f"polish {iteration}", items)):
                h.answers.append(r.text)
            items = []
            for h, r in revise:
                text = p["revise_user"].format(question=h.question, answer=reviewed[id(h)], review=r.text)
                items.append((h, self._req(_msgs(None, text), "answer")))
            for (h, _), r in zip(revise, self._stage(f"revise {iteration}", items)):
                h.answers.append(r.text)
            for h in active:
                unread = literal and h.reviews[-1]["unparseable"]
                if len(h.answers) == iteration:  # no new answer: the reviewed one stands (literal, after an
                    # unparseable review: the seed's final answer so far, unchanged)
                    h.answers.append(h.settled if unread else reviewed[id(h)])
                h.settled = h.settled if unread else h.answers[-1]
        for h in hs:  # questions that stopped early keep their last answer in later iterations
            h.answers += [h.answers[-1]] * (self.cfg.max_iterations + 1 - len(h.answers))
        return hs
