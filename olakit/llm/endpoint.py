"""Where calls go, and what they cost. The endpoint comes from the environment only (olakit.env: OLAKIT_BASE_URL,
OLAKIT_MODEL, OLAKIT_API_KEY, and OLAKIT_<ROLE>_* for one role), so a key never lands in a notebook, the cache or a
record. With no OLAKIT_BASE_URL the endpoint is the embedded model, which starts on the first call, not when the
endpoint is read.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from olakit.env import ROLES, endpoint_vars
from olakit.errors import OlakitError
from olakit.llm.daemon import shared_server
from olakit.llm.local import embedded_spec


def _read_prices() -> tuple[dict[str, tuple[float, float]], dict[str, str]]:
    from importlib.resources import files

    doc = json.loads(files("olakit.resources").joinpath("prices.json").read_text(encoding="utf-8"))
    models = doc["models"]
    return {m: (p["prompt"], p["completion"]) for m, p in models.items()}, {m: p["as_of"] for m, p in models.items()}


PRICES, PRICE_DATES = _read_prices()
"""USD per million tokens, (prompt, completion), by model, from olakit/resources/prices.json; PRICE_DATES: the date
of the published price list each comes from (register_price adds or changes one: its date is then "registered")."""
LOCAL_PRICE = (0.0, 0.0)
"""Price of the embedded model (it runs on your machine)."""


def register_price(model: str, prompt_per_mtok: float, completion_per_mtok: float) -> None:
    """Add or change a model's price (USD per million tokens)."""
    PRICES[model] = (float(prompt_per_mtok), float(completion_per_mtok))
    PRICE_DATES[model] = "registered"


class LLMError(OlakitError):
    """An LLM endpoint is misconfigured or unusable."""


@dataclass(frozen=True)
class Endpoint:
    """Where calls go. ``identity`` (not the key) is what the cache key sees."""

    base_url: str
    """The endpoint's URL; empty for the embedded model until it has started (``url()`` starts it)."""
    model: str
    api_key: str = field(default="", repr=False)
    identity: str = ""
    local: bool = False

    def __post_init__(self):
        if not self.identity:
            object.__setattr__(self, "identity", f"{self.base_url.rstrip('/')}|{self.model}")

    @classmethod
    def from_env(cls, role: str | None = None) -> Endpoint:
        """The configured endpoint, or the embedded model when OLAKIT_BASE_URL is unset (not started here).

        A ``role`` (ROLES: answerer, reviewer, judge, direct) takes its own endpoint from ``OLAKIT_<ROLE>_BASE_URL``,
        ``OLAKIT_<ROLE>_MODEL`` and ``OLAKIT_<ROLE>_API_KEY`` when its base URL is set, else the configured one."""
        if role is not None and role not in ROLES:
            raise LLMError(f"unknown role {role!r}; known: {', '.join(ROLES)}")
        found, prefix = endpoint_vars(role)
        base_url = found.base_url.strip()
        if base_url:
            model = found.model.strip()
            if not model:
                raise LLMError(f"{prefix}BASE_URL is set but {prefix}MODEL is not; set the model name it serves")
            return cls(base_url=base_url, model=model, api_key=found.api_key.get_secret_value())
        return cls.embedded()

    @classmethod
    def embedded(cls) -> Endpoint:
        """The embedded model, served on 127.0.0.1 by the machine's one embedded server (olakit.llm.daemon), found or
        started on the first call; identified by its weights, since the port changes between runs."""
        spec = embedded_spec()
        return cls(
            base_url="",
            model=spec["name"],
            local=True,
            identity=f"olakit-embedded|{spec['sha256'][:16]}|{spec['name']}",
        )

    def url(self) -> str:
        """The base URL to call: the embedded model's finds or starts the machine's server when needed."""
        return self.base_url or shared_server().base_url

    def price(self) -> tuple[float, float] | None:
        """USD per million (prompt, completion) tokens, or None when the model has no known price."""
        return LOCAL_PRICE if self.local else PRICES.get(self.model)

    def cost(self, prompt_tokens: int | None, completion_tokens: int | None) -> float | None:
        """USD for one call; None when the price or a token count is unknown.

        >>> Endpoint("http://x/v1", "gpt-4o").cost(1_000_000, 0)
        2.5
        """
        price = self.price()
        if price is None or prompt_tokens is None or completion_tokens is None:
            return None
        return (prompt_tokens * price[0] + completion_tokens * price[1]) / 1e6
