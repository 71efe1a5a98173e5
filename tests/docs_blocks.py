"""Every command block of README.md and docs/*.md runs as a test, as a user types it (conftest.py wires this module
into pytest through Sybil).

Why Sybil: it is the kept tool that reads Markdown fenced blocks into pytest items with the file and line of each,
runs them in document order with a namespace per document, and takes an evaluator of one's own, so a block runs
the way a user runs it: in a subprocess, not in the test process. (pytest-codeblocks runs bash blocks in the test
process's working directory and environment; mktestdocs and phmdoctest test Python only.)

A block runs:
- in a subprocess (bash for ``bash`` blocks, the venv's python for ``python`` ones), in a fresh temporary working
  directory outside the repository, one per document and shared by its blocks in order (a user follows a page top
  to bottom in one shell);
- with the user's environment: no MPLBACKEND, no OLAKIT_ variable but one (below), a fresh HOME, the venv's bin first on
  PATH (``source .venv/bin/activate``); one exception, the sentence embedder's vectors (``~/.cache/olakit/embeddings``,
  keyed by the embedder's version and each text's sha256): the pages share them with every test of the run, as one
  user reading them in turn does (``run_folder``'s, where tests/conftest.py points OLAKIT_EMBED_CACHE_DIR, across
  the xdist workers), so the StrategyQA facts are embedded once a run (by the first test or page that needs them:
  the cold path still runs, and tests/test_embedder.py runs it on purpose), not once a page (30-40 s each on 2 cores);
- with the suite's OLAKIT_EMBEDDED_THREADS, the one OLAKIT_ variable kept (``make test`` sets 1: its workers keep the
  cores busy, which a user's machine does not, and the embedded server's and the sentence embedder's threads spin
  beside busy cores; docs/llm.md);
- with one change: the model, swapped for a scripted endpoint through the OLAKIT_ variables
  (``scripted://tests.replies:docs``; PYTHONPATH names the repository so that the reply function imports); a
  ``real-model`` block keeps the embedded model.

What a block needs is said in an HTML comment just before it, ``<!-- docs-test: ... -->``, parts joined by ``;``:
- ``slow``: minutes of work, or the embedded model: it runs in the slow tier;
- ``real-model``: it runs on the embedded model (no scripted endpoint), in the slow tier;
- ``loopback``: it needs a provider's API beyond chat completions (the Batch API): the model is the loopback server
  (olakit.llm.loopback, with the batch endpoints) answering with the same reply function, on 127.0.0.1;
- ``fails "MESSAGE"``: it must exit non-zero and print MESSAGE;
- ``not-run "REASON"``: it is not run here, for REASON (tests/test_docs.py keeps that list short and says why);
- ``output`` (before a ``text`` block): the block is what the command block just before it printed, and is checked
  against that output, line by line (trailing spaces aside): output shown in the docs is never out of date.
"""

from __future__ import annotations

import contextlib
import difflib
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DIRECTIVE = re.compile(r"<!--\s*docs-test:\s*(.*?)\s*-->", re.S)
FENCE = re.compile(r"^\s*(`{3,}|~{3,})", re.M)
PART = re.compile(r'([a-z][a-z-]*)(?:\s+"([^"]*)")?')
TIMEOUT = 600
SERVERS = ("0.0.0.0", "redis-server", "dask scheduler", "dask worker", "jupyter lab", "vllm serve", "olakit serve")
"""What a block run here must not start: servers, above all one listening beyond 127.0.0.1."""


def directive(example) -> dict:
    """The parts of the ``docs-test`` comment just before the example's block (between the block before it and
    it): {"slow": True, "fails": "MESSAGE", "not-run": "REASON", "real-model": True}."""
    text = example.document.text[: example.start]
    fences = list(FENCE.finditer(text))
    since = fences[-1].end() if fences else 0
    found = DIRECTIVE.findall(text[since:])
    return {name: text or True for name, text in PART.findall(found[-1])} if found else {}


def environment(home: Path, real_model: bool = False) -> dict[str, str]:
    """A user's environment for a block (module docstring)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OLAKIT_", "PYTEST_")) and k != "MPLBACKEND"}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["VIRTUAL_ENV"] = str(Path(sys.executable).parent.parent)
    env["HOME"] = str(home)
    for name in ("XDG_CACHE_HOME", "XDG_DATA_HOME", "XDG_CONFIG_HOME"):
        env.pop(name, None)
    env["PYTHONPATH"] = str(REPO)
    if "OLAKIT_EMBEDDED_THREADS" in os.environ:  # the machine's load as the suite says it (make test)
        env["OLAKIT_EMBEDDED_THREADS"] = os.environ["OLAKIT_EMBEDDED_THREADS"]
    if real_model:  # the joined model file a user who has run it once has; the server is this HOME's own
        from olakit.llm.local import model_dir

        env["OLAKIT_MODEL_DIR"] = str(model_dir())
    else:
        env["OLAKIT_BASE_URL"] = "scripted://tests.replies:docs"
        env["OLAKIT_MODEL"] = "scripted-docs"
    return env


def setup(namespace: dict) -> None:
    """A document's working directory and HOME, fresh and outside the repository."""
    folder = Path(tempfile.mkdtemp(prefix="olakit-docs-"))
    (folder / "home").mkdir()
    (folder / "work").mkdir()
    namespace["_folder"] = folder


def run_folder(tmp_path_factory) -> Path:
    """The whole run's temporary folder: under pytest-xdist, every worker's basetemp is a folder of the run's. The
    indexes and the sentence embedder's vectors are kept there (tests/conftest.py), so they are built once a run, not
    once a worker (both are written whole or not at all: a file renamed into place, diskcache's SQLite)."""
    basetemp = tmp_path_factory.getbasetemp()
    return basetemp.parent if os.environ.get("PYTEST_XDIST_WORKER") else basetemp


def share_embeddings(home: Path, tmp_path_factory) -> None:
    """HOME's ``~/.cache/olakit/embeddings``: the run's one folder of them (module docstring), the tests' too."""
    link = home / ".cache" / "olakit" / "embeddings"
    link.parent.mkdir(parents=True, exist_ok=True)
    if not link.is_symlink():
        shared = run_folder(tmp_path_factory) / "embeddings"
        shared.mkdir(parents=True, exist_ok=True)
        link.symlink_to(shared, target_is_directory=True)


def teardown(namespace: dict) -> None:
    shutil.rmtree(namespace.get("_folder", ""), ignore_errors=True)


def run_block(example) -> None:
    """Run one bash or python block as the module docstring says; AssertionError with its output when it does not
    do what its directive says."""
    import pytest

    said = directive(example)
    if "not-run" in said:
        pytest.skip(f"not run here: {said['not-run']}")
    folder = example.namespace["_folder"]
    language = example.region.lexemes["arguments"].split()[0]
    source = example.parsed
    servers = [w for w in SERVERS if w in source]
    assert not servers, (
        f"{Path(example.path).name} line {example.line}: a block that starts {servers} is never run "
        "here (it would listen beyond 127.0.0.1): mark it not-run with the test that covers it"
    )
    if language == "python":
        script = folder / "work" / f"_block_{example.line}.py"
        script.write_text(source)
        argv = [sys.executable, str(script)]
    else:
        argv = ["bash", "-e", "-o", "pipefail", "-c", source]
    share_embeddings(folder / "home", example.namespace["tmp_path_factory"])
    env = environment(folder / "home", real_model="real-model" in said)
    with contextlib.ExitStack() as stack:
        if "loopback" in said:
            from olakit.llm.loopback import Loopback
            from tests.replies import docs

            srv = stack.enter_context(Loopback(reply=docs))
            env |= {"OLAKIT_BASE_URL": srv.base_url, "OLAKIT_MODEL": "gpt-4o-mini", "OLAKIT_BATCH_POLL": "0.05"}
        done = subprocess.run(argv, cwd=folder / "work", env=env, capture_output=True, text=True, timeout=TIMEOUT)
    output = done.stdout + done.stderr
    where = f"{Path(example.path).name} line {example.line}"
    if "fails" in said:
        assert done.returncode != 0, f"{where}: meant to fail, it exited 0:\n{output[-3000:]}"
        assert said["fails"] in output, f"{where}: its error does not say {said['fails']!r}:\n{output[-3000:]}"
        return
    assert done.returncode == 0, f"{where}: exit {done.returncode}:\n{output[-4000:]}"
    example.namespace["_printed"] = (where, done.stdout)


def check_output(example) -> None:
    """A ``text`` block marked ``output``: the lines the command block before it printed (module docstring); other
    ``text`` blocks are prose and are not checked."""
    if "output" not in directive(example):
        return
    where, printed = example.namespace.get("_printed", ("", None))
    assert printed is not None, f"{Path(example.path).name} line {example.line}: no command block ran before it"
    shown = [line.rstrip() for line in example.parsed.strip("\n").splitlines()]
    got = [line.rstrip() for line in printed.strip("\n").splitlines()]
    assert shown == got, (
        f"{Path(example.path).name} line {example.line}: the output shown is not what {where} printed:\n"
        + "\n".join(difflib.unified_diff(shown, got, "shown", "printed", lineterm=""))
    )
