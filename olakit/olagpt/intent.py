"""Intention enhancement (paper 3.2, Table 5): the LLM names the question type, the question is reframed.

The type prompt is the paper's, per dataset; the framed question starts "Now give you the {type} question and
choices:" and ends with the answer-format sentence. Type calls are ordinary cached LLM calls.

``frame_question(q, "probability")`` ->
``"Now give you the probability question and choices:\\nquestion: ...\\nchoices:\\nA)...\\n...\\n"
"The answer must end with JSON format: Answer: one of options[A,B,C,D,E]."``
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

from olakit.errors import lookup
from olakit.generation import Generation
from olakit.llm import Request
from olakit.llm.answerer import Answerer
from olakit.types import Question

TYPE_PROMPTS = {
    "aqua": (
        "As a mathematics professor, you need to judge the type of the following question and don't give an "
        "explanation\n\nQuestion: {question}\n\nAnswer: The output must only be in a strict JSON format: "
        '"task_type": "question type".'
    ),
    "ekar_zh": (
        "You are the examiner of the Chinese Civil Service Examination, and you need to judge the specific "
        "question types of the following analogy questions and don't give an explanation.\n\n"
        "Question: {question}\n\nAnswer: The output must only be in a strict JSON format: "
        '"task_type": "question type".'
    ),
    "strategyqa": (
        "As a professor of general knowledge, you need to judge the type of the following yes/no question and don't "
        "give an explanation\n\nQuestion: {question}\n\nAnswer: The output must only be in a strict JSON format: "
        '"task_type": "question type".'
    ),
}
"""Table 5 of the paper, keyed by dataset (StrategyQA's, for the cross-method row, follows the AQuA wording)."""
KIND_PROMPTS = {
    "number": TYPE_PROMPTS["aqua"],
    "yes_no": TYPE_PROMPTS["strategyqa"],
    "choice": (
        "As an examiner, you need to judge the type of the following multiple-choice question and don't give an "
        "explanation\n\nQuestion: {question}\n\nAnswer: The output must only be in a strict JSON format: "
        '"task_type": "question type".'
    ),
}
"""The type prompt of a dataset file, by its answer kind (olakit's choice: the paper has one per dataset): a
numeric question gets AQuA's mathematics professor, a yes/no one StrategyQA's, any other multiple choice an
examiner's in the same wording."""
DEFAULT_TYPE = {"aqua": "math", "ekar_zh": "analogy", "strategyqa": "yes/no", "number": "math", "yes_no": "yes/no"}
"""Used when the model's reply holds no usable type (by dataset, or a dataset file's answer kind)."""


def show_question(question: Question) -> str:
    """The question with its options, as every prompt shows it (a numeric question has none)."""
    if not question.options:
        return f"question: {question.text}"
    options = "\n".join(f"{label}){text}" for label, text in question.options.items())
    return f"question: {question.text}\nchoices:\n{options}"


def type_prompt(question: Question) -> str:
    """The type prompt for a question: its dataset's (Table 5), else its answer kind's (KIND_PROMPTS)."""
    if question.dataset in TYPE_PROMPTS:
        return TYPE_PROMPTS[question.dataset]
    return lookup(KIND_PROMPTS, question.kind, "answer kind with a type prompt")


def type_prompt_name(question: Question) -> str:
    """Which type prompt a question gets: ``dataset:aqua`` (Table 5) or ``kind:number`` (KIND_PROMPTS)."""
    return f"dataset:{question.dataset}" if question.dataset in TYPE_PROMPTS else f"kind:{question.kind}"


def type_request(question: Question, generation: Generation) -> Request:
    """The Table 5 call for one question, with the question-type stage's ``generation`` settings."""
    return Request.make(type_prompt(question).format(question=show_question(question)), **generation.params())


def parse_type(text: str | None, dataset: str = "aqua") -> str:
    """The type from a reply like ``{"task_type": "probability question"}`` (or a bare phrase).

    ``parse_type('{"task_type": "Geometry"}') -> "geometry"``
    """
    text = (text or "").strip()
    m = re.search(r"task_type[\"']?\s*[:：]\s*[\"']?([^\"'}\n]+)", text)
    value = m.group(1) if m else text.splitlines()[0] if text else ""
    if not m and value.startswith("{"):
        try:
            obj = json.loads(value)
            value = next((str(v) for v in obj.values()), "") if isinstance(obj, dict) else ""
        except ValueError:
            value = ""
    value = re.sub(r"\s+", " ", value).strip(" .\"'`{}:")
    if not value or len(value) > 60 or value.lower() in ("question type", "question_type", "type"):
        return DEFAULT_TYPE.get(dataset, "multiple-choice")
    return value.lower()


def answer_format(labels: Sequence[str]) -> str:
    """The answer-format sentence: one of the labels, or (no labels: a numeric answer) a number."""
    if not labels:
        return "The answer must end with JSON format: Answer: a number."
    return f"The answer must end with JSON format: Answer: one of options[{','.join(labels)}]."


def frame_question(question: Question, qtype: str) -> str:
    """The question as the paper asks it: type sentence, question and choices, answer-format sentence."""
    given = "question and choices" if question.options else "question"
    return f"Now give you the {qtype} {given}:\n{show_question(question)}\n{answer_format(list(question.options))}"


def question_types(answerer: Answerer, questions: Sequence[Question], generation: Generation) -> dict[str, str]:
    """question id -> type, one cached call per question with the question-type stage's ``generation`` settings (a
    failed call gives the dataset's default type)."""
    reqs = [type_request(q, generation) for q in questions]
    results = answerer.batch(reqs, "question types")
    return {
        q.id: parse_type(r.text if r.ok else None, q.dataset if q.dataset in DEFAULT_TYPE else q.kind)
        for q, r in zip(questions, results)
    }
