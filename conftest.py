"""The commands of README.md and docs/*.md as tests (tests/docs_blocks.py says how each block runs, and why Sybil).
This file only collects them: it sets nothing a user lacks (the blocks run in subprocesses with a user's
environment), and tests/conftest.py's fixtures do not reach them. It also puts the longest test files first (LONGEST).
"""

from sybil import Sybil
from sybil.integration.pytest import SybilItem
from sybil.parsers.markdown import CodeBlockParser

from tests import docs_blocks

pytest_collect_file = Sybil(
    parsers=[
        CodeBlockParser("bash", docs_blocks.run_block),
        CodeBlockParser("python", docs_blocks.run_block),
        CodeBlockParser("text", docs_blocks.check_output),
    ],
    patterns=["README.md", "docs/*.md"],
    setup=docs_blocks.setup,
    teardown=docs_blocks.teardown,
    fixtures=["tmp_path_factory"],  # for the run's one folder of the sentence embedder's vectors (docs_blocks)
).pytest()


LONGEST = (
    "tests/test_e2e_jupyterlab.py",
    "tests/test_docs.py",
    "tests/test_cluster.py",
    "README.md",
    "tests/test_notebook.py",
    "tests/test_wheel.py",
    "tests/test_geek.py",
    "docs/batch.md",
    "tests/test_sweep.py",
    "tests/test_findings.py",
    "tests/test_llm.py",
    "tests/test_run.py",
    "tests/test_batch.py",
    "docs/methods.md",
)
"""The files whose tests take longest together (each 50 to 250 s in a profiled run of the suite at dda2cd1), longest
first, collected ahead of the others. pytest-xdist hands a file to the next free worker in the collection's order
when told `--no-loadscope-reorder` (the Makefile): these start first and the short files fill in at the end, so the
workers finish together. By default it starts the files with the most tests first, which put the longest files, of
two or three tests, last (test_wheel.py's two, 126 s, began 584 s into a run of 710)."""


def pytest_collection_modifyitems(config, items):
    """A block's tier, from its ``docs-test`` comment: ``slow`` (and ``real-model``) in the slow tier. Then the
    LONGEST files first, each file's tests in their own order."""
    import pytest

    rank = {name: i for i, name in enumerate(LONGEST)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::")[0], len(LONGEST)))

    for item in items:
        if isinstance(item, SybilItem):
            said = docs_blocks.directive(item.example)
            if "slow" in said or "real-model" in said:
                item.add_marker(pytest.mark.slow)
            if "real-model" in said:
                item.add_marker(pytest.mark.real_model)
