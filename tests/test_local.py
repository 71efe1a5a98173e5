"""The real embedded model (Qwen2.5-Coder-0.5B via xllamacpp on 127.0.0.1), with short max_tokens."""

import pytest

from olakit.llm import LLM, Endpoint, Request
from olakit.llm.local import DEFAULT_MODEL, LocalServer, default_model_path

pytestmark = pytest.mark.real_model


@pytest.fixture(scope="module")
def server():
    with LocalServer(n_parallel=4, n_ctx=4096) as srv:
        yield srv


def endpoint(srv):
    return Endpoint(
        base_url=srv.base_url,
        model=srv.model,
        local=True,
        identity=f"olakit-embedded|{DEFAULT_MODEL['sha256'][:16]}|{srv.model}",
    )


def test_weights_are_joined_and_verified():
    from olakit.data.files import sha256_file as _sha256

    path = default_model_path()
    assert path.stat().st_size == 491_400_064
    assert _sha256(path) == DEFAULT_MODEL["sha256"]


def test_one_chat_completion_then_a_cache_hit(server, tmp_path):
    llm = LLM(endpoint(server), cache_dir=tmp_path, progress=False)
    r = llm.complete("What is 2+3? Reply with the number only.", max_tokens=8, temperature=0)
    assert r.ok and r.text.strip() and not r.cached
    assert r.prompt_tokens > 5 and 0 < r.completion_tokens <= 8 and r.cost == 0.0 and r.latency > 0
    again = LLM(endpoint(server), cache_dir=tmp_path, progress=False).complete(
        "What is 2+3? Reply with the number only.", max_tokens=8, temperature=0
    )
    assert again.cached and again.text == r.text and again.latency is None


def test_seeded_sampling_differs_across_samples_and_repeats(server, tmp_path):
    reqs = [Request.make("Name a colour.", sample=s, max_tokens=6, temperature=1.0, seed=11) for s in range(4)]
    # one at a time: requests decoded together in llama.cpp's parallel slots share a batch, which can change a
    # token of a sampled answer (README, Samples); served alone, a seed gives the same sample
    first = LLM(endpoint(server), cache_dir=tmp_path / "a", concurrency=1, progress=False).batch(reqs)
    second = LLM(endpoint(server), cache_dir=tmp_path / "b", concurrency=1, progress=False).batch(reqs)
    assert all(r.ok for r in first + second)
    assert [r.text for r in first] == [r.text for r in second]  # same seeds, same samples
    assert len({r.text for r in first}) >= 2  # different samples differ


def test_server_side_n_choices(server):
    import openai

    client = openai.OpenAI(base_url=server.base_url, api_key="none", timeout=120, max_retries=0)  # fails, never hangs
    resp = client.chat.completions.create(
        model=server.model,
        messages=[{"role": "user", "content": "Say hi."}],
        n=3,
        seed=5,
        temperature=1.0,
        max_tokens=5,
    )
    assert len(resp.choices) == 3 and all(c.message.content for c in resp.choices)


def test_close_stops_the_server_for_real():
    import socket
    import urllib.parse

    srv = LocalServer(n_parallel=1, n_ctx=1024)
    url = urllib.parse.urlsplit(srv.base_url)
    socket.create_connection((url.hostname, url.port), timeout=5).close()  # it answers while running
    srv.close()
    with pytest.raises(OSError):
        socket.create_connection((url.hostname, url.port), timeout=5)
    srv.close()  # a second close is harmless


def test_calls_queued_behind_a_busy_local_server_wait_instead_of_failing(tmp_path):
    """Two commands sharing one embedded server queue calls beyond its slots; a call that times out while the
    server works through others is not a failed attempt (old code: max_attempts=1 failed every call but the
    first). One slot, three calls of ~40 tokens at ~22 tokens/s, a 1 s timeout."""
    with LocalServer(n_parallel=1, n_ctx=2048) as srv:
        llm = LLM(endpoint(srv), cache_dir=tmp_path, concurrency=3, max_attempts=1, timeout=1.0, progress=False)
        reqs = [Request.make(f"Count from 1 to 30, test {i}.", max_tokens=40, temperature=0) for i in range(3)]
        got = llm.batch(reqs)
    assert [r.error for r in got] == [None, None, None]
    assert sum(r.latency for r in got) > 3 * 1.0  # they did wait past the timeout: queued, one slot
    assert all(r.attempts == 1 for r in got)  # a wait is not an attempt
