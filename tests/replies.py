"""Reply functions for scripted endpoints (``OLAKIT_BASE_URL=scripted://tests.replies:NAME``): a command, a notebook
or a sweep reaches them exactly as it reaches a real endpoint, with no server. Tests about HTTP use the loopback
server instead."""

import re


def steady(prompt, request):
    """A deterministic answerer: a question type, a review, a vote or an answer, by what the prompt asks."""
    if "question type" in prompt.lower() or "type of the question" in prompt.lower():
        return "math word problem"
    if prompt.startswith("Here is the answer to the question"):
        return "Accuracy: 4\nCompleteness: 4\nClarity: 4\nDepth: 4\nOverall Score: 4"
    if "So the answer is yes" in prompt or "(yes or no)" in prompt:
        return "Step by step: the facts say so. So the answer is yes."
    return 'Step by step: the second option fits. {"Answer": "B"}'


def fail(prompt, request):
    """Every call fails, as an endpoint that answers 500 to everything."""
    raise RuntimeError("500 internal error (scripted)")


def fail_second_stage(prompt, request):
    """First answers without a readable answer; every second-stage call (the answer trigger) fails."""
    messages = request["messages"]
    if messages[-1]["role"] == "assistant":  # the second stage continues the model's own turn
        raise RuntimeError("500 internal error (scripted second stage)")
    return "I am thinking about it but state nothing final"


def albany(prompt, req):
    """GEEK on the Albany question (tests/test_geek.py PARAGRAPHS). Select: decompose, retrieve, decompose,
    self-answer, final (read off the state); the rest by prompt kind."""
    if "Reply with the letter of the next action only." in prompt:
        facts, pending = prompt.count("\nFact "), "Current sub-question" in prompt
        return {(0, False): "A", (0, True): "B", (1, False): "A", (1, True): "C"}.get((facts, pending), "D")
    if prompt.rstrip().endswith("Sub-question:"):
        first = "\nSub-question 1:" not in prompt.split("Break a yes/no question")[1].split("\n\n", 3)[-1]
        seed = req.get("seed")
        if seed is not None:  # a sampled branch candidate
            return f"What is the population of Albany {'Georgia' if req.get('seed') % 2 == 0 else 'New York'}?"
        return "What is the population of Albany, Georgia?" if first else "What is the population of Albany, New York?"
    if "Answer the question using only the paragraphs below" in prompt:
        return "Albany, GA has around 75,000 people."
    if prompt.rstrip().endswith("Answer:"):
        return "Albany, NY has almost 100,000 people."
    return "Both are below 100,000. So the answer is no."


def review_text(score):
    if score is None:
        return "Decent answer; I would probably rate it well."  # no score line: unparseable
    return (
        f"Feedback.\nAccuracy: {score}\nCompleteness: {score}\nClarity: {score}\nDepth: {score}\nOverall Score: {score}"
    )


def graded(prompt, req):
    """A scripted model for graded runs: the first answer A, every review 3, every revision B, the direct answer C."""
    if "[Answer 1]" in prompt:
        return "Answer 1 is better."
    if prompt.startswith("Here is the answer to the question"):
        return review_text(3)
    if "Please improve the original answer" in prompt:
        return "Improved. Answer: B"
    if "Think about this question" in prompt:
        return "First try. Answer: A"
    if prompt.startswith("Please break down"):
        return "1. x\n2. y\nTotal Steps: 2"
    return "Direct. Answer: C"


def cut_off_then_second_stage(prompt, req):
    """Every first answer cut off mid-sentence (finish "length"); the answer trigger's continuation gives (B)."""
    if prompt.startswith("As a mathematics professor"):
        return '{"task_type": "arithmetic"}'
    if prompt.rstrip().endswith("the answer is"):
        return " (B).", "stop"
    return "Let us compute step by step the", "length"


def geek_notebook(prompt, req):
    """The GEEK ablation notebook's core model: albany, plus the OlaGPT cross-method row's prompts. A judge prompt
    here would mean the judge role reached the core model's endpoint."""
    if "Which chain decomposes the question better" in prompt:
        return "the core model judged itself"
    if "As a professor of general knowledge" in prompt:
        return '{"task_type": "comparison"}'
    if "one of options[yes,no]" in prompt:
        return "So the Answer: no"
    return albany(prompt, req)


def first_shown(prompt, req):
    """A judge with full position bias: always the answer shown first."""
    return "Answer 1 is better."


def idiom(prompt, req):
    """`olakit review --ask` on a model like the embedded one: an outline without a count, reviews without scores, a
    "final answer" that talks about the review."""
    if prompt.startswith("Please break down the following problem"):
        return "1. Meaning\n2. Origin\n3. Example"
    if prompt.startswith("Here is the answer to the question"):
        return "It is a good answer overall."
    if "Please improve the original answer" in prompt:
        return "The original answer is clear but could add the origin of the phrase."
    if "Think about this question" in prompt:
        return "It means accepting consequences."
    return "To face the music is to accept the unpleasant results of your actions."


def numbers(prompt, request):
    """Answers every numeric question with 18 (GSM8K's first gold), and a question type when asked; the review
    loop's reviews score 4."""
    if "judge the type" in prompt:
        return '{"task_type": "arithmetic"}'
    if prompt.startswith("Here is the answer to the question"):
        return "Accuracy: 4\nCompleteness: 4\nClarity: 4\nDepth: 4\nOverall Score: 4"
    if prompt.startswith("Please break down"):
        return "1. Count\nTotal Steps: 1"
    return 'Step by step: 16 - 3 - 4 = 9 eggs, 9 * 2 = 18. {"Answer": "$18"}'


def last_letters(prompt, request):
    """A last-letters task answered as a weak model does: wrong for Daniel's names, right (in other case and with a
    full stop) for Kelly's; reviews score 4."""
    if prompt.startswith("Here is the answer to the question"):
        return review_text(4)
    if prompt.startswith("Please break down"):
        return "1. Take each last letter\nTotal Steps: 1"
    return "The last letters are joined.\nAnswer: WEtj" if "Daniel" in prompt else "Joined.\nAnswer: YoAo."


def grader(prompt, request):
    """A judge that grades a free-text answer right when it shares a word of five letters or more with the
    reference."""
    reference = prompt.split("Reference answer:", 1)[1].split("Answer to grade:", 1)[0].lower().split()
    graded = prompt.split("Answer to grade:", 1)[1].split("Does the answer to grade", 1)[0].lower()
    return "Yes, it says the same." if any(len(w) >= 5 and w in graded for w in reference) else "No, it does not."


TOOL_INPUTS = {"calculator": "(16 - 3 - 4) * 2", "python": "ans = (16 - 3 - 4) * 2"}
"""What the docs model gives each built-in tool on a tool loop's first turn."""


def _own_methods(prompt):
    """docs/methods.md's two methods: Plan-and-Solve's answer triggers, Least-to-Most's decomposition and steps."""
    end = prompt.rstrip()
    if end.endswith("the answer (arabic numerals) is"):
        return " 18."
    if end.endswith("the answer is") and "Therefore, among" in end[-60:]:
        return " (B)."
    if end.endswith("Questions to answer first:"):
        return "1. How many are left?\n2. What are they worth?"
    if "Answer each question in turn" in prompt and end.endswith("A:"):
        if "End with 'The answer is X'" in end[-120:]:
            return "The answer is (B)." if "Answer Choices:" in prompt else "The answer is 18."
        return "Working it out from the problem: 9."
    return None


def docs(prompt, request):
    """The model behind every command of README.md and docs/ in the suite (tests/test_docs.py): a plausible answer
    to whatever the prompt asks, by its kind, so each door runs to its end as a user sees it: question types, letters,
    numbers, yes/no, GEEK's actions, the review loop's outlines and scores, votes, judges, notes."""
    low = prompt.lower()
    if "question type" in low or "type of the question" in low or "judge the type" in low:
        return '{"task_type": "math word problem"}'
    method = _own_methods(prompt)  # docs/methods.md's Plan-and-Solve and Least-to-Most
    if method is not None:
        return method
    if "Write a Python program that computes the answer" in prompt:  # PoT
        return "```python\neggs = 16 - 3 - 4\nans = eggs * 2\n```"
    messages = request.get("messages", [])
    if messages and not any(m["role"] == "assistant" for m in messages):  # a tool loop's first turn
        if request.get("tools"):
            name = request["tools"][0]["function"]["name"]
            return {"tool_calls": [{"name": name, "arguments": {"input": TOOL_INPUTS.get(name, "2 + 2")}}]}
        if "Action: TOOL[INPUT]" in messages[0]["content"]:
            name = re.search(r"^- (\w+)\[", messages[0]["content"], re.M)[1]
            return f"I will check it.\nAction: {name}[{TOOL_INPUTS.get(name, '2 + 2')}]"
    if messages and (messages[-1]["role"] == "tool" or prompt.startswith(("Observation:", "No more tools"))):
        low = messages[0]["content"].lower()  # a tool loop's answer: as the question asks it
    if "Reply with the letter of the next action only." in prompt:
        return albany(prompt, request)
    if (
        prompt.rstrip().endswith(("Sub-question:", "Answer:"))
        or "Answer the question using only the paragraphs" in prompt
    ):
        return albany(prompt, request)
    if prompt.startswith("Please break down"):
        return "1. Read the question\n2. Work it out\nTotal Steps: 2"
    if prompt.startswith("Here is the answer to the question"):
        return review_text(4)
    if "[Answer 1]" in prompt or "Which chain decomposes the question better" in prompt:
        return "Answer 1 is better."
    if "Reference answer:" in prompt:
        return "Yes, it says the same."
    if "You are an expert teacher" in prompt:
        return '{"error_reason": "a slip in the arithmetic", "explanation": "Work it out step by step."}'
    if "yes" in low and "no" in low and ("yes/no" in low or "one of options[yes,no]" in low or "(yes or no)" in low):
        return "Step by step: the facts say so. So the answer is yes."
    if "answer: n" in low or "a number" in low:
        return "Step by step: 16 - 3 - 4 = 9, and 9 * 2 = 18. Answer: 18"
    return 'Step by step: the second option fits. {"Answer": "B"}'


def active_learning(prompt, request):
    """active_learning.ipynb's endpoint: every answer B, except a self-correction retry with the second hint, which
    answers A; the teacher and the refiner reply with a JSON note."""
    if "question type" in prompt.lower() or "type of the question" in prompt.lower():
        return "math word problem"
    if prompt.startswith("You are an expert teacher") or prompt.startswith("An expert drafted"):
        return '{"error_reason": "a slip in the arithmetic", "explanation": "work it through: the answer follows"}'
    if "Earlier answers to this question" in prompt:
        return "Checked again: Answer: A" if "check each step" in prompt else "Still: Answer: B"
    return "Step by step. Answer: B"


EKAR_MARKS = {"AT": "For the problem of analogical reasoning", "DT": "can be disassembled into multiple sub-questions",
              "DST": "Disassemble the following complex problems", "PT": "make a detailed plan",
              "ST": "Let's think step by step."}  # fmt: skip
"""Each E-KAR template's text, as its prompt carries it (turbo: none)."""


def ekar_rule(template: str, i: int, gold: str, notes: bool) -> str:
    """The answer ``ekar_known`` gives: by template, validation position ``i``, the gold and whether notes were
    shown (tests/test_notebook.py works every table cell out from these rules by hand)."""
    after = "ABCD"[("ABCD".index(gold) + 1) % 4]
    rules = {"AT": gold, "DT": gold if i % 2 == 0 else after, "DST": "A", "PT": gold if notes else "B",
             "ST": gold if i % 3 == 0 else "C", "turbo": (gold if i % 4 == 0 else "D") if notes else "D"}  # fmt: skip
    return rules[template]


def ekar_known(prompt, request):
    """E-KAR with known answers: a validation question is answered by ekar_rule (its gold read from the data file),
    any other (the train pool) with A; question types are "analogy question"."""
    import json

    from olakit.data.loaders import resolve_data_dir

    if "question type" in prompt.lower() or "type of the question" in prompt.lower():
        return "analogy question"
    asked = prompt.rsplit("Now give you the", 1)[-1]
    data = resolve_data_dir()
    rows = [json.loads(line) for line in (data / "ekar_chinese" / "validation.json").read_text().splitlines() if line]
    found = [(i, r) for i, r in enumerate(rows) if f"question: {r['question']}\n" in asked]
    if not found:
        return 'Step by step. {"Answer": "A"}'
    i, row = found[0]
    template = next((t for t, mark in EKAR_MARKS.items() if mark in prompt), "turbo")
    notes = "Here are some similar questions" in prompt
    return f'Step by step. {{"Answer": "{ekar_rule(template, i, row["answerKey"], notes)}"}}'
