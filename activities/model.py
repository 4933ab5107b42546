"""The model call: Chat Completions with tools through the ``openai`` SDK.

Works with any OpenAI-compatible endpoint (``OPENAI_BASE_URL``). The SDK's own retries are
off: Temporal's retry policy owns retries, so they are visible in history and survive crashes.

Worker side: :class:`ModelActivities` (the ``chat_completion`` activity). Workflow side:
:func:`call_model`, which the run loop and hooks (the summariser) await.
"""

from __future__ import annotations

import asyncio
import json
from collections import OrderedDict
from datetime import timedelta
from typing import Any, Literal

import openai
from openai.types.chat import ChatCompletion
from pydantic import BaseModel, Field
from temporalio import activity, workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ApplicationError

from activities.conversation import ConversationStore
from activities.heartbeat import HEARTBEAT_TIMEOUT, with_heartbeats
from activities.model_errors import TRANSIENT_MODEL_ERROR, classify, describe_endpoint
from activities.model_output import OUTPUT_INVALID_ERROR, account, correction_messages, output_problem, response_format
from activities.model_stream import STREAM_BROKE_ERROR, TokenStream, streamed_completion
from activities.provider_quirks import request_for_model
from core.messages import ChatMessage, ChatRole, ToolCall
from core.model_endpoints import model_endpoint
from core.models import Model
from core.payloads import add_usage
from core.spec import DEFAULT_MODEL_RETRY_TIMEOUT
from core.tools import ToolSpec
from core.wire import CHAT_COMPLETION_ACTIVITY, NON_RETRYABLE_MODEL_ERROR

MODEL_RETRY_POLICY = RetryPolicy(
    initial_interval=timedelta(milliseconds=500),
    backoff_coefficient=2.0,
    maximum_interval=timedelta(seconds=30),
    non_retryable_error_types=[NON_RETRYABLE_MODEL_ERROR],
)


class ModelCallInput(BaseModel):
    """Input of the ``chat_completion`` activity.

    :param model: Model name at the OpenAI-compatible endpoint.
    :param messages: The conversation to send.
    :param tools: Tools the model may call (empty: none).
    :param settings: Extra Chat Completions parameters (temperature, max_tokens, ...).
    :param purpose: ``"agent"`` for the agent's own step, ``"hook"`` for calls made by hooks
        (summaries); token accounting keeps the two apart.
    :param conversation_head: When set, ``messages`` are only the messages after the stored
        conversation this digest names (see activities/conversation.py).
    :param endpoint: None for the worker's own endpoint (``OPENAI_BASE_URL``/``OPENAI_API_KEY``); else an
        environment prefix naming another one: the worker calls ``{endpoint}_OPENAI_BASE_URL`` with
        ``{endpoint}_OPENAI_API_KEY``. Only the name travels; URLs and keys stay on the worker.
    :param step: The agent step this call is (``step_count`` when it began); a marker in history
        that ``agent rewind`` reads. None for hooks' calls and for histories recorded before it.
    :param live: Set when the agent streams tokens: the call is streamed and its text published
        as ``token`` events of this step (activities/model_stream.py).
    :param fallbacks: Models tried in order, within this one call, when ``model`` at ``endpoint``
        (and each fallback before) fails in a way another endpoint may not (``Fallback``).
    :param output_schema: The JSON schema a final answer (a reply without tool calls) must match
        (``Agent(output_type=...)``); asked for as ``response_format`` and checked here.
    """

    model: str
    messages: list[ChatMessage]
    conversation_head: str | None = None
    tools: list[ToolSpec] = Field(default_factory=list)
    settings: dict[str, Any] = Field(default_factory=dict)
    purpose: Literal["agent", "hook"] = "agent"
    endpoint: str | None = None
    step: int | None = None
    live: TokenStream | None = None
    fallbacks: list[Model] = Field(default_factory=list)
    output_schema: dict[str, Any] | None = None

    def choices(self) -> list[Model]:
        """The models this call may try, in order."""
        return [Model(self.model, self.endpoint), *self.fallbacks]


class ModelCallOutput(BaseModel):
    """The model's reply (``meta`` holds ``usage``, ``finish_reason``, ``model``).

    :param usage: Token counts of this call (``prompt_tokens``, ``completion_tokens``, ``total_tokens``).
    :param conversation_head: Digest of the stored conversation, when the worker stores
        conversations; the next call can then send only what comes after it.
    :param conversation_covers_reply: Whether that stored conversation ends with the reply
        (False: it ends just before, as this worker writes the segment while the model call is in
        flight, and the next call sends the reply first). True is what workers before that wrote.
    """

    message: ChatMessage
    usage: dict[str, Any] = Field(default_factory=dict)
    conversation_head: str | None = None
    conversation_covers_reply: bool = True


#: The SDK's own switch (what ``with_raw_response`` sets) for getting the raw response back, so a
#: body that is not a completion can be described by its status, content type and first bytes.
_RAW_RESPONSE: dict[str, Any] = {"headers": {"X-Stainless-Raw-Response": "true"}}
#: Stored conversations whose wire form a worker keeps (one per recently active run).
WIRE_CACHE_SIZE = 256

#: ``ApplicationError.type`` of an answer that is not a chat completion (retried, within the ceiling).
BAD_RESPONSE_ERROR = "ModelBadResponse"


def openai_client_from_env(endpoint: str | None = None) -> openai.AsyncOpenAI:
    """An ``AsyncOpenAI`` client configured by ``OPENAI_API_KEY`` / ``OPENAI_BASE_URL``, SDK retries off.

    :param endpoint: An environment prefix: ``{endpoint}_OPENAI_API_KEY`` / ``{endpoint}_OPENAI_BASE_URL``
        (and ``{endpoint}_OPENAI_TIMEOUT_SECONDS``, else ``OPENAI_TIMEOUT_SECONDS``) instead.
    :raises ApplicationError: Non-retryable, when ``endpoint`` is given and neither of its variables is set.
    """
    prefix = f"{endpoint}_" if endpoint else ""
    config = model_endpoint(endpoint)
    base_url = config.base_url
    api_key = config.api_key.get_secret_value() if config.api_key else None
    if endpoint and not config.configured:
        raise ApplicationError(
            f"The run asks for model endpoint {endpoint!r}, but this worker has neither {prefix}OPENAI_BASE_URL nor "
            f"{prefix}OPENAI_API_KEY set; configure them on every worker of the task queue.",
            type=NON_RETRYABLE_MODEL_ERROR,
            non_retryable=True,
        )
    return openai.AsyncOpenAI(
        api_key=api_key or "scripted-model-needs-no-key",
        base_url=base_url or None,
        max_retries=0,
        timeout=config.timeout_seconds,
    )


def to_openai_messages(messages: list[ChatMessage]) -> list[dict[str, Any]]:
    """Our messages in the Chat Completions wire format (one ``tool`` message per result)."""
    out: list[dict[str, Any]] = []
    for message in messages:
        if message.role == ChatRole.TOOL:
            for result in message.tool_call_results:
                out.append({"role": "tool", "tool_call_id": result.origin.id or "", "content": result.result})
            continue
        entry: dict[str, Any] = {"role": message.role.value, "content": message.text}
        if message.name:
            entry["name"] = message.name
        if message.tool_calls:
            entry["tool_calls"] = [
                {
                    "id": call.id or "",
                    "type": "function",
                    "function": {
                        "name": call.tool_name,
                        "arguments": (call.extra or {}).get("invalid_arguments") or json.dumps(call.arguments),
                    },
                }
                for call in message.tool_calls
            ]
        out.append(entry)
    return out


def to_openai_tools(tools: list[ToolSpec]) -> list[dict[str, Any]]:
    """Tool specs as Chat Completions function tools."""
    return [
        {"type": "function", "function": {"name": t.name, "description": t.description, "parameters": t.parameters}}
        for t in tools
    ]


def _parse_tool_call(raw: dict[str, Any]) -> ToolCall:
    """A model tool call (its wire form); unparsable arguments are kept raw so the run loop can answer with an error."""
    function = raw["function"]
    arguments_text = function.get("arguments") or "{}"
    try:
        arguments = json.loads(arguments_text)
        if not isinstance(arguments, dict):
            raise ValueError("arguments are not a JSON object")
    except ValueError:
        return ToolCall(
            tool_name=function["name"], arguments={}, id=raw.get("id"), extra={"invalid_arguments": arguments_text}
        )
    return ToolCall(tool_name=function["name"], arguments=arguments, id=raw.get("id"))


def _without_none(value: dict[str, Any]) -> dict[str, Any]:
    return {k: _without_none(v) if isinstance(v, dict) else v for k, v in value.items() if v is not None}


def reply_from_completion(completion: dict[str, Any]) -> ModelCallOutput:
    """A Chat Completions response body (parsed JSON) as our reply message and usage, read
    straight from the JSON (building the SDK's ``ChatCompletion`` first cost more than the rest
    of the activity's Python work).

    :raises KeyError, TypeError, IndexError: When the body is not shaped like a chat completion.
    """
    choice = completion["choices"][0]
    message = choice["message"]
    # The whole usage, nested details (prompt_tokens_details, ...) included, as Haystack keeps it.
    usage = _without_none(completion.get("usage") or {})
    meta: dict[str, Any] = {
        "model": completion.get("model"),
        "finish_reason": choice.get("finish_reason"),
        "usage": dict(usage),
    }
    reply = ChatMessage.from_assistant(
        text=message.get("content"),
        tool_calls=[_parse_tool_call(c) for c in message.get("tool_calls") or []],
        meta=meta,
    )
    return ModelCallOutput(message=reply, usage=usage)


def from_openai_response(response: ChatCompletion) -> ModelCallOutput:
    """Turn the SDK's ``ChatCompletion`` object into our reply message and usage (see :func:`reply_from_completion`)."""
    return reply_from_completion(response.model_dump(exclude_none=True))


class ModelActivities:
    """Holds the worker's OpenAI client; ``chat_completion`` is the activity.

    :param client: An ``openai.AsyncOpenAI``; by default one from the environment.
    :param conversations: Where conversations are stored so the workflow can send only new
        messages; by default :meth:`ConversationStore.from_env` (None: whole conversations).
    """

    def __init__(
        self, client: openai.AsyncOpenAI | None = None, conversations: ConversationStore | None | str = "env"
    ) -> None:
        self._client = client
        self._endpoint_clients: dict[str, openai.AsyncOpenAI] = {}
        self.conversations = ConversationStore.from_env() if conversations == "env" else conversations
        # The wire form of stored conversations, by head: a step converts only its new messages.
        self._wire: OrderedDict[str, list[dict[str, Any]]] = OrderedDict()

    @property
    def client(self) -> openai.AsyncOpenAI:
        if self._client is None:
            self._client = openai_client_from_env()
        return self._client

    def client_for(self, endpoint: str | None) -> openai.AsyncOpenAI:
        """The client of ``endpoint`` (None: :attr:`client`), built from its environment on first use."""
        if endpoint is None:
            return self.client
        if endpoint not in self._endpoint_clients:
            self._endpoint_clients[endpoint] = openai_client_from_env(endpoint)
        return self._endpoint_clients[endpoint]

    @activity.defn(name=CHAT_COMPLETION_ACTIVITY)
    async def chat_completion(self, request: ModelCallInput) -> ModelCallOutput:
        """Call the model once.

        :raises ApplicationError: Non-retryable (type ``ModelClientError``) for 400/401/403/404/422,
            naming the endpoint, the model and what to check for 401/403/404; retryable (type
            ``ModelTransientError``), honouring ``Retry-After``, for 429, 5xx and an endpoint that
            cannot be reached; other failures propagate and are retried.
        """
        history = await self._stored_history(request.conversation_head)
        wire = self._wire_of(request.conversation_head, history) + to_openai_messages(request.messages)
        # The body is built once as plain JSON-ready data and posted as is: the SDK's
        # chat.completions.create would walk it again with its recursive request transform, which
        # costs ~30 ms on a 200-message conversation (json.dumps of the same body: under 1 ms).
        body: dict[str, Any] = {"model": request.model, "messages": wire}
        if request.tools:
            body["tools"] = to_openai_tools(request.tools)
        if request.output_schema is not None:
            body["response_format"] = response_format(request.output_schema)
        body.update(request.settings)
        segment = self._start_segment_write(request, history)
        output = await self._checked(request, body, await self._first_answer(request, body))
        if segment is not None:
            # Heartbeats go on while the segment write finishes: it waits for S3 and its retries,
            # and a silent wait past HEARTBEAT_TIMEOUT would retry the whole activity (a second
            # model call).
            output.conversation_head = await with_heartbeats(segment)
            output.conversation_covers_reply = False
            self._remember_wire(output.conversation_head, wire)
        return output

    async def _checked(self, request: ModelCallInput, body: dict[str, Any], output: ModelCallOutput) -> ModelCallOutput:
        """``output``, or the model's corrected answer when a final answer is not the run's
        ``output_type``: the invalid one is sent back once with the validation error (within this
        call, so the history records only the answer kept; the usage of both is counted).

        :raises ApplicationError: Non-retryable (``ModelOutputInvalid``) when the correction is
            invalid too, naming the problem.
        """
        schema = request.output_schema
        if schema is None or (problem := output_problem(output.message, schema)) is None:
            return output
        activity.logger.warning("The final answer does not match output_type; asking once more: %s", problem)
        again_body = {**body, "messages": [*body["messages"], *correction_messages(output.message, problem)]}
        again = await self._first_answer(request, again_body)
        again.usage = add_usage(output.usage, again.usage)
        again.message.meta["usage"] = dict(again.usage)
        if (problem := output_problem(again.message, schema)) is not None:
            raise ApplicationError(
                f"The model's final answer does not match the agent's output_type "
                f"({schema.get('title') or 'a JSON schema'}), even after one correction: {problem}",
                type=OUTPUT_INVALID_ERROR,
                non_retryable=True,
            )
        return again

    async def _first_answer(self, request: ModelCallInput, body: dict[str, Any]) -> ModelCallOutput:
        """The reply of the first model of ``request.choices()`` that answers.

        A failure another endpoint may not have (no connection, a timeout, 429, 5xx, a body that is
        not a completion) moves on to the next model; a non-retryable one (400/401/403/404/422, an
        endpoint this worker does not configure) and a stream broken after its first tokens end
        the call at once. When every model failed,
        the call fails retryably with each one's error, and Temporal retries the whole list.
        """
        choices = request.choices()
        failures: list[str] = []
        for choice in choices:
            attempt = request.model_copy(update={"model": choice.name, "endpoint": choice.endpoint, "fallbacks": []})
            try:
                output = await self._call_once(attempt, request_for_model({**body, "model": choice.name}, choice.name))
            except ApplicationError as err:
                # A stream that broke after its tokens were published is retried as a whole (the
                # watchers see a retry marker), not continued by another model's tokens.
                if err.non_retryable or len(choices) == 1 or err.type == STREAM_BROKE_ERROR:
                    raise
                failures.append(f"{choice.describe()}: {err.message}")
                activity.logger.warning("Model %s failed, trying the next one: %s", choice.describe(), err.message)
                continue
            account(output.usage, output.message, choice)
            if len(choices) > 1 or choice.endpoint:
                output.message.meta["answered_by"] = {"model": choice.name, "endpoint": choice.endpoint}
            if failures:
                output.message.meta["fallback_failures"] = failures
            return output
        raise ApplicationError(
            f"Every model of the fallback failed ({len(failures)}): " + "; ".join(failures),
            type=TRANSIENT_MODEL_ERROR,
        )

    async def _call_once(self, request: ModelCallInput, body: dict[str, Any]) -> ModelCallOutput:
        """One request to ``request.model`` at ``request.endpoint``, bounded by that endpoint's timeout."""
        client = self.client_for(request.endpoint)
        try:
            if request.live is not None:
                completion = await with_heartbeats(streamed_completion(client, body, request.live))
                return from_openai_response(completion)
            raw = await with_heartbeats(
                client.post("/chat/completions", body=body, cast_to=ChatCompletion, options=_RAW_RESPONSE)
            )
        except openai.APIStatusError as exc:
            raise classify(exc, request.model, request.endpoint, client) from exc
        except openai.APIConnectionError as exc:  # timeouts too; retried, but saying which endpoint failed
            raise ApplicationError(
                f"Could not reach the model endpoint {describe_endpoint(client, request.endpoint)} for model "
                f"{request.model!r}: {exc.message} ({exc.__cause__!r}).",
                type=TRANSIENT_MODEL_ERROR,
            ) from exc
        return _parse_completion(raw)

    def _start_segment_write(self, request: ModelCallInput, history: list[ChatMessage]) -> asyncio.Future[str] | None:
        """Store the request's new messages after its head, as a task, while the model call is in
        flight (so S3's latency is not on the step's path); None when this call stores nothing.

        The reply is not in this segment: the next call sends it with its own new messages. The
        activity completes only after the write, so a head in history always names a stored chain.
        """
        if self.conversations is None or request.purpose != "agent" or not request.messages:
            return None
        write = asyncio.ensure_future(self.conversations.extend(request.conversation_head, history, request.messages))
        # A failed model call leaves the write to finish on its own (it is idempotent); retrieve its
        # outcome so a failed write is not reported as never retrieved.
        write.add_done_callback(lambda done: done.cancelled() or done.exception())
        return write

    def _wire_of(self, head: str | None, history: list[ChatMessage]) -> list[dict[str, Any]]:
        if head is None:
            return []
        wire = self._wire.get(head)
        if wire is None:  # another worker stored it, or it left the cache
            wire = to_openai_messages(history)
        else:
            self._wire.move_to_end(head)
        return list(wire)

    def _remember_wire(self, head: str, wire: list[dict[str, Any]]) -> None:
        self._wire[head] = wire
        while len(self._wire) > WIRE_CACHE_SIZE:
            self._wire.popitem(last=False)

    async def _stored_history(self, head: str | None) -> list[ChatMessage]:
        if head is None:
            return []
        if self.conversations is None:
            raise ApplicationError(
                f"The run refers to stored conversation {head[:12]}... but this worker has no conversation store; "
                "give every worker of the task queue the same TEMPORAL_PAYLOADS_BUCKET.",
                type=NON_RETRYABLE_MODEL_ERROR,
                non_retryable=True,
            )
        cached = self.conversations.cached(head)
        if cached is not None:  # the usual case: this worker stored it (no thread hop)
            return cached
        return await with_heartbeats(self.conversations.load(head))


def _parse_completion(raw: Any) -> ModelCallOutput:
    """Our reply from a raw response, or an error that says what came instead.

    :raises ApplicationError: Retryable, type ``ModelBadResponse``, naming the status, the content
        type and the first bytes, when the body is not JSON or not a chat completion (a proxy's
        error page, a truncated body).
    """
    response = raw.http_response
    try:
        return reply_from_completion(json.loads(response.content))
    except Exception as exc:
        content_type = response.headers.get("content-type", "(none)")
        first = response.content[:200]
        raise ApplicationError(
            f"The model endpoint answered HTTP {response.status_code} with {content_type} that is not a chat "
            f"completion ({type(exc).__name__}); it began with {first!r}",
            type=BAD_RESPONSE_ERROR,
        ) from exc


async def call_model(
    request: ModelCallInput, retry_timeout: timedelta = DEFAULT_MODEL_RETRY_TIMEOUT
) -> ModelCallOutput:
    """Workflow side: run ``chat_completion``; transient errors are retried with backoff for at
    most ``retry_timeout`` in all, then the ``ActivityError`` (its cause is the last failure) is raised."""
    return await workflow.execute_activity_method(
        ModelActivities.chat_completion,
        request,
        start_to_close_timeout=min(timedelta(minutes=5), retry_timeout),
        schedule_to_close_timeout=retry_timeout,
        heartbeat_timeout=HEARTBEAT_TIMEOUT,
        retry_policy=MODEL_RETRY_POLICY,
        summary=f"{request.purpose} model call",
    )
