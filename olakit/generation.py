"""Generation settings: one type for what a model call is asked to generate, merged from a run down to a stage.

``Generation`` holds the settings that change a model's output: the token limit, temperature, top-p, seed, stop
sequences and the number of samples. "Not set" (None) means the model's own default, so nothing is sent for it.
A run's settings are the base; a stage (or a role) overrides some of them (``stages``), and ``merge`` makes the
settings a call is made with: a setting the override leaves unset keeps the base's. A method may set its stages' own
(``STAGE_DEFAULTS``: GEEK's, the review loop's and the notes build's settings of each kind of call); they lie
beneath the run's settings that are given.

>>> base = Generation(max_tokens=256, temperature=0)
>>> base.merge(Generation(max_tokens=16)).params()
{'max_tokens': 16, 'temperature': 0.0}
>>> Generation().params()
{}
>>> class Two(Generation):
...     STAGE_DEFAULTS = {"plan": {"max_tokens": 128, "temperature": 0.0}}
>>> Two().for_stage("plan").params(), Two(temperature=0.5).for_stage("plan").params()
({'max_tokens': 128, 'temperature': 0.0}, {'max_tokens': 128, 'temperature': 0.5})
>>> Two(stages={"plan": {"max_tokens": 64}}).for_stage("plan").params()
{'max_tokens': 64, 'temperature': 0.0}
>>> Two(stop=["END"]).for_stage("plan", max_tokens=32).params()  # a call's own setting last; stop sent as a list
{'max_tokens': 32, 'temperature': 0.0, 'stop': ['END']}
"""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal

from pydantic import Field, field_validator

from olakit.config import Config
from olakit.errors import DataError

__all__ = ["EFFORTS", "AnswerStages", "Generation", "Judging", "Reasoning"]

EFFORTS = ("none", "minimal", "low", "medium", "high")
"""A reasoning model's effort, as OpenAI names the levels."""


class Reasoning(Config):
    """How much a reasoning model thinks before it answers: one setting of every method's config, carried by every
    call of a run (olakit.runner) and so in each call's cache key. Sent as ``reasoning_effort`` (OpenAI's reasoning
    models, gpt-oss and vLLM's OpenAI server); ``none`` also sends ``chat_template_kwargs: {"enable_thinking":
    false}`` (Qwen3 on vLLM, SGLang or llama.cpp). A parameter an endpoint refuses is learned at its first 400, said
    once and recorded in the run log (the role's ``refused``), and left out from then on (docs/reasoning.md).

    Several efforts are a factor of the experiment: the method runs once per effort, and the runs are compared as
    one grid (olakit.method.Method, olakit.analysis.compare)."""

    reasoning_effort: tuple[Literal[EFFORTS], ...] = ()  # type: ignore[valid-type]
    """The model's reasoning effort: none, minimal, low, medium or high; several (``low,high``) a factor, one run
    each, compared as one grid (empty: the model's default, nothing sent)."""
    thinking_budget: Annotated[int, Field(ge=0)] | None = None
    """The most tokens a call may think (none: the model's own): sent as ``thinking_token_budget`` (vLLM) and as
    ``chat_template_kwargs.thinking_budget`` (SGLang; Qwen3's template); a server that refuses it (OpenAI's API)
    has it left out, learned once. The thinking counts against the token limit too."""

    def effort(self) -> str | None:
        """The one effort a run's calls carry (None: the model's default); several are a grid, run one by one by the
        method's door (olakit.method.Method)."""
        if len(self.reasoning_effort) > 1:
            given = ",".join(self.reasoning_effort)
            raise DataError(f"reasoning_effort {given}: several efforts are a grid, run one per effort through "
                            "olakit.run_method or olakit method NAME (docs/reasoning.md)")  # fmt: skip
        return self.reasoning_effort[0] if self.reasoning_effort else None

    def reasoning(self) -> dict:
        """What every call of a run carries (olakit.runner.RoleCalls; in each call's cache key): the one effort and
        the thinking budget, where set."""
        return {"reasoning_effort": self.effort(), "thinking_budget": self.thinking_budget}

    @field_validator("reasoning_effort")
    @classmethod
    def _once(cls, value):
        twice = sorted({e for e in value if value.count(e) > 1})
        if twice:
            raise ValueError(f"{', '.join(twice)} given twice")
        return value


class AnswerStages(Config):
    """How a method reads its answers: one home for the answer stages of every method that reads one (OlaGPT, GEEK,
    the review loop, every stepwise method), and the second stage's token limit."""

    answer_stages: Literal[1, 2] = 1
    """1: the method's reader reads each output (the seeds); 2: an output cut off or without an answer gets a second
    call with Zero-shot-CoT's answer trigger (olakit.answering.second_stage)."""
    second_stage_tokens: Annotated[int, Field(ge=1)] = 16
    """Token limit of the second answer stage."""


class Judging(Config):
    """The judge role's calls (GEEK's pairwise judge, the review loop's free-text grading and its open judge)."""

    judge_tokens: Annotated[int, Field(ge=1)] = 48
    """Token limit of a judge's verdict (each pairwise judgement, each grade against a reference)."""


_SENT = {"max_tokens": "max_tokens", "temperature": "temperature", "top_p": "top_p", "seed": "seed", "stop": "stop"}
"""Each setting's name in a chat completion request (``samples`` is no parameter: each sample is a call of its own,
its seed offset by its index, olakit.llm.request)."""


class Generation(Reasoning):
    """What a model call is asked to generate; each setting unset (None) is the model's default, and not sent."""

    max_tokens: Annotated[int, Field(ge=1)] | None = None
    """Token limit of an answer, every stage's (none: a stage's own where the method sets one, else the model's)."""
    temperature: Annotated[float, Field(ge=0)] | None = None
    """Sampling temperature, every stage's (none: a stage's own where the method sets one, else the model's)."""
    top_p: Annotated[float, Field(gt=0, le=1)] | None = None
    """Nucleus sampling's probability mass (none: the model's default)."""
    seed: int | None = None
    """The sampling seed sent with each call (none: a stage's own where the method sets one, else none sent); sample
    i is sent seed + i."""
    stop: tuple[str, ...] | None = None
    """Stop sequences (none: the model's own)."""
    samples: Annotated[int, Field(ge=1)] = 1
    """Answers per question and stage: 1, or k for a vote over k samples (each its own cached call)."""
    stages: dict[str, dict] = {}
    """Per stage (or role) overrides, by the stage's name: ``{"extract": {"max_tokens": 16}}``; a stage not named
    takes the settings above (over the method's own settings of it, where it has some)."""

    STAGE_DEFAULTS: ClassVar[dict[str, dict]] = {}
    """A method's own settings of its stages, by name (GEEK: each kind of call's token limit, greedy; its branch
    candidates sampled), beneath the run's: a setting given for the run (one that differs from its default above)
    applies to every stage, and a stage's override in ``stages`` to that stage. A method that names its stages here
    refuses any other name in ``stages``."""
    SAMPLED: ClassVar[bool] = True
    """Whether the method takes ``samples`` (GEEK, the review loop and the notes build answer each question once, or
    ``r`` times: no)."""

    @field_validator("samples")
    @classmethod
    def _sampled(cls, samples):
        if samples != 1 and not cls.SAMPLED:
            raise ValueError("one answer a question: this method takes no samples")
        return samples

    @field_validator("stages")
    @classmethod
    def _stages(cls, value):
        unknown = sorted(set(value) - set(cls.STAGE_DEFAULTS)) if cls.STAGE_DEFAULTS else []
        if unknown:
            raise ValueError(f"unknown stages {unknown}; {cls.__name__}'s: {', '.join(cls.STAGE_DEFAULTS)}")
        for name, override in value.items():
            unknown = sorted(set(override) - set(_SENT) - {"samples"})
            if unknown:
                raise ValueError(f"stage {name!r}: {', '.join(unknown)} not generation settings ({', '.join(_SENT)})")
            Generation(**override)  # each value checked as its setting is
        return value

    def generation(self) -> Generation:
        """Just the generation settings of a larger config (a method's config is one)."""
        return Generation(**{k: getattr(self, k) for k in Generation.model_fields})

    # the reasoning effort is carried by the run's every call (olakit.runner.RoleCalls), not by params()

    def merge(self, other: Generation | dict | None) -> Generation:
        """These settings with ``other``'s set ones in their place (``other``: a Generation or a mapping)."""
        if other is None:
            return self.generation()
        given = other if isinstance(other, dict) else other.model_dump(exclude_unset=True)
        return Generation(**{**self.generation().model_dump(exclude={"stages"}), **given})

    @classmethod
    def more_help(cls, name: str) -> str:
        """``stages``' flag names the method's own settings of its stages (STAGE_DEFAULTS), so --help shows them."""
        if name != "stages" or not cls.STAGE_DEFAULTS:
            return ""
        own = "; ".join(f"{stage} " + ", ".join(f"{k} {v}" for k, v in settings.items())
                        for stage, settings in cls.STAGE_DEFAULTS.items())  # fmt: skip
        return f" This method's stages, with its own settings: {own}."

    def stage_defaults(self) -> dict[str, dict]:
        """The method's own settings of its stages for this run: ``STAGE_DEFAULTS`` (the review loop's depend on its
        behaviour)."""
        return self.STAGE_DEFAULTS

    def for_stage(self, stage: str, **override) -> Generation:
        """The settings of one stage: the method's own for it (``stage_defaults``), then the run's that are given,
        then the stage's own from ``stages``, then ``override``."""
        given = {
            k: getattr(self, k) for k in (*_SENT, "samples") if getattr(self, k) != Generation.model_fields[k].default
        }
        own = self.generation().merge(self.stage_defaults().get(stage)).merge(given)
        return own.merge(self.stages.get(stage)).merge(override)

    def params(self) -> dict:
        """The request parameters: every setting that is set, by its name in a chat completion request."""
        return {sent: getattr(self, name) for name, sent in _SENT.items() if getattr(self, name) is not None} | (
            {"stop": list(self.stop)} if self.stop is not None else {}
        )
