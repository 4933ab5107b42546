"""The differences between OpenAI-compatible providers that the model call handles, in one place.

Everything else in a request goes to the endpoint as the agent's ``model_settings`` give it
(docs/models.md, "Real providers").

- OpenAI's reasoning models (``o1``, ``o3``, ``o4``, ``gpt-5`` and their variants) refuse
  ``max_tokens`` and take ``max_completion_tokens``: a ``max_tokens`` setting is renamed for them.
- Usage of a streamed call comes only when asked for (``stream_options.include_usage``); the
  streamed call asks (activities/model_stream.py), and an endpoint that ignores it reports none.
"""

from __future__ import annotations

import re
from typing import Any

#: Models that take ``max_completion_tokens`` instead of ``max_tokens`` (a provider prefix such as
#: ``openai/`` is allowed before the name).
_COMPLETION_TOKENS_MODELS = re.compile(r"^(?:[\w.-]+/)?(?:o\d|gpt-5)")


def request_for_model(body: dict[str, Any], model: str) -> dict[str, Any]:
    """``body`` as ``model`` takes it (a copy when anything changes).

    :param body: The Chat Completions request body, ``model`` included.
    :param model: The model it goes to.
    """
    if "max_tokens" in body and "max_completion_tokens" not in body and _COMPLETION_TOKENS_MODELS.match(model):
        body = dict(body)
        body["max_completion_tokens"] = body.pop("max_tokens")
    return body
