"""Reply functions for scripted endpoints (``OLAKIT_BASE_URL=scripted://tests.replies:NAME``): a command, a notebook
or a sweep reaches them exactly as it reaches a real endpoint, with no server. Tests about HTTP use the loopback
server instead."""


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
