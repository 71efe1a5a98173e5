"""The offline engine of the batch-file tests: what `vllm run-batch -i IN -o OUT` does with an OpenAI batch input
file, done by sending each line's request to an OpenAI-compatible server through the openai client.

vLLM itself cannot run here: its wheels (vllm 0.33.0 on PyPI) are built for CUDA GPUs, and even the module holding
run-batch's line models (vllm.entrypoints.launchers.run_batch) imports torch, its engine configuration and their
dependencies at import. The output lines carry the fields of vLLM's ``BatchRequestOutput`` (the OpenAI batch output
format): ``id``, ``custom_id``, ``response`` (``status_code``, ``request_id``, ``body``: the chat completion) and
``error`` (a message, for a request the engine refused, with status 400 and no body, as run-batch writes it).
"""

import json
import uuid
from pathlib import Path

import openai


def run_batch(source: Path, out: Path, base_url: str, fail: set[str] = frozenset()) -> list[dict]:
    """Answer every request of the batch input file ``source`` at ``base_url``; write the output file ``out``; the
    custom_ids in ``fail`` are refused instead. Returns the output lines."""
    client = openai.OpenAI(base_url=base_url, api_key="none")
    rows = []
    for line in Path(source).read_text().splitlines():
        request = json.loads(line)
        assert request["method"] == "POST" and request["url"] == "/v1/chat/completions", request
        if request["custom_id"] in fail:
            response, error = {"status_code": 400, "request_id": f"vllm-batch-{uuid.uuid4().hex}"}, "scripted refusal"
        else:
            body = client.chat.completions.create(**request["body"]).model_dump(mode="json")
            response, error = {"status_code": 200, "request_id": f"vllm-batch-{uuid.uuid4().hex}", "body": body}, None
        rows.append({"id": f"vllm-{uuid.uuid4().hex}", "custom_id": request["custom_id"], "response": response,
                     "error": error})  # fmt: skip
    Path(out).write_text("".join(json.dumps(r) + "\n" for r in rows))
    return rows
