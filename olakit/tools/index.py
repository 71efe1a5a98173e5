"""The tools index (seed 000, §3.1: "we build an index for the tool library and dynamically retrieve the relevant
tools for each template"): the tools' names, descriptions and inputs as a corpus, searched with the kit's retrievers
(olakit.retrieval.retrievers: ``bm25`` or ``dense``) by a template's text and a question.

    index = ToolIndex(load_tools().values())
    [t.name for t in index.top("Let's think step by step. What is 17% of 2,300?", k=1)]    # ['calculator']
"""

from __future__ import annotations

from collections.abc import Iterable

from olakit.errors import DataError
from olakit.retrieval.corpus import Corpus
from olakit.retrieval.retrievers import make_retriever
from olakit.tools import Tool


def tool_corpus(tools: Iterable[Tool]) -> Corpus:
    """One paragraph per tool: its name as the title, its description and input as the text."""
    tools = list(tools)
    if not tools:
        raise DataError("the tools index needs at least one tool")
    return Corpus(
        name="tools",
        ids=[t.name for t in tools],
        titles=[t.name for t in tools],
        texts=[f"{t.description} Input: {t.input}" for t in tools],
    )


class ToolIndex:
    """The tools, indexed with ``retriever`` (its index kept on disk under the corpus's digest, as every corpus)."""

    def __init__(self, tools: Iterable[Tool], retriever: str = "bm25"):
        self.tools = list(tools)
        self.retriever = make_retriever(retriever, tool_corpus(self.tools))

    def top(self, query: str, k: int = 1) -> list[Tool]:
        """The ``k`` tools whose descriptions best match ``query`` (best first; fewer when the library is smaller;
        a query with no searchable word gets the first ``k`` tools in name order)."""
        k = min(k, len(self.tools))
        try:
            hits = self.retriever.search(query, k)
        except DataError:
            return self.tools[:k]
        return [self.tools[i] for i, _ in hits]
