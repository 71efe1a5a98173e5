"""What an OlaGPT run will call, counted from its config before any call (``olakit run`` prints it first): per
stage, the calls and the token limit of each, and whether the count is exact or a ceiling (calls that depend on
the replies: second answer stages, verification's revisions, Auto-CoT's demo tries, the rounds of a tool loop: at
most ``tool_steps + 1`` calls an answer).

``planned_calls(OlaGPTConfig(n_questions=10, baselines=("SC",)))`` -> ``[Stage("question types", 10, 24, True),
Stage("answers", 200, 256, True), Stage("SC samples", 200, 256, True)]`` (10 questions, 5 templates, 4 cells: the
zero-shot one and 3 note strategies at 3 notes; SC takes 5 samples per cell).
"""

from __future__ import annotations

from olakit.data.loaders import questions_of
from olakit.method import Stage
from olakit.names import AUTO_COT, AUTO_COT_STRATEGY, LLM_VOTE, REGEX_VOTE, SC, ZERO_SHOT
from olakit.olagpt.config import OlaGPTConfig
from olakit.olagpt.tool_use import uses_tools
from olakit.templates import templates_for
from olakit.tools.loop import max_calls
from olakit.tools.program import CHOICE_TOKENS


def planned_calls(config: OlaGPTConfig) -> list[Stage]:
    """The stages of a run of ``config`` with their calls (see the module docstring); stages with none left out."""
    cfg = config
    questions = cfg.pick(questions_of(cfg))
    n = len(questions)
    templates = templates_for(cfg.dataset, cfg.templates)
    n_templates = len(templates)
    cells = sum(1 if s == ZERO_SHOT else len(set(cfg.n_notes)) for s in cfg.strategies)
    answering = cfg.choose_k if cfg.choose_k and not cfg.choice_comparison else n_templates
    tooled = min(answering, sum(uses_tools(cfg, t) for t in templates))  # with choose_k: at most that many
    answers = n * cells * answering
    sc = templates_for(cfg.dataset, [cfg.sc_template])[0] if SC in cfg.baselines else None
    sc_tooled = sc is not None and uses_tools(cfg, sc)
    sc_samples = n * cells * cfg.sc_k if SC in cfg.baselines else 0
    limit = {stage: cfg.for_stage(stage).max_tokens for stage in cfg.stage_defaults()}  # each stage's token limit
    stages = [
        Stage("question types", n, limit["question_type"], True),
        Stage("template choice", n if cfg.choose_k else 0, limit["choose"], True),
        Stage("answers", n * cells * (answering - tooled), limit["template"], True),
        Stage("answers with tools", n * cells * tooled * max_calls(cfg.tool_steps), limit["template"], False),
        Stage("SC samples", 0 if sc_tooled else sc_samples, limit["sc"], True),
        Stage("SC samples with tools", sc_samples * max_calls(cfg.tool_steps) if sc_tooled else 0, limit["sc"], False),
    ]
    programs = sum(t.answer == "program" for t in templates)
    sc_programs = sc is not None and sc.answer == "program"
    if cfg.program_choice == "model" and any(q.kind == "choice" for q in questions):
        mapped = n * cells * programs + (sc_samples if sc_programs else 0)
        stages.append(Stage("program options", mapped, CHOICE_TOKENS, False))  # one per program that gives a value
    if AUTO_COT in cfg.baselines:
        demos = 0 if cfg.autocot_demos == "published" else cfg.autocot_k * cfg.autocot_tries
        stages += [Stage("Auto-CoT demos", demos, limit["auto_cot"], False),
                   Stage("Auto-CoT", n, limit["auto_cot"], True)]  # fmt: skip
    one_answer = (
        answers + (n * cells * cfg.sc_k if SC in cfg.baselines else 0) + (n if AUTO_COT in cfg.baselines else 0)
    )
    stages.append(
        Stage("second-stage answers", one_answer if cfg.answer_stages == 2 else 0, cfg.second_stage_tokens, False)
    )
    if cfg.diy:
        stages += [
            Stage("DIY templates", n, limit["diy"], True),
            Stage("DIY answers", n * cells, limit["template"], True),
        ]
    if cfg.verify:
        stages += [
            Stage("verification reviews", answers, limit["verify"], False),
            Stage("verification revisions", answers, limit["verify"], False),
        ]
    votes = n * cells * (2 if cfg.audit else 1) if LLM_VOTE in cfg.votes else 0
    stages.append(Stage("LLM votes", votes, limit["llm_vote"], True))
    if cfg.replicate:  # its slice's every stage again
        again = planned_calls(cfg.replace(n_questions=min(cfg.replicate, n), replicate=0))
        stages += [Stage(f"replicate: {s.name}", s.calls, s.max_tokens, s.exact) for s in again]
    return [s for s in stages if s.calls]


def planned_cells(config: OlaGPTConfig) -> list[str]:
    """The cells a run of ``config`` will have in its paired tests, as its tables name them (``METHOD | STRATEGY``:
    each template, the regex vote, SC, the LLM vote under each note strategy; Auto-CoT under ``random``), known
    before any call: a registered comparison must name two of them.

    >>> planned_cells(OlaGPTConfig(templates=["ST"], strategies=["zero-shot"]))
    ['ST | zero-shot', 'regex_vote | zero-shot']
    """
    cfg = config
    methods = [t.name for t in templates_for(cfg.dataset, cfg.templates)] + [REGEX_VOTE]
    methods += [SC] if SC in cfg.baselines else []
    methods += [LLM_VOTE] if LLM_VOTE in cfg.votes else []
    cells = [f"{m} | {s}" for m in methods for s in cfg.strategies]
    return cells + ([f"{AUTO_COT} | {AUTO_COT_STRATEGY}"] if AUTO_COT in cfg.baselines else [])
