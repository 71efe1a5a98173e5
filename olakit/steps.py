"""A multi-step prompting method written as one function: the model's calls as ``yield ask(...)``, run for every
question at once, cached, counted and recorded with its trace.

A method's steps are a generator over one question: each ``yield ask(prompt, stage=NAME)`` is a call, and the
reply's text comes back as the value of the ``yield`` (a list of prompts asked at once gives a list of texts). What
the generator returns is the text the answer is read from (none: the last reply's). The runner drives every
question's generator in lockstep, so a step is one batch of calls over all questions (concurrent, each distinct
prompt paid once: olakit.llm), and a rerun pays only what is missing.

    def plan_and_solve(q, cfg):
        plan = yield ask(f"Q: {q.text} {choices_line(q)}\\nA: Let's first understand the problem ...", stage="plan")
        answer = yield ask(f"... {plan} Therefore, among A through E, the answer is", stage="extract")
        return f"Therefore, among A through E, the answer is {answer.strip()}"  # the reply continues the trigger

    method = stepwise("PS+", plan_and_solve, about="Plan-and-Solve prompting (Wang et al. 2023)")

The answer is read by the kit's reader of the question's kind (olakit.answering.extract: the last answer statement among
the options, yes/no, or a number): a reply that continues a trigger (" C.") is returned with its trigger, since on its
own it states no answer. Each record (an OlaGPTRecord named after the method, so its tables, figures,
comparisons and explorers are those of a template) keeps every call's usage and the trace of its steps: each
stage's prompt hash, output, tokens and finish reason.
"""

from __future__ import annotations

import dataclasses
import inspect
import json
from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass, field

from olakit.answering.extract import get_extractor
from olakit.answering.second_stage import answers
from olakit.config import OwnDataset, Slice
from olakit.data.loaders import questions_of
from olakit.data.records import answer_record, prompt_hash
from olakit.errors import DataError
from olakit.generation import AnswerStages, Generation
from olakit.llm.request import Reply, Request
from olakit.method import Method
from olakit.names import ZERO_SHOT
from olakit.result import OlaGPTExtras, Result
from olakit.runner import Run
from olakit.settings import Analysis
from olakit.types import OlaGPTRecord, Question

__all__ = ["Ask", "StepwiseConfig", "ask", "choices_line", "run_steps", "stepwise"]


class StepwiseConfig(Slice, OwnDataset, Generation, Analysis, AnswerStages):
    """A stepwise method's run: which questions (a dataset, its split and slice), how each call generates
    (olakit.generation: the run's settings and each stage's), how the answer is read, and how the tables are
    computed. A method that needs settings of its own subclasses it."""

    ALIASES = {"n_questions": "-n"}


@dataclass(frozen=True)
class Ask:
    """One call a step asks for: its messages (a prompt, or chat messages), the stage it belongs to (its name in the
    trace and in ``stages``' overrides) and settings of its own."""

    messages: str | tuple
    stage: str = "answer"
    generation: dict = field(default_factory=dict)

    def request(self, settings: Generation, sample: int) -> Request:
        gen = settings.for_stage(self.stage, **self.generation)
        messages = self.messages if isinstance(self.messages, str) else list(self.messages)
        return Request.make(messages, sample=sample, **gen.params())


def ask(messages: str | Sequence[dict], stage: str = "answer", **generation) -> Ask:
    """A call for a step to yield: ``text = yield ask("Q: ...", stage="plan", max_tokens=128)``."""
    return Ask(messages if isinstance(messages, str) else tuple(messages), stage, dict(generation))


def choices_line(question: Question) -> str:
    """A question's options as Zero-shot-CoT and Plan-and-Solve write them (empty without options).

    >>> q = Question(id="1", dataset="d", text="2+2?", options={"A": "3", "B": "4"}, gold="B")
    >>> choices_line(q)
    'Answer Choices: (A) 3 (B) 4'
    """
    if not question.options:
        return ""
    return "Answer Choices: " + " ".join(f"({label}) {text}" for label, text in question.options.items())


Steps = Callable[[Question, StepwiseConfig], Generator]


@dataclass
class _Walk:
    """One question's (and sample's) walk through the steps: the generator, what it asked for, the trace."""

    question: Question
    sample: int
    steps: Generator
    asked: list[Ask] = field(default_factory=list)
    requests: list[Request] = field(default_factory=list)
    replies: list[Reply] = field(default_factory=list)
    trace: list[dict] = field(default_factory=list)
    final: str | None = None
    done: bool = False


def _asks(value, where: str) -> list[Ask]:
    """What a step yielded, as calls (an Ask, a prompt, or a list of them)."""
    many = value if isinstance(value, list | tuple) else [value]
    out = [Ask(v) if isinstance(v, str) else v for v in many]
    bad = [v for v in out if not isinstance(v, Ask)]
    if bad or not out:
        raise DataError(f"{where}: yielded {type(bad[0]).__name__ if bad else 'an empty list'}; yield ask(prompt) "
                        "(or a prompt, or a list of them)")  # fmt: skip
    return out


def _advance(walk: _Walk, name: str, sent) -> None:
    """Send a step's texts to a walk's generator; note what it asks next, or its final text."""
    where = f"method {name}, question {walk.question.id}, step {len(walk.trace)}"
    try:
        value = walk.steps.send(sent)
    except StopIteration as stop:
        walk.done = True
        walk.final = stop.value if stop.value is not None else (walk.replies[-1].text if walk.replies else None)
        if walk.final is not None and not isinstance(walk.final, str):
            raise DataError(f"{where}: returned {type(walk.final).__name__}; return the text to read the answer "
                            "from (or nothing: the last reply's)") from None  # fmt: skip
        if not walk.replies:
            raise DataError(f"{where}: returned before asking anything; a method makes at least one call") from None
        return
    walk.asked = _asks(value, where)


def run_steps(name: str, steps: Steps, questions: Sequence[Question], job, cfg: StepwiseConfig) -> list[_Walk]:
    """Every question's (and sample's) walk, the steps of all asked at once as one batch of calls per round."""
    settings = cfg.generation()
    walks = []
    for q in questions:
        for s in range(cfg.samples):
            gen = steps(q, cfg)
            if not inspect.isgenerator(gen):
                raise DataError(f"method {name}: its steps function returned {type(gen).__name__}, not a generator; "
                                "write each call as `text = yield ask(prompt)`")  # fmt: skip
            walk = _Walk(q, s, gen)
            _advance(walk, name, None)
            walks.append(walk)
    round_ = 0
    while todo := [w for w in walks if not w.done]:
        round_ += 1
        requests = [a.request(settings, w.sample) for w in todo for a in w.asked]
        replies = iter(job.answerer.batch(requests, f"{name}: step {round_}"))
        requests = iter(requests)
        for w in todo:
            texts = []
            for a in w.asked:
                request, reply = next(requests), next(replies)
                w.requests.append(request)
                w.replies.append(reply)
                w.trace.append(_step(a, request, reply))
                texts.append(reply.text or "")
            _advance(w, name, texts if len(w.asked) > 1 else texts[0])
    return walks


def _step(a: Ask, request: Request, reply: Reply) -> dict:
    prompt = "\n".join(str(m.get("content") or "") for m in request.message_dicts())
    return {
        "stage": a.stage,
        "prompt_hash": prompt_hash(prompt),
        "output": reply.text or "",
        "prompt_tokens": reply.prompt_tokens,
        "completion_tokens": reply.completion_tokens,
        "finish_reason": reply.finish_reason,
        "cached": reply.cached,
    }


def _records(name: str, walks: list[_Walk], job, cfg: StepwiseConfig) -> list[OlaGPTRecord]:
    """A record per walk: the final text read by the question kind's reader (and a second stage where asked)."""
    extract = get_extractor("strict")
    finals = [dataclasses.replace(w.replies[-1], text=w.final) for w in walks]
    found = answers([(w.requests[-1], f, w.question.options) for w, f in zip(walks, finals)], job.answerer, cfg,
                    extract=extract)  # fmt: skip
    model = job.answerer.endpoint.model
    out = []
    for w, final, answer in zip(walks, finals, found):
        prompts = "\n\n".join("\n".join(str(m.get("content") or "") for m in r.message_dicts()) for r in w.requests)
        out.append(
            answer_record(
                OlaGPTRecord,
                w.question,
                prompts,
                final,
                answer,
                model=model,
                calls=[*w.replies, *([answer.second] if answer.second is not None else [])],
                trace=json.dumps({"method": name, "steps": w.trace}, ensure_ascii=False),
                template=name,
                notes_strategy=ZERO_SHOT,
                n_notes=0,
                sample=w.sample,
            )
        )
    return out


def _make(name: str, steps: Steps, config: StepwiseConfig, job: Run) -> Result:
    """A stepwise method's Result, its calls made in the open run ``job``."""
    questions = config.pick(questions_of(config))
    free = [q.id for q in questions if q.kind == "text"]
    if free:
        raise DataError(f"method {name}: {len(free)} question(s) with a free-text answer (first: {free[0]}); a "
                        "stepwise method's answer is read as an option, yes/no or a number")  # fmt: skip
    walks = run_steps(name, steps, questions, job, config)
    records = _records(name, walks, job, config)
    extras = OlaGPTExtras(templates=[name], answer_kinds=sorted({q.kind for q in questions}))
    return job.finish(records, OlaGPTRecord, extras)


def stepwise(name: str, steps: Steps, *, config: type[StepwiseConfig] = StepwiseConfig, about: str = "") -> Method:
    """A Method (olakit.method) from a steps function: every door (``olakit method``, the method notebook, sweeps,
    compare, export, the explorers) runs it. ``name`` is its condition's name in records and tables.

    >>> def direct(q, cfg):
    ...     return (yield ask(q.text))
    >>> stepwise("direct", direct).cells(StepwiseConfig())
    ['direct | zero-shot']
    """
    if not isinstance(config, type) or not issubclass(config, StepwiseConfig):
        raise DataError(f"method {name}: config {config!r} is not a StepwiseConfig type")
    cells = [f"{name} | {ZERO_SHOT}"]

    def run(cfg, llm=None, *, parameters=None, registration=None, concurrency=None, batch=None, export=None,
            announce=None) -> Result:  # fmt: skip
        door = dict(parameters=parameters, concurrency=concurrency, batch=batch, export=export)
        with Run("method", cfg, llm, kind="olagpt", registration=registration, **door) as job:
            if registration is not None:
                registration.check_cells(cells)
            if announce is not None:
                announce(job)
            return _make(name, steps, cfg, job)

    return Method(
        name=name,
        config=config,
        kind="olagpt",
        run=run,
        about=about or (steps.__doc__ or "").strip().split("\n")[0],
        cells=lambda cfg: list(cells),
        calls=lambda cfg: None,
        pairs="cells",
        answers=("read", "second stage", "score"),
    )
