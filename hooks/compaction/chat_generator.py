"""``ChatGeneratorSpec``: which model a hook's own model call goes to, as serialisable data.

Haystack hands a summariser a live Chat Generator (``OpenAIChatGenerator(model=...,
generation_kwargs=...)``). Here the call is made by the worker's ``chat_completion`` activity, so
the summariser holds only what that activity needs: the model, its generation parameters, and
which endpoint to reach. The spec travels in the workflow input like every other setting, and
names the endpoint's configuration instead of holding it, so no key or URL enters history.

Endpoints
---------
``endpoint=None`` is the worker's own endpoint (``OPENAI_BASE_URL``/``OPENAI_API_KEY``), the one the
agent's calls use. ``endpoint="SUMMARY"`` names another one: the worker reads
``SUMMARY_OPENAI_BASE_URL`` and ``SUMMARY_OPENAI_API_KEY``. The name travels to the activity in
``ModelCallInput.endpoint``.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from activities.model import ModelCallInput
from core.messages import ChatMessage
from core.model_endpoints import ENDPOINT_NAME as _ENDPOINT_NAME  # upper-case words joined by single underscores
from core.serialization import default_from_dict, default_to_dict

#: Parameters the ``chat_completion`` activity sets itself; a spec may not override them.
RESERVED_GENERATION_KWARGS = frozenset({"model", "messages", "tools", "stream"})

#: The ``openai`` SDK's per-request options. The activity posts ``settings`` as the request body, so of
#: these only ``extra_body`` has a meaning there: its entries are merged into the body, as the SDK does.
_REQUEST_OPTIONS = frozenset({"extra_headers", "extra_query", "extra_body", "timeout"})

_MAX_ENDPOINT_LENGTH = 64


def _refuse_reserved(keys: Any, where: str) -> None:
    reserved = sorted(RESERVED_GENERATION_KWARGS.intersection(keys))
    if reserved:
        raise ValueError(
            f"{where} may not set {', '.join(reserved)}: the model activity sets them itself "
            "(the model is the spec's `model`; messages and tools come from the caller; replies are not streamed)."
        )


def _check_generation_kwargs(generation_kwargs: Any) -> dict[str, Any]:
    if generation_kwargs is None:
        return {}
    if not isinstance(generation_kwargs, dict) or not all(isinstance(k, str) for k in generation_kwargs):
        raise ValueError(f"`generation_kwargs` must be a dict with string keys, got {generation_kwargs!r}.")
    _refuse_reserved(generation_kwargs, "`generation_kwargs`")
    options = sorted((_REQUEST_OPTIONS - {"extra_body"}).intersection(generation_kwargs))
    if options:
        raise ValueError(
            f"`generation_kwargs` may not set {', '.join(options)}: the model activity sends the request itself "
            "(its timeout is OPENAI_TIMEOUT_SECONDS on the worker); give request body parameters only."
        )
    extra_body = generation_kwargs.get("extra_body", {})
    if not isinstance(extra_body, dict) or not all(isinstance(k, str) for k in extra_body):
        raise ValueError(f"`extra_body` must be a dict with string keys, got {extra_body!r}.")
    _refuse_reserved(extra_body, "`extra_body`")
    try:
        json.dumps(generation_kwargs, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise ValueError(
            f"`generation_kwargs` must be JSON-serialisable (it is recorded in the run's history): {exc}."
        ) from exc
    return dict(generation_kwargs)


def _check_endpoint(endpoint: Any) -> str | None:
    if endpoint is None:
        return None
    if (
        not isinstance(endpoint, str)
        or len(endpoint) > _MAX_ENDPOINT_LENGTH
        or _ENDPOINT_NAME.fullmatch(endpoint) is None
    ):
        raise ValueError(
            f"`endpoint` must name an environment prefix in upper case (letters, digits, single underscores, "
            f"at most {_MAX_ENDPOINT_LENGTH} characters), such as 'SUMMARY' for SUMMARY_OPENAI_BASE_URL and "
            f"SUMMARY_OPENAI_API_KEY; got {endpoint!r}. Use None for the worker's own endpoint."
        )
    return endpoint


class ChatGeneratorSpec:
    """The model a hook calls through the worker's model activity (Haystack's ``chat_generator``, as data).

    :param model: The model's name at the endpoint.
    :param generation_kwargs: Extra Chat Completions parameters (``temperature``, ``max_tokens``, ...),
        sent in the request body as they are (as ``Agent(model_settings=...)`` are), so a server's own
        parameters may go at the top level or, as with Haystack's ``OpenAIChatGenerator``, in
        ``extra_body``, whose entries are merged into the body. JSON only: they are recorded in history.
    :param endpoint: None for the worker's own endpoint (``OPENAI_BASE_URL``/``OPENAI_API_KEY``), or an
        environment prefix such as ``"SUMMARY"``: the worker then reads ``SUMMARY_OPENAI_BASE_URL``
        and ``SUMMARY_OPENAI_API_KEY``. Keys and URLs stay on the worker; only the name travels.
    :raises ValueError: If ``model`` is empty; ``generation_kwargs`` is not a dict, or it (or its
        ``extra_body``) sets a parameter the activity owns (``model``, ``messages``, ``tools``,
        ``stream``), sets an SDK request option the activity cannot honour (``extra_headers``,
        ``extra_query``, ``timeout``) or holds a value that is not JSON; or ``endpoint`` is not an
        upper-case environment prefix.
    """

    def __init__(
        self, model: str, *, generation_kwargs: dict[str, Any] | None = None, endpoint: str | None = None
    ) -> None:
        if not isinstance(model, str) or not model.strip():
            raise ValueError(f"`model` must name the model at the endpoint, got {model!r}.")
        self.model = model
        self.generation_kwargs = _check_generation_kwargs(generation_kwargs)
        self.endpoint = _check_endpoint(endpoint)

    def settings(self) -> dict[str, Any]:
        """What goes into the request body besides model and messages: ``generation_kwargs``, with
        ``extra_body``'s entries merged in (they win, as in the ``openai`` SDK)."""
        settings = {k: v for k, v in self.generation_kwargs.items() if k != "extra_body"}
        settings.update(self.generation_kwargs.get("extra_body", {}))
        return copy.deepcopy(settings)

    def request(self, messages: list[ChatMessage]) -> ModelCallInput:
        """The ``chat_completion`` activity's input for a hook's call with ``messages`` (no tools)."""
        return ModelCallInput(
            model=self.model, messages=messages, settings=self.settings(), purpose="hook", endpoint=self.endpoint
        )

    def to_dict(self) -> dict[str, Any]:
        """Serialise the spec."""
        return default_to_dict(
            self, model=self.model, generation_kwargs=dict(self.generation_kwargs), endpoint=self.endpoint
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ChatGeneratorSpec:
        """Rebuild the spec from :meth:`to_dict`'s output.

        :raises ValueError: As the constructor.
        """
        return default_from_dict(cls, data)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ChatGeneratorSpec):
            return NotImplemented
        return type(self) is type(other) and self.to_dict() == other.to_dict()

    def __hash__(self) -> int:
        return hash((type(self), self.model, self.endpoint))

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(model={self.model!r}, generation_kwargs={self.generation_kwargs!r}, "
            f"endpoint={self.endpoint!r})"
        )
