"""Every environment variable olakit reads, in one place (pydantic-settings), and where it keeps files
(platformdirs). Endpoints, keys and machine-specific paths come from here only: never from a notebook, a config or
a sweep file, so a key never lands in a record, the cache or a manifest. Reading the environment never starts a
process (the embedded model starts on the first call that needs it).

| variable | what |
|---|---|
| ``OLAKIT_BASE_URL``, ``_MODEL``, ``_API_KEY`` (or ``OPENAI_API_KEY``) | the endpoint; unset: the embedded model |
| ``OLAKIT_<ROLE>_BASE_URL``, ``_MODEL``, ``_API_KEY`` | another endpoint for one role (ROLES) |
| ``OLAKIT_CACHE_DIR`` | the answer cache's directory (default: the user cache directory's ``llm``) |
| ``OLAKIT_CACHE_URL`` | a Redis answer cache (``redis://HOST:6379/0``) shared by several machines |
| ``OLAKIT_DATA_DIR`` | the data directory (default: the places olakit.data.loaders names) |
| ``OLAKIT_DATA_BASE_URL`` | a mirror ``olakit data fetch`` downloads from |
| ``OLAKIT_EMBEDDED_MODEL`` | ``0.5b`` (default) or ``1.5b`` |
| ``OLAKIT_EMBEDDED_URL`` | an embedded server already running elsewhere, to call instead of the machine's |
| ``OLAKIT_EMBEDDED_LOG`` | the log of the machine's embedded server this process starts (set by ``olakit sweep``) |
| ``OLAKIT_EMBEDDED_THREADS`` | llama.cpp threads of the embedded server (unset: all cores); the embedder's torch cap |
| ``OLAKIT_MODEL_DIR``, ``OLAKIT_EMBED_CACHE_DIR``, ``OLAKIT_INDEX_DIR`` | joined model files, embeddings, indexes |
| ``OLAKIT_TEMPLATES_DIR`` | a folder of extra thinking templates |
| ``OLAKIT_TOOLS_DIR`` | a folder of extra tools (olakit.tools) |
| ``OLAKIT_NOTEBOOK`` | the notebook a kernel runs (set by ``olakit notebook`` and ``olakit sweep``) |

An ``OLAKIT_`` variable that is none of these (a misspelling such as ``OLAKIT_REVIEWR_MODEL``) gets one warning.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

from pydantic import Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

log = logging.getLogger("olakit")
ROLES = ("answerer", "reviewer", "judge", "direct")
"""Roles that may each have an endpoint of their own (the review loop's answerer and reviewer, a pairwise judge,
and the direct answer it is compared with)."""
_warned: set[str] = set()


class EndpointVars(BaseSettings):
    """``OLAKIT_BASE_URL``, ``OLAKIT_MODEL``, ``OLAKIT_API_KEY`` (or those of one role)."""

    model_config = SettingsConfigDict(env_prefix="OLAKIT_", extra="ignore", frozen=True)
    base_url: str = ""
    model: str = ""
    api_key: SecretStr = SecretStr("")


class Environment(BaseSettings):
    """Everything else olakit reads from the environment."""

    model_config = SettingsConfigDict(env_prefix="OLAKIT_", extra="ignore", frozen=True)
    cache_dir: Path | None = None
    cache_url: str = ""
    data_dir: Path | None = None
    data_base_url: str = ""
    embedded_model: str = "0.5b"
    embedded_url: str = ""
    embedded_log: Path | None = None
    embedded_threads: int | None = Field(None, ge=1)
    """llama.cpp threads of an embedded server this process starts (unset: ``embedded_threads()``), and the sentence
    embedder's most torch threads (unset: torch's own count; olakit.retrieval.embedder)."""
    model_dir: Path | None = None
    embed_cache_dir: Path | None = None
    index_dir: Path | None = None
    templates_dir: Path | None = None
    tools_dir: Path | None = None
    """A folder of the user's own tools (olakit.tools), beside the built-ins."""
    notebook: Path | None = None
    """The notebook a kernel runs, set by ``olakit notebook`` and ``olakit sweep`` (olakit.notebook.inputs digests its
    source); unset in JupyterLab, where a notebook is olakit's own by its name."""
    batch: bool = False
    """Answer through the provider's Batch API (olakit.llm.batch): ``olakit run --batch``, a sweep's ``batch: true``."""
    batch_poll: float = Field(10.0, gt=0)
    """Seconds between two looks at a waiting batch."""


PASSED_ON = ("cache_dir", "cache_url", "data_dir", "embedded_model", "embedded_url", "batch")
"""The Environment settings a sweep's task takes to its worker (the others name this machine's own folders)."""


def endpoint_names() -> list[str]:
    """The endpoint variables: ``OLAKIT_BASE_URL``, ``_MODEL``, ``_API_KEY``, then each role's."""
    fields = [f.upper() for f in EndpointVars.model_fields]
    return [f"OLAKIT_{f}" for f in fields] + [f"OLAKIT_{r.upper()}_{f}" for r in ROLES for f in fields]


def known_names() -> set[str]:
    return {f"OLAKIT_{f.upper()}" for f in Environment.model_fields} | set(endpoint_names())


def _warn_unknown() -> None:
    for name in sorted(n for n in os.environ if n.startswith("OLAKIT_") and n not in known_names()):
        if name not in _warned:
            _warned.add(name)
            log.warning("%s is not an olakit variable (ignored); known: %s", name, ", ".join(sorted(known_names())))


def environment() -> Environment:
    """The environment as it is now (a test or a notebook may change it): read again whenever an ``OLAKIT_``
    variable has changed since the last call (pydantic-settings takes 8 ms a read; a notebook asks often)."""
    now = tuple(sorted((k, v) for k, v in os.environ.items() if k.upper().startswith("OLAKIT_")))
    if _last[0] != now:
        _warn_unknown()
        _last[:] = [now, Environment()]
    return _last[1]


_last: list = [None, None]
"""(the OLAKIT_ variables environment() last read, the Environment it made)."""


def endpoint_vars(role: str | None = None) -> tuple[EndpointVars, str]:
    """(the endpoint variables, their prefix): those of ``role`` when its ``OLAKIT_<ROLE>_BASE_URL`` is set, else
    the general ones (prefix ``OLAKIT_``); the key falls back to ``OPENAI_API_KEY``."""
    _warn_unknown()
    prefix = f"OLAKIT_{role.upper()}_" if role and os.environ.get(f"OLAKIT_{role.upper()}_BASE_URL") else "OLAKIT_"
    found = EndpointVars(_env_prefix=prefix)
    if not found.api_key.get_secret_value() and os.environ.get("OPENAI_API_KEY"):
        found = found.model_copy(update={"api_key": SecretStr(os.environ["OPENAI_API_KEY"])})
    return found, prefix


def embedded_threads(cores: int | None = None) -> int:
    """llama.cpp threads of an embedded server this process starts: ``$OLAKIT_EMBEDDED_THREADS``, else every core
    (``cores``, default: ``os.cpu_count()``, olakit's one count of them). Every core is fastest on a machine that does
    nothing else (``make paper`` on 2 cores: 184 s, against 325 s with one thread); llama.cpp's threads wait for each
    other by spinning, so beside other work a server on every core falls off a cliff, and a busy machine sets fewer
    (docs/llm.md has the figures)."""
    return environment().embedded_threads or max(1, cores or os.cpu_count() or 1)


def index_dir() -> Path:
    """Where olakit keeps what it derives from data files and can derive again (retrieval indexes, the recorded
    outputs read as records): ``$OLAKIT_INDEX_DIR``, else the user cache directory's ``indexes``."""
    return environment().index_dir or user_dir("indexes")


def user_dir(kind: str) -> Path:
    """A folder of olakit's in the user's cache directory (``~/.cache/olakit/<kind>`` on Linux; platformdirs), or
    for ``data`` in the user's data directory (``~/.local/share/olakit/data``)."""
    import platformdirs

    root = platformdirs.user_data_path("olakit") if kind == "data" else platformdirs.user_cache_path("olakit")
    return root / kind
