"""The commands of README.md and docs/*.md as tests (tests/docs_blocks.py says how each block runs, and why Sybil).
This file only collects them: it sets nothing a user lacks (the blocks run in subprocesses with a user's
environment), and tests/conftest.py's fixtures do not reach them."""

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


def pytest_collection_modifyitems(config, items):
    """A block's tier, from its ``docs-test`` comment: ``slow`` (and ``real-model``) in the slow tier."""
    import pytest

    for item in items:
        if isinstance(item, SybilItem):
            said = docs_blocks.directive(item.example)
            if "slow" in said or "real-model" in said:
                item.add_marker(pytest.mark.slow)
            if "real-model" in said:
                item.add_marker(pytest.mark.real_model)
