"""The GEEK loop (seeds/002, Fig 2 and Fig 3): for each question the core model selects an action, the action runs,
the question state grows, until a Final Answer; a budget of steps and sub-questions forces one. With strategy
exploration (row Full) each Add Decomp among the first ``depth`` samples ``branches`` candidate sub-questions, each
opening a branch; the answer is the majority over the branches.

All questions and branches advance together, one round of calls at a time, so each round is one concurrent batch
(identical prompts, e.g. shared branch prefixes, are sent once).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from olakit.data.records import prompt_hash
from olakit.errors import DataError
from olakit.geek import prompts
from olakit.geek.actions import DECOMP, FINAL, RETRIEVE, ROWS, SELF, fallback, parse_action, usable
from olakit.geek.config import BRANCH, GeekConfig
from olakit.geek.state import QuestionState
from olakit.llm.answerer import Answerer, refuse
from olakit.llm.request import Reply, Request
from olakit.names import plural
from olakit.types import Question


@dataclass
class Trace:
    """One question (one branch of it) on its way to an answer."""

    question: Question
    row: str
    state: QuestionState
    branch: str = "0"
    phase: str = "select"
    steps: list = field(default_factory=list)
    results: list = field(default_factory=list)
    actions_done: int = 0
    decomps: int = 0
    fallbacks: int = 0
    forced: bool = False
    final_request: Request | None = None
    final_result: Reply | None = None
    pending_hits: list = field(default_factory=list)

    @property
    def done(self) -> bool:
        return self.phase == "done"


LABEL = re.compile(
    r"^\s*(?:(?:sub-?question|fact|answer)\s*\d*\s*[:.]|[qa]\s*\d*\s*:"  # "Sub-question 2:", "Fact:", "Q1:"
    r"|\d{1,2}[.)](?=\s)|\(\d{1,2}\)(?=\s)|[-*\u2022](?=\s))",  # list markers: "1." "2)" "(3)" "-" "*"
    re.I,
)


def _first_line(text: str) -> str:
    """The first non-empty line without its label or list marker; a number that is part of the text stays.

    >>> _first_line("11 is a prime number."), _first_line("1. 1990 was a year."), _first_line("- Fact: yes")
    ('11 is a prime number.', '1990 was a year.', 'yes')
    >>> _first_line("A. Lincoln was president."), _first_line("2) 3.5 million")
    ('A. Lincoln was president.', '3.5 million')
    """
    for line in (text or "").splitlines():
        line = line.strip()
        while (m := LABEL.match(line)) and m.end():
            line = line[m.end() :].strip()
        if line:
            return line
    return ""


def parse_sub_question(text: str, pre_answer: bool) -> tuple[str, str]:
    """(next sub-question, its pseudo-answer): the first line; with pre-answer the first ``Q: ... A: ...`` line.

    >>> parse_sub_question("Sub-question: How many kids did Caesar have?\\nmore", False)
    ('How many kids did Caesar have?', '')
    >>> parse_sub_question("Q: Who can arrest? A: Police officers.\\nQ: Is Sting one? A: No.", True)
    ('Who can arrest?', 'Police officers.')
    """
    if pre_answer:
        m = re.search(r"Q\s*\d*\s*:\s*(.+?)\s+A\s*:\s*(.+)", text or "")
        if m:
            return m.group(1).strip(), m.group(2).strip()
    return _first_line(text), ""


class Engine:
    """Runs traces round by round. ``batch(requests, desc) -> results`` (aligned, cached); ``retriever`` is None for
    rows without Retrieve & Extract."""

    def __init__(
        self, answerer: Answerer, budget: GeekConfig, retriever=None, corpus=None, evaluated: dict | None = None
    ):
        self.answerer, self.budget, self.retriever, self.corpus = answerer, budget, retriever, corpus
        self.evaluated = evaluated or {}

    # -- one round
    def _requests(self, tr: Trace) -> list[tuple[str, Request, dict]]:
        """(kind, request, extra) for the trace's next call(s)."""
        b, st = self.budget, tr.state
        allowed = ROWS[tr.row]
        if tr.phase == "direct":
            return [("direct", self._make(tr, prompts.direct(tr.row, st.question), "direct"), {})]
        if tr.phase == "select" and tr.actions_done >= b.max_steps:
            tr.forced, tr.phase = True, FINAL
        if tr.phase == "select":
            return [("select", self._make(tr, prompts.select(st, allowed), "select"), {})]
        if tr.phase == DECOMP:
            kind = "pre_answer" if b.pre_answer else "decomp"
            text = prompts.decomp(st, b.pre_answer)
            if tr.row == "Full" and tr.decomps < b.depth and b.branches > 1:
                return [("decomp", self._make(tr, text, kind, sample=i, branch=True), {}) for i in range(b.branches)]
            return [("decomp", self._make(tr, text, kind), {})]
        if tr.phase == RETRIEVE:
            extra = {}
            try:
                hits = self.retriever.search(st.pending, b.k, self.corpus.excluded_for(tr.question.id))
            except DataError as exc:  # e.g. a sub-question of stopwords only: nothing to look up, the extractor
                hits, extra["retrieval_error"] = [], str(exc)  # sees no paragraph and says so
            paras = [(self.corpus.titles[i], self.corpus.texts[i]) for i, _ in hits]
            extra["retrieved"] = [[self.corpus.ids[i], round(s, 4)] for i, s in hits]
            return [("retrieve", self._make(tr, prompts.extract(st.pending, paras, st.hint), "retrieve"), extra)]
        if tr.phase == SELF:
            return [("self", self._make(tr, prompts.self_answer(st), "self"), {})]
        return [("final", self._make(tr, prompts.final(st), "final"), {})]

    def _make(self, tr: Trace, text: str, kind: str, sample: int = 0, branch: bool = False) -> Request:
        """The call of one kind at its stage's settings (GeekConfig.STAGE_DEFAULTS under the run's); a branch
        candidate takes what the branch stage sets (its temperature and seed, and whatever ``stages`` gives it) over
        its kind's."""
        prompts.check_prompt(text, tr.question.id, self.evaluated)
        b = self.budget
        gen = b.for_stage(kind)
        if branch:
            sampled = b.for_stage(BRANCH)
            named = {*b.stage_defaults()[BRANCH], *b.stages.get(BRANCH, {})}
            gen = gen.merge({k: getattr(sampled, k) for k in named})
        return Request.make(text, sample=sample, **gen.params())

    def _apply(self, tr: Trace, calls: list[tuple[str, Request, dict]], results: list[Reply]) -> list[Trace]:
        b = self.budget
        for (kind, req, extra), res in zip(calls, results):
            tr_log = {
                "action": kind,
                "branch": tr.branch,
                "prompt_hash": prompt_hash(req.message_dicts()[-1]["content"]),
                "input": req.message_dicts()[-1]["content"],
                "output": res.text or "",
                "prompt_tokens": res.prompt_tokens,
                "completion_tokens": res.completion_tokens,
                "latency": res.latency,
                "cached": res.cached,
                **extra,
            }
            tr.steps.append(tr_log)
            tr.results.append(res)
        kind = calls[0][0]
        texts = [r.text or "" for r in results]
        if kind in ("direct", "final"):
            tr.final_request, tr.final_result, tr.phase = calls[0][1], results[0], "done"
            return [tr]
        if kind == "select":
            allowed = ROWS[tr.row]
            action = parse_action(texts[0], allowed)
            pending = bool(tr.state.pending)
            if action is None or not usable(action, pending, tr.state.n_sub_questions, b.max_sub_questions):
                action = fallback(allowed, pending, tr.state.n_sub_questions, b.max_sub_questions)
                tr.fallbacks += 1
                tr.steps[-1]["fallback"] = action
            tr.steps[-1]["chosen"] = action
            tr.phase = action
            return [tr]
        tr.actions_done += 1
        if kind == "decomp":
            tr.decomps += 1
            n = len(texts)
            logs, res_list = tr.steps[-n:], tr.results[-n:]
            del tr.steps[-n:], tr.results[-n:]
            children = [tr] + [_fork(tr, f"{tr.branch}.{i}") for i in range(1, n)]
            if n > 1:
                tr.branch = f"{tr.branch}.0"
            for child, text, log, res in zip(children, texts, logs, res_list):
                sub, hint = parse_sub_question(text, b.pre_answer)
                child.steps.append({**log, "branch": child.branch})
                child.results.append(res)
                child.state = child.state.add_sub_question(sub, hint) if sub else child.state
                child.phase = "select" if sub else FINAL  # no sub-question written: answer with what is known
            return children
        if kind == "retrieve":
            ids = ",".join(pid for pid, _ in tr.steps[-1].get("retrieved", []))
            tr.state = tr.state.answer(_first_line(texts[0]) or "unknown", f"retrieved:{ids}")
        else:
            tr.state = tr.state.answer(_first_line(texts[0]) or "unknown", "self")
        tr.phase = "select"
        return [tr]

    def run(self, traces: list[Trace], desc: str = "GEEK", progress: bool = True) -> list[Trace]:
        """Advance every trace until all are done; returns every trace (branches included). One progress bar of
        questions answered, which says after each round (a step of every question still open) the round and the calls
        made so far, so it moves while no question is done yet (a round's batch shows no bar of its own: a question
        takes up to a dozen rounds)."""
        from tqdm.auto import tqdm

        finished: list[Trace] = []
        active = list(traces)
        pending = {t.question.id for t in traces}
        bar = tqdm(total=len(pending), desc=desc, unit="question", disable=not progress)
        rounds = calls_made = 0
        while active:
            rounds += 1
            plans = [(tr, self._requests(tr)) for tr in active]
            flat = [req for _, calls in plans for _, req, _ in calls]
            bar.set_postfix_str(f"round {rounds}: {plural(len(flat), 'call')}, {calls_made} made before")
            results = iter(refuse(self.answerer.batch(flat, None), f"{desc} round {rounds}"))
            calls_made += len(flat)
            nxt = []
            for tr, calls in plans:
                got = [next(results) for _ in calls]
                for t in self._apply(tr, calls, got):
                    (finished if t.done else nxt).append(t)
            active = nxt
            still = {t.question.id for t in active}
            bar.update(len(pending - still))
            bar.set_postfix_str(f"{rounds} rounds, {plural(calls_made, 'call')}")
            pending = still
        bar.close()
        return finished


def _fork(tr: Trace, branch: str) -> Trace:
    return Trace(
        question=tr.question,
        row=tr.row,
        state=tr.state,
        branch=branch,
        phase=tr.phase,
        steps=[dict(s) for s in tr.steps],
        results=list(tr.results),
        actions_done=tr.actions_done,
        decomps=tr.decomps,
        fallbacks=tr.fallbacks,
        forced=tr.forced,
    )


def start(questions: Sequence[Question], row: str) -> list[Trace]:
    """A trace per question for a row: direct rows answer in one call, the others start by selecting an action."""
    phase = "direct" if not ROWS[row] else "select"
    return [Trace(question=q, row=row, state=QuestionState(q.text), phase=phase) for q in questions]
