"""Integrative (DIY) thinking and template choice by the controller (OlaGPT, sections 3.5 and 3.6), which the
authors describe but never ran:

- DIY: the model composes a new thinking template for a question from the existing ones; the question is answered
  under it, and the composed text is recorded with the answer.
- Template choice: the controller (the model) picks k templates for a question instead of running them all; their
  answers are voted. With tools on, each template is listed with the tools it would answer with. Accuracy against
  calls and tokens is compared with running every template on the same questions.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from olakit.generation import Generation
from olakit.llm.request import Request
from olakit.olagpt.intent import show_question
from olakit.types import Question, Template

DIY_PROMPT = (
    "Here are thinking templates for solving questions:\n{templates}\n\nCompose one new thinking template "
    "(one or two sentences) that combines the ideas of the templates that best suit the question below. "
    "Reply with the new template only.\n\n{question}"
)
CHOOSE_PROMPT = (
    "Here are thinking templates for solving questions:\n{templates}\n\nWhich {k} of them suit the "
    "question below best? Reply with their names only, separated by commas.\n\n{question}"
)


def _listing(templates: Sequence[Template], tools: Mapping[str, Sequence[str]] | None = None) -> str:
    """Each template as the controller's prompts list it, with the tools it answers with when it has any."""
    tools = tools or {}
    return "\n".join(
        f"- {t.name}: {t.prefix or '(answer directly, no template)'}"
        + (f" (with tools: {', '.join(tools[t.name])})" if tools.get(t.name) else "")
        for t in templates
    )


def diy_request(question: Question, templates: Sequence[Template], generation: Generation) -> Request:
    """The call that composes a template for a question, with the diy stage's ``generation`` settings."""
    return Request.make(
        DIY_PROMPT.format(templates=_listing(templates), question=show_question(question)), **generation.params()
    )


def composed_template(text: str | None) -> str:
    """The composed template: the reply without quotes or a leading label; empty when the reply is empty.

    >>> composed_template('New template: "Plan the steps, then solve each."')
    'Plan the steps, then solve each.'
    """
    t = (text or "").strip().splitlines()[0] if (text or "").strip() else ""
    t = re.sub(r"^(?:new\s+)?(?:thinking\s+)?template\s*[:\-]\s*", "", t, flags=re.IGNORECASE)
    return t.strip().strip('"').strip()


def choose_request(
    question: Question,
    templates: Sequence[Template],
    k: int,
    generation: Generation,
    tools: Mapping[str, Sequence[str]] | None = None,
) -> Request:
    """The controller's choice of k templates for a question, with the choose stage's ``generation`` settings;
    ``tools``: the tools each template would answer with (its listing says so, so the choice can take them into
    account; none: the listing as without tools)."""
    return Request.make(
        CHOOSE_PROMPT.format(templates=_listing(templates, tools), k=k, question=show_question(question)),
        **generation.params(),
    )


def chosen_templates(text: str | None, names: Sequence[str], k: int) -> list[str]:
    """The first k known template names the reply mentions, in the reply's order; when it names fewer, the rest in
    template order fill up to k (the fallback, counted by the caller).

    >>> chosen_templates("ST, PT", ["turbo", "DT", "DST", "PT", "ST"], 2)
    ['ST', 'PT']
    >>> chosen_templates("none fit", ["turbo", "DT", "DST"], 2)
    ['turbo', 'DT']
    """
    found = []
    for m in re.finditer(r"[A-Za-z]+", text or ""):
        hit = next((n for n in names if n.lower() == m.group(0).lower()), None)
        if hit and hit not in found:
            found.append(hit)
    return (found + [n for n in names if n not in found])[:k]
