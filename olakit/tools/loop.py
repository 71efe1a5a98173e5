"""The tool loop: a model answers with tools at hand, at most ``max_steps`` rounds of tool calls, then answers.

    loops = run_loops(answerer, [Request.make("What is 17 * 23?", max_tokens=200)], [tools["calculator"]],
                      protocol="openai", max_steps=4)
    loops[0].text      # the model's last reply, where its answer is read from
    loops[0].trace     # [{"step": 1, "tool": "calculator", "input": "17 * 23", "output": "391", "status": "ok", ...}]

Two protocols (``protocol``):
- ``openai``: the OpenAI tools API (function calling), as OpenAI and vLLM serve it: each tool is a function with one
  string argument, ``input``; the model's ``tool_calls`` are run and answered with ``tool`` messages;
- ``text``: for models without it, ReAct's lines: the model writes ``Action: tool[input]`` (stopped at
  ``Observation:``), and is answered with ``Observation: ...``; a reply with no action is its answer.

Every conversation steps in the same round, so each round is one batch of calls (``answerer.batch``, counted by
the run as every other call, its stage named ``desc`` and the step). After ``max_steps`` rounds with tool calls the
model is told to answer without tools: one more call, so a loop makes at most ``max_steps + 1`` calls
(``max_calls``). Every call, observation, error and timeout is in the trace: ``status`` is ``ok``, ``error`` (the
tool refused its input), ``timeout``, ``memory``, ``output`` or ``blocked`` (the sandbox's), ``unknown tool`` or
``malformed`` (a call the loop could not read), ``step cap`` (asked for after the last round: not run). Tool
results are cached by tool, version and input (``ToolCache``; timeouts and memory errors are not kept: they depend
on the machine).
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from olakit.env import environment, user_dir
from olakit.errors import DataError
from olakit.llm import Request
from olakit.llm.answerer import refuse
from olakit.names import TOOL_STATUSES
from olakit.tools import Tool
from olakit.tools.errors import ToolError

PROTOCOLS = ("openai", "text")
STATUSES = TOOL_STATUSES
"""How a tool call in a trace ended (olakit.names.TOOL_STATUSES)."""
UNCACHED = ("timeout", "memory")
"""Statuses whose results are not kept: they depend on the machine and its load."""

TEXT_PROTOCOL = """You can use these tools:
{tools}

To use a tool, write one line "Action: TOOL[INPUT]" and stop; you will get "Observation: RESULT". Use tools as many \
times as you need, then answer as asked, with no Action line."""
"""The text protocol's instructions, put before the question (ReAct's Action/Observation lines)."""

ANSWER_NOW = "No more tools: give your final answer now."
"""What the model is told after its last allowed round of tool calls."""

ACTION = re.compile(r"Action\s*:\s*([A-Za-z_][A-Za-z0-9_]*)\s*\[(.*)\]", re.S)
ACTION_WORD = re.compile(r"^\s*Action\s*:", re.M)


class ToolCache:
    """Tool results by tool name, version and input, in a diskcache of their own (``$OLAKIT_CACHE_DIR/tools``, else
    the user cache directory's ``tools``)."""

    def __init__(self, directory=None):
        import diskcache

        cache_dir = environment().cache_dir
        self.store = diskcache.Cache(str(directory or (cache_dir / "tools" if cache_dir else user_dir("tools"))))

    @staticmethod
    def key(tool: Tool, text: str) -> str:
        return hashlib.sha256(json.dumps([tool.name, tool.version, list(tool.settings), text]).encode()).hexdigest()

    def get(self, tool: Tool, text: str) -> tuple[str, str] | None:
        hit = self.store.get(self.key(tool, text))
        return tuple(hit) if hit else None

    def set(self, tool: Tool, text: str, output: str, status: str) -> None:
        if status not in UNCACHED:
            self.store.set(self.key(tool, text), [output, status])

    def close(self) -> None:
        self.store.close()


@dataclass
class Loop:
    """One conversation's tool loop: its last reply's ``text``, the ``trace`` of tool calls, the model calls it made
    and why it stopped (``answered``, or ``step cap``: it was told to answer after its last allowed round)."""

    trace: list[dict] = field(default_factory=list)
    stopped: str = ""
    messages: list[dict] = field(default_factory=list)
    replies: list = field(default_factory=list)
    """Every model call's Reply, in order (what the loop cost: their tokens and prices)."""
    tools: tuple[str, ...] = ()
    """The tools it was offered."""

    @property
    def last(self):
        """The last call's Reply (the answer's)."""
        return self.replies[-1]

    @property
    def text(self) -> str:
        return self.last.text or ""

    @property
    def calls(self) -> int:
        return len(self.replies)


def max_calls(max_steps: int) -> int:
    """The most model calls one loop makes: a round per step, and the answer after the last."""
    return max_steps + 1


def _call_tool(tools: dict[str, Tool], name: str, text: str, cache: ToolCache | None) -> dict:
    t0 = time.perf_counter()
    tool = tools.get(name)
    if tool is None:
        known = ", ".join(sorted(tools)) or "none"
        return _outcome(name, text, f"unknown tool {name!r}; the tools are: {known}", "unknown tool")
    hit = cache.get(tool, text) if cache else None
    if hit:
        return _outcome(name, text, *hit) | {"cached": True}
    try:
        output, status = tool(text), "ok"
    except ToolError as exc:
        output, status = str(exc), exc.status
    except Exception as exc:  # noqa: BLE001  (a user's tool failing is an observation, not a crashed run)
        output, status = f"{type(exc).__name__}: {exc}", "error"
    if cache:
        cache.set(tool, text, output, status)
    return _outcome(name, text, output, status) | {"seconds": round(time.perf_counter() - t0, 4)}


def _outcome(name: str, text: str, output: str, status: str) -> dict:
    return {"tool": name, "input": text, "output": output, "status": status, "cached": False, "seconds": 0.0}


def _actions(protocol: str, reply) -> list[tuple[str, str, str, str]]:
    """The tool calls a reply asks for, each (tool, input, why it is malformed or "", call id or "")."""
    if protocol == "openai":
        return _openai_actions(reply)
    found = _text_actions(reply.text or "")
    if isinstance(found, str):
        return [("", (reply.text or "").strip()[-200:], found, "")]
    return [(name, text, "", "") for name, text in found]


def _schema(tool: Tool) -> dict:
    return {
        "type": "function",
        "function": {
            "name": tool.name,
            "description": tool.description,
            "parameters": {
                "type": "object",
                "properties": {"input": {"type": "string", "description": tool.input}},
                "required": ["input"],
            },
        },
    }


def _text_actions(text: str) -> list[tuple[str, str]] | str:
    """The action of a text-protocol reply ([(tool, input)]), [] for an answer, or why the action is malformed."""
    if not ACTION_WORD.search(text):
        return []
    found = ACTION.search(text[ACTION_WORD.search(text).start() :])
    if not found:
        return "malformed action: write one line 'Action: TOOL[INPUT]'"
    return [(found[1], found[2].strip())]


def _openai_actions(reply) -> list[tuple[str, str, str, str]]:
    """(tool, input, why it is malformed or "", call id) of each tool call of an OpenAI-protocol reply."""
    out = []
    for call in reply.tool_calls:
        try:
            args = json.loads(call["arguments"] or "{}")
            text = args["input"] if isinstance(args, dict) else None
            if not isinstance(text, str):
                raise ValueError("no string 'input'")
            out.append((call["name"], text, "", call["id"]))
        except (ValueError, KeyError, TypeError) as exc:
            why = f'malformed call ({exc}): give {{"input": TEXT}}'
            out.append((call["name"], call["arguments"], why, call["id"]))
    return out


def run_loops(
    answerer,
    requests: Sequence[Request],
    tools: Sequence[Tool] | Sequence[Sequence[Tool]],
    *,
    protocol: str,
    max_steps: int,
    desc: str = "tool loop",
    cache: ToolCache | None = None,
    workers: int = 4,
) -> list[Loop]:
    """Each request's conversation with the tools (module docstring); a failed call raises CallsFailed, as every
    path that makes calls for a result does. ``requests`` keep their own parameters (temperature, max_tokens).
    ``tools``: the tools every conversation is offered, or one list per request."""
    if protocol not in PROTOCOLS:
        raise DataError(f"tool protocol {protocol!r}: one of {', '.join(PROTOCOLS)}")
    if max_steps < 0:
        raise DataError(f"max_steps must be 0 or more, not {max_steps}")
    each = [list(t) for t in tools] if tools and not isinstance(tools[0], Tool) else [list(tools)] * len(requests)
    if len(each) != len(requests):
        raise DataError(f"{len(each)} tool lists for {len(requests)} requests: give one list, or one per request")
    loops = [
        Loop(messages=r.message_dicts(), tools=tuple(t.name for t in offered)) for r, offered in zip(requests, each)
    ]
    for loop, offered in zip(loops, each):
        if protocol == "text" and offered:
            listing = TEXT_PROTOCOL.format(tools="\n".join(f"- {t.shown()}" for t in offered))
            loop.messages[-1] = {**loop.messages[-1], "content": f"{listing}\n\n{loop.messages[-1]['content']}"}
    active = list(range(len(loops)))
    with ThreadPoolExecutor(max(1, workers)) as pool:
        for step in range(1, max_steps + 2):
            if not active:
                break
            final = step == max_steps + 1
            batch = []
            for i in active:
                extra = {}
                if protocol == "openai" and each[i]:
                    extra["tools"] = [_schema(t) for t in each[i]]
                    if final:
                        extra["tool_choice"] = "none"
                elif protocol == "text" and each[i] and not final:
                    extra["stop"] = ["Observation:", *(requests[i].call_params().get("stop") or [])]
                batch.append(requests[i].continued(loops[i].messages, **extra))
            replies = refuse(answerer.batch(batch, f"{desc} (step {step})"), f"{desc} (step {step})")
            pending = []  # (conversation, call id or "", the tool call's outcome: a future or a dict)
            for i, reply in zip(active, replies):
                loop, offered = loops[i], each[i]
                loop.replies.append(reply)
                actions = _actions(protocol, reply)
                if final or not offered or not actions:
                    loop.stopped = "step cap" if offered and final and max_steps else "answered"
                    loop.messages.append({"role": "assistant", "content": loop.text})
                    for name, _, _, _ in actions if offered else []:  # asked for past the cap: recorded, not run
                        loop.trace.append(_outcome(name, "", "not run: step cap", "step cap") | {"step": step})
                    continue
                by_name = {t.name: t for t in offered}
                if protocol == "openai":
                    calls = [{"id": c["id"], "type": "function", "function": {"name": c["name"], "arguments":
                              c["arguments"]}} for c in reply.tool_calls]  # fmt: skip
                    loop.messages.append({"role": "assistant", "content": reply.text or None, "tool_calls": calls})
                else:
                    loop.messages.append({"role": "assistant", "content": loop.text})
                for name, text, bad, cid in actions:
                    work = _outcome(name, text, bad, "malformed") if bad else pool.submit(
                        _call_tool, by_name, name, text, cache)  # fmt: skip
                    pending.append((i, cid, work))
            for i, cid, work in pending:  # every tool call of the round ran at once; answered in order
                done = work if isinstance(work, dict) else work.result()
                loop = loops[i]
                loop.trace.append({"step": step, **({"call_id": cid} if cid else {}), **done})
                if protocol == "openai":
                    loop.messages.append({"role": "tool", "tool_call_id": cid, "content": done["output"]})
                else:
                    loop.messages.append({"role": "user", "content": f"Observation: {done['output']}"})
            still = sorted({i for i, *_ in pending})
            if step == max_steps:
                for i in still:
                    loops[i].messages.append({"role": "user", "content": ANSWER_NOW})
            active = still
    return loops
