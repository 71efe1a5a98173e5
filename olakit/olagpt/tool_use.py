"""OlaGPT's templates with the tools library (seed 000, §3.1; docs/tools.md): which answers are made with tools,
which tools each is offered, and a program template's answers (PoT: the sandbox runs the reply's program).

``answer_calls(cfg, counter, calls, templates, offer)`` answers every call of a run's answer stage:
- a call of a template that uses tools (``cfg.tools`` is not ``none``, and the template is in ``cfg.tool_templates``
  or that is unset) runs the tool loop (olakit.tools.loop) with its tools: the library's (``cfg.tool_names``), all
  of them (``tools="all"``) or the tools index's top ``tools_k`` for the template's text and the question
  (``tools="retrieved"``, olakit.tools.index);
- a call of a program template (``"answer": "program"``, the built-in ``PoT``) is answered once, and its program is
  run (olakit.tools.program): its ``ans`` is the answer;
- every other call is one call, as without tools.
Each answer keeps what its record needs: the reply its text is read from, every call it paid (the record's tokens
and cost are theirs together), its trace (JSON: the tools offered, every model reply and every tool call with its
input, output and status; or the program, its status, ``ans`` and printed text) and, for a program, the answer and
the rule that read it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace

from olakit.answering.second_stage import Answer
from olakit.errors import DataError
from olakit.llm import Reply, Request
from olakit.olagpt.config import OlaGPTConfig
from olakit.tools import Tool, load_tools
from olakit.tools.index import ToolIndex
from olakit.tools.loop import ToolCache, run_loops
from olakit.tools.program import choice_request, chosen_option, program_answer, program_of, run_program
from olakit.tools.sandbox import shared_sandbox
from olakit.types import Template


@dataclass
class Answered:
    reply: Reply
    """The reply the answer is read from (a tool loop's last)."""
    request: Request
    """The request that reply answers (a tool loop's last: the conversation so far)."""
    calls: list[Reply] = field(default_factory=list)
    trace: str = ""
    answer: Answer | None = None
    """Set for a program's answer; None: the extractor reads ``reply``."""
    rule: str = ""


def uses_tools(cfg: OlaGPTConfig, template: Template | None) -> bool:
    """Whether ``template``'s answers are made with tools under ``cfg``."""
    if cfg.tools == "none" or template is None or template.answer != "text":
        return False
    return cfg.tool_templates is None or template.name in cfg.tool_templates


def library(cfg: OlaGPTConfig) -> list[Tool]:
    """The run's tools: ``tool_names`` of the library, or all of it; DataError naming an unknown one. A tool that
    searches a notes library (a ``library`` setting) searches the run's own (its ``library``, or its dataset's
    built-in one) where the run has one: the notes a tool finds are those the prompts show."""
    found = load_tools()
    unknown = [n for n in cfg.tool_names or () if n not in found]
    if unknown:
        raise DataError(f"tool_names: unknown tools {unknown}; the library has {', '.join(found)}")
    tools = list(found.values()) if cfg.tool_names is None else [found[n] for n in cfg.tool_names]
    notes = cfg.notes_library()
    return [_with_library(t, notes) if notes is not None else t for t in tools]


def _with_library(tool: Tool, notes: str) -> Tool:
    settings = dict(tool.settings)
    if "library" not in settings or settings["library"] == notes:
        return tool
    return replace(tool, settings=tuple(sorted({**settings, "library": notes}.items())))


def tool_query(template: Template, question) -> str:
    """What the tools index is searched with: the template's text and the question."""
    return f"{template.prefix}\n{question.text}".strip()


class Offer:
    """Which tools each template's answer to a question is offered under a config (one definition: the answers and
    the controller's choice read it)."""

    def __init__(self, cfg: OlaGPTConfig):
        self.cfg = cfg
        self.tools = library(cfg) if cfg.tools != "none" else []
        self.index = ToolIndex(self.tools, cfg.tool_retriever) if cfg.tools == "retrieved" else None

    def __call__(self, template: Template | None, question) -> list[Tool]:
        if not uses_tools(self.cfg, template):
            return []
        return self.index.top(tool_query(template, question), self.cfg.tools_k) if self.index else self.tools

    def names(self, templates: Sequence[Template], question) -> dict[str, list[str]]:
        return {t.name: [x.name for x in self(t, question)] for t in templates}


def answer_calls(
    cfg: OlaGPTConfig, counter, calls: Sequence, templates: dict[str, Template], offer: Offer | None = None
) -> list[Answered]:
    """Every call answered (module docstring), in order. ``templates``: each call's template by its record name
    (SC's samples by ``SC``); ``offer``: the run's Offer (default: one made from ``cfg``)."""
    kinds = ["tools" if uses_tools(cfg, templates.get(c.template)) else "one" for c in calls]
    out: list[Answered | None] = [None] * len(calls)
    plain = [i for i, k in enumerate(kinds) if k == "one"]
    for i, reply in zip(plain, counter.batch([calls[i].request for i in plain], "answers")):
        out[i] = Answered(reply=reply, request=calls[i].request, calls=[reply])
    tooled = [i for i, k in enumerate(kinds) if k == "tools"]
    if tooled:
        offer = offer or Offer(cfg)
        offered = [offer(templates[calls[i].template], calls[i].question) for i in tooled]
        cache = ToolCache()
        try:
            loops = run_loops(counter, [calls[i].request for i in tooled], offered, protocol=cfg.tool_protocol,
                              max_steps=cfg.tool_steps, desc="answers with tools", cache=cache)  # fmt: skip
        finally:
            cache.close()
        for i, loop in zip(tooled, loops):
            trace = {"tools": list(loop.tools), "protocol": cfg.tool_protocol, "calls": loop.calls,
                     "stopped": loop.stopped, "steps": loop.trace,
                     "replies": [{"text": r.text, "tool_calls": list(r.tool_calls)} for r in loop.replies]}  # fmt: skip
            out[i] = Answered(reply=loop.last, request=calls[i].request.continued(loop.messages[:-1]),
                              calls=list(loop.replies), trace=json.dumps(trace, ensure_ascii=False))  # fmt: skip
    programs = [i for i, c in enumerate(calls) if (templates.get(c.template) or _TEXT).answer == "program"]
    if programs:  # every call answered: a failed one raised in its batch
        box = shared_sandbox()  # the process's workers, started once (the python tool's too)
        with ThreadPoolExecutor(box.workers) as pool:
            runs = list(pool.map(lambda i: run_program(box, out[i].reply.text or ""), programs))
        by_model = [  # PoT's mapping: a second call names the option of each value (program_choice="model")
            (i, run) for i, run in zip(programs, runs)
            if cfg.program_choice == "model" and calls[i].question.kind == "choice" and run.ok and run.ans is not None
        ]  # fmt: skip
        asks = [choice_request(calls[i].question, run.ans) for i, run in by_model]
        named = counter.batch(asks, "program options") if asks else []
        chosen = {i: reply for (i, _), reply in zip(by_model, named)}
        for i, run in zip(programs, runs):
            q = calls[i].question
            trace = {"program": program_of(out[i].reply.text or ""), **{k: v for k, v in run.as_dict().items()
                     if k in ("status", "ans", "stdout", "error", "wall_s")}}  # fmt: skip
            if i in chosen:
                label, rule = chosen_option(chosen[i].text, q), "program:choice:model"
                out[i].calls.append(chosen[i])
                trace["option_reply"] = chosen[i].text
            elif cfg.program_choice == "model" and q.kind == "choice":  # no value: PoT's harness answered "A"
                label, rule = next(iter(q.options), None), "program:choice:no_value_first_option"
            else:
                label, rule = program_answer(run, q)
            out[i].answer, out[i].rule = Answer(label, 1), rule
            out[i].trace = json.dumps(trace, ensure_ascii=False, default=str)
    return out


_TEXT = Template(name="", prefix="")
