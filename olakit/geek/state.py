"""The question state Q_t of GEEK (seeds/002, Fig 2): the question and the ordered (sub-question, fact, source)
pairs gathered so far, plus the sub-question waiting for its fact.

``QuestionState("Q?").add_sub_question("S?").answer("F.", "self").render()`` ->
``"Question: Q?\\nSub-question 1: S?\\nFact 1 (self): F."``.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace


@dataclass(frozen=True)
class Step:
    """One answered sub-question: the sub-question, the fact found for it, and its source (``self`` or the ids of
    the retrieved paragraphs, ``retrieved:ID,ID``)."""

    sub_question: str
    fact: str
    source: str


@dataclass(frozen=True)
class QuestionState:
    question: str
    steps: tuple[Step, ...] = ()
    pending: str = ""
    """The current sub-question, not yet answered ("" when none)."""
    hint: str = ""
    """A pseudo-answer for the pending sub-question (the pre-answer setting), passed to the extractor."""
    extra: dict = field(default_factory=dict, compare=False)

    @property
    def n_sub_questions(self) -> int:
        return len(self.steps) + bool(self.pending)

    def add_sub_question(self, sub_question: str, hint: str = "") -> QuestionState:
        return replace(self, pending=sub_question.strip(), hint=hint.strip())

    def answer(self, fact: str, source: str) -> QuestionState:
        return replace(self, steps=(*self.steps, Step(self.pending, fact.strip(), source)), pending="", hint="")

    def render(self) -> str:
        lines = [f"Question: {self.question}"]
        for i, s in enumerate(self.steps, 1):
            src = "self" if s.source == "self" else "retrieved"
            lines += [f"Sub-question {i}: {s.sub_question}", f"Fact {i} ({src}): {s.fact}"]
        if self.pending:
            lines.append(f"Current sub-question (unanswered): {self.pending}")
        return "\n".join(lines)
