"""One name per thing: the method, vote, bound and strategy names used in code, records, CSVs, figures and
data/paper_tables.json. Import them from here; never spell them out elsewhere.

``REGEX_VOTE -> "regex_vote"``; ``STRATEGIES[0] -> "zero-shot"``.
"""

TURBO = "turbo"
"""The plain prompt without a thinking template (the paper's gpt-3.5-turbo baseline; template file turbo.json)."""
SC = "SC"
"""Self-consistency: k samples of one template at temperature > 0, majority vote."""
AUTO_COT = "auto_cot"
"""Auto-CoT (clustered zero-shot-CoT demonstrations)."""
AUTO_COT_STRATEGY = "random"
"""The column Table 3 reports Auto-CoT in (the paper's): its demonstrations are not notes retrieved for the question."""
REGEX_VOTE = "regex_vote"
"""The majority of the templates' extracted answers (the paper's "vote by regex")."""
LLM_VOTE = "llm_vote"
"""The LLM vote (paper 3.7): the model picks among the templates' answers, candidates in template order."""
LLM_VOTE_SHUFFLED = "llm_vote_shuffled"
"""The same LLM vote with the candidates in a seeded shuffled order (the position-bias audit)."""
REGEX_UPPER = "regex_upper"
"""Table 8's upper bound of the regex vote (templates right >= the largest wrong group, and > 0)."""
REGEX_LOWER = "regex_lower"
"""Table 8's lower bound of the regex vote (templates right > the largest wrong group)."""

DIY = "DIY"
"""Integrative (DIY) thinking: a template the model composes for each question from the existing ones."""
CHOSEN_VOTE = "chosen_vote"
"""The regex vote over the k templates the controller chose for a question."""
VERIFIED_VOTE = "verified_vote"
"""The regex vote over the templates' answers after verification thinking."""
VERIFIED_SUFFIX = "+V"
"""A template's answers after verification thinking are named ``<template>+V``."""

BASELINES = (TURBO,)
"""Templates that are baselines, left out of Table 7's template statistics and Fig 7's template dots."""
NON_TEMPLATES = (SC, AUTO_COT, LLM_VOTE, LLM_VOTE_SHUFFLED, DIY, CHOSEN_VOTE, VERIFIED_VOTE)
"""Methods in records that are not voting templates (nor are the verified ``<template>+V``: see voting_templates)."""
VOTES = (REGEX_VOTE, LLM_VOTE)
"""Votes a live run can compute."""

COMPARED = "compared"
"""The ``notes_strategy`` of a comparison's records: their condition is their ``template``."""
IMPORTED = "imported"
"""The ``notes_strategy`` of imported records (their condition is the run, their ``template``)."""

ZERO_SHOT = "zero-shot"
STRATEGIES = (ZERO_SHOT, "random", "retrieval", "combine")
"""The note strategies in the paper's order."""


def voting_templates(names) -> list[str]:
    """The names that are thinking templates to vote over: not another method, not a verified answer.

    >>> voting_templates(["ST", "SC", "ST+V", "DT"])
    ['ST', 'DT']
    """
    return [n for n in dict.fromkeys(names) if n not in NON_TEMPLATES and not n.endswith(VERIFIED_SUFFIX)]


def plural(n: int, noun: str) -> str:
    """``n`` and the noun, in the plural unless n is 1: for the terminal's summaries.

    >>> plural(1, "question"), plural(1234, "call"), plural(2, "batch")
    ('1 question', '1,234 calls', '2 batches')
    """
    ending = "es" if noun.endswith(("s", "x", "ch", "sh")) else "s"
    return f"{n:,} {noun}{'' if n == 1 else ending}"


def setting_label(setting: str) -> str:
    """A corpus setting as tables and figures show it: the oracle marked as the upper bound it is.

    >>> setting_label("oracle"), setting_label("open")
    ('oracle (upper bound)', 'open')
    """
    return f"{setting} (upper bound)" if setting == "oracle" else setting


RECORDED_READER = "olagpt"
"""How the OlaGPT authors read their own outputs (their regex): the extractor of recorded runs unless another is
named."""

BUILTIN_DATASETS = ("aqua", "ekar_zh", "strategyqa")
"""The datasets olakit reads by name (AQuA-RAT, E-KAR Chinese, StrategyQA); any other is named by its file."""
DATASET_FORMATS = {".jsonl": "jsonl", ".json": "json", ".csv": "csv", ".parquet": "parquet"}
"""A dataset file's suffix -> its format."""
SANDBOX_STATUSES = ("ok", "error", "timeout", "memory", "output", "blocked")
"""How a program's run in the sandbox ends (olakit.tools.sandbox.Execution.status)."""
TOOL_STATUSES = (*SANDBOX_STATUSES, "unknown tool", "malformed", "step cap")
"""How a tool call in a trace ended: a tool's (``ok``, ``error``) or the sandbox's, or the tool loop's own; the
analysis of traces reads them without importing the tools (olakit.analysis.tools)."""


def natural_order(ids) -> list[str]:
    """Ids sorted with their numbers as numbers (``test-2`` before ``test-10``), as a person reads them.

    >>> natural_order(["q10", "q2", "b", "q1"])
    ['b', 'q1', 'q2', 'q10']
    """
    import re

    def key(text):
        return [(0, int(p), "") if p.isdigit() else (1, 0, p) for p in re.split(r"(\d+)", str(text))]

    return sorted(ids, key=key)
