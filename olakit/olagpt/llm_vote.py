"""The LLM vote (paper 3.7): the model reads the templates' answers with their rationales and picks the most
consistent one; and its audit (the same vote with the candidates in a seeded shuffled order measures position
bias; overrides of a correct regex majority and rescues of a wrong one are counted).
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from olakit.answering.extract import get_extractor
from olakit.answering.second_stage import Answer
from olakit.answering.vote import GROUP, answer_matrix
from olakit.data.records import answer_record
from olakit.errors import DataError
from olakit.generation import Generation
from olakit.llm import Request
from olakit.llm.answerer import Answerer
from olakit.names import LLM_VOTE, LLM_VOTE_SHUFFLED
from olakit.olagpt.intent import DEFAULT_TYPE, show_question
from olakit.rng import keyed_rng
from olakit.types import OlaGPTRecord

LLM_VOTE_INTRO = "Several solvers answered the same multiple-choice question. Their reasoning and answers follow."
LLM_VOTE_ASK = (
    "Choose the most consistent answer among the solvers' answers. Give a short rationale, then end "
    "with JSON format: Answer: {answer}."
)
RATIONALE_CHARS = 700
"""Each candidate's rationale is cut to its last RATIONALE_CHARS characters (the conclusion is at the end)."""


PAPER_VOTE_TEMPLATE = """Answer the following questions as best you can. 
You have been given the question and the following possible answers by different tools, please select the most consistent one as the final answer:

{answers}

Use the following format:

Question: the input question you must answer
Final Answer: the final answer to the input question. The answer's format must end with json format: {{Answer: one of options[{labels}]}}

Begin!

Question: {question}
"""  # noqa: W291, E501 (the authors' text, trailing space included: agents/llm_vote_agent.py)
"""The authors' LLM-vote prompt (setting llm_vote_prompt="paper"); the candidates are their full outputs."""


def paper_vote_prompt(question, qtype: str, candidates, names) -> str:
    """The authors' LLM vote: one ``Observation[tool]: output`` per candidate, their question framing, the answer
    format at the end of the instructions."""
    answers = "".join(f"\nObservation[{name}]: {text or ''}" for name, (text, _) in zip(names, candidates))
    choices = "".join(f"{label}){text}\n" for label, text in question.options.items())
    framed = "\n".join(
        [
            f"Now give you the {qtype} question and choices:",
            "",
            f"\nquestion: {question.text}",
            f"\nchoices: \n{choices}",
        ]
    )
    return PAPER_VOTE_TEMPLATE.format(answers=answers, labels=",".join(question.options), question=framed)


def llm_vote_prompt(question, qtype: str, candidates, names=None, variant: str = "olakit") -> str:
    """The LLM vote prompt for ``candidates`` ``[(raw_output, extracted_label_or_None), ...]`` in the order shown
    (``names``: their templates). ``variant``: ``"paper"`` (the authors' wording and full outputs) or ``"olakit"``
    (the question, each candidate's extracted answer and the end of its rationale, the ask)."""
    if variant == "paper":
        return paper_vote_prompt(question, qtype, candidates, names or [f"tool{i}" for i in range(1, 99)])
    if variant != "olakit":
        raise DataError(f"LLM vote prompt {variant!r}: use 'paper' or 'olakit'")
    blocks = []
    for i, (text, label) in enumerate(candidates, 1):
        text = (text or "").strip()
        if len(text) > RATIONALE_CHARS:
            text = "..." + text[-RATIONALE_CHARS:]
        blocks.append(f"Solver {i} (answer: {label or 'unclear'}):\n{text}")
    return (
        f"{LLM_VOTE_INTRO}\n\nThe {qtype} question:\n{show_question(question)}\n\n"
        + "\n\n".join(blocks)
        + "\n\n"
        + LLM_VOTE_ASK.format(
            answer=f"one of options[{','.join(question.options)}]" if question.options else "a number"
        )
    )


def candidate_order(n: int, seed: int, key: str, shuffled: bool) -> list[int]:
    """Template order, or a seeded permutation (the position-bias audit)."""
    order = list(range(n))
    if shuffled:
        rng = keyed_rng(seed, "llm-vote", key)
        while n > 1 and order == list(range(n)):
            order = [int(i) for i in rng.permutation(n)]
    return order


def llm_vote_records(
    answerer: Answerer,
    df: pd.DataFrame,
    questions: dict,
    templates: Sequence[str],
    *,
    audit: bool,
    seed: int,
    generation: Generation,
    extractor: str,
    prompt: str,
) -> list:
    """LLM-vote records for every question and condition of ``df`` that has all ``templates`` (sample 0):
    ``llm_vote`` (candidates in template order) and, with ``audit``, ``llm_vote_shuffled`` (shuffled by ``seed``),
    each call with the llm_vote stage's ``generation`` settings.
    ``prompt``: the prompt variant (setting llm_vote_prompt: ``paper`` or ``olakit``).

    Works on live and recorded records alike (e.g. the OlaGPT gpt-3.5 outputs voted by another model).
    ``questions``: question_id -> Question.
    """
    extract = get_extractor(extractor)
    wide, _ = answer_matrix(df[df["sample"] == 0], templates)
    base = df[df["template"].isin(templates) & (df["sample"] == 0)].set_index([*GROUP, "template"])
    cells = []
    for key in wide.index:
        cell = dict(zip(GROUP, key))
        q = questions[cell["question_id"]]
        rows = [base.loc[(*key, t)] for t in templates]
        qtype = next((r["question_type"] for r in rows if r["question_type"]), DEFAULT_TYPE.get(q.dataset, "math"))
        cands = [(r["raw_output"], r["extracted"]) for r in rows]
        for label, shuffled in ((LLM_VOTE, False), (LLM_VOTE_SHUFFLED, True)):
            if shuffled and not audit:
                continue
            order = candidate_order(len(cands), seed, "|".join(map(str, key)), shuffled)
            text = llm_vote_prompt(q, qtype, [cands[i] for i in order], [templates[i] for i in order], prompt)
            cells.append((cell, q, qtype, label, text, Request.make(text, **generation.params())))
    results = answerer.batch([c[-1] for c in cells], "LLM votes")
    out = []
    for (cell, q, qtype, label, text, _), res in zip(cells, results):
        if not res.ok:
            continue
        out.append(
            answer_record(
                OlaGPTRecord,
                q,
                text,
                res,
                Answer(extract(res.text, list(q.options)), 1),
                model=answerer.endpoint.model,
                template=label,
                notes_strategy=cell["notes_strategy"],
                n_notes=int(cell["n_notes"]),
                question_type=qtype,
            )
        )
    return out
