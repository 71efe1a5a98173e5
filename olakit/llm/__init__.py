"""The LLM layer: the cached, concurrent, retrying client (client), its request and cache key (request), the
answer cache with in-flight claims (cache), retry rules (retry), response parsing (response), endpoint
configuration and prices (endpoint), usage summaries (usage), the embedded model (local) and the misbehaving
test server (loopback).

``from olakit.llm import LLM, Request`` is the usual entry point.
"""

from olakit.llm.answerer import Answerer, Counted, ScriptedModel
from olakit.llm.client import LLM
from olakit.llm.endpoint import PRICE_DATES, PRICES, Endpoint, LLMError, register_price
from olakit.llm.request import Reply, Request, cache_key

__all__ = [
    "LLM",
    "PRICES",
    "PRICE_DATES",
    "Answerer",
    "Counted",
    "Endpoint",
    "LLMError",
    "Request",
    "Reply",
    "ScriptedModel",
    "cache_key",
    "register_price",
]
