"""Paragraphs to retrieve from (Corpus): GEEK's knowledge corpora (olakit.retrieval.knowledge loads them), the tools
index's tool descriptions (olakit.tools.index)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

from olakit.errors import DataError
from olakit.names import setting_label


@dataclass
class Corpus:
    """Paragraphs (ids, titles, texts), the setting, and which question each paragraph belongs to (built-in)."""

    name: str
    ids: list[str]
    titles: list[str]
    texts: list[str]
    setting: str = "oracle"
    owner: list[str] = field(default_factory=list)
    """Per paragraph, the question id whose annotated fact it is ("" for a user's corpus)."""

    def __post_init__(self):
        if not self.ids:
            raise DataError(f"corpus {self.name!r} is empty")
        if not self.owner:
            self.owner = [""] * len(self.ids)

    def __len__(self) -> int:
        return len(self.ids)

    @property
    def label(self) -> str:
        """``name:setting``, with the oracle marked as the upper bound it is."""
        return f"{self.name}:{setting_label(self.setting)}"

    def digest(self) -> str:
        """sha256 of the paragraphs (what an index cached on disk belongs to)."""
        h = hashlib.sha256()
        for i, t, x in zip(self.ids, self.titles, self.texts):
            h.update(f"{i}\x1f{t}\x1f{x}\x1e".encode())
        return h.hexdigest()

    def excluded_for(self, question_id: str) -> set[int]:
        """Paragraph positions a question may not retrieve: its own facts in the open setting."""
        if self.setting != "open":
            return set()
        return {i for i, owner in enumerate(self.owner) if owner == question_id}
