"""The model call streamed (``Agent(stream_tokens=True)``, DESIGN.md "Live").

The ``chat_completion`` activity asks the endpoint for ``stream=True`` (with usage in the last
chunk), publishes the reply's text to the run's event stream as ``token`` events while it arrives,
and folds the chunks back into the same ``ChatCompletion`` a non-streamed call returns, so the
reply recorded in history is identical (message, usage, finish reason).

Text deltas are published in batches (:class:`TokenPublisher`): the first at once (time to first
token), later ones at most every ``AGENT_TOKEN_BATCH_MS`` milliseconds, each batch one ``token``
event sent by one Signal through ``temporalio.contrib.workflow_streams``. A stream that breaks
mid-way fails the attempt (retryable); the next attempt opens with a ``model_retry`` event and
its tokens carry the new attempt number, so subscribers drop the earlier attempt's text.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from datetime import timedelta
from typing import Any

import httpx
import openai
from openai.types.chat import ChatCompletion, ChatCompletionChunk
from pydantic import BaseModel
from temporalio import activity
from temporalio.contrib.workflow_streams import WorkflowStreamClient
from temporalio.exceptions import ApplicationError
from temporalio.service import RPCError, RPCStatusCode

from core.events import RUN_EVENTS_TOPIC
from core.settings import get_settings

#: ``ApplicationError.type`` of a stream that broke or ended before the model finished (retried as a whole).
STREAM_BROKE_ERROR = "ModelStreamBroke"


class TokenStream(BaseModel):
    """Where a streamed model call's tokens go: the step they belong to.

    :param turn: The conversation turn (``RunEvent.turn``).
    :param step: The step's 0-based index in the turn (``RunEvent.step``).
    """

    turn: int
    step: int


def token_batch_interval() -> float:
    """Seconds between two token batches (``AGENT_TOKEN_BATCH_MS``, core/settings.py)."""
    return get_settings().token_batch_ms / 1000


def execution_stream_client() -> WorkflowStreamClient:
    """A stream client bound to the workflow execution (Temporal run id) that scheduled this activity.

    Not to the workflow id: after a rewind (Temporal's reset) the terminated execution's model
    activity goes on streaming until its heartbeat learns of the end, and by workflow id its
    batches would land in the new execution's stream. Bound to its execution, they are refused
    (NOT_FOUND) and the publisher stops.
    """
    info = activity.info()
    client = activity.client()
    handle = client.get_workflow_handle(info.workflow_id, run_id=info.workflow_run_id)
    return WorkflowStreamClient(handle, client=client, max_retry_duration=timedelta(seconds=60))


def _execution_gone(err: RPCError) -> bool:
    """Whether ``err`` says the execution the tokens were for has ended (completed, reset, cancelled)."""
    return err.status == RPCStatusCode.NOT_FOUND


class TokenPublisher:
    """Publishes one model call's text deltas as ``token`` events, batched.

    :param stream: The contrib's client to the run's stream (its ``flush`` sends a batch as one
        Signal, with the contrib's de-duplication; this class decides when).
    :param target: The step the tokens belong to.
    :param attempt: The activity attempt (``token`` events carry it).
    :param interval: Seconds between batches after the first (0: every delta at once).
    """

    def __init__(self, stream: WorkflowStreamClient, target: TokenStream, attempt: int, interval: float) -> None:
        self._stream = stream
        self._topic = stream.topic(RUN_EVENTS_TOPIC)
        self._target = target
        self.attempt = attempt
        self._interval = interval
        self._pending: list[str] = []
        self._last_sent: float | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._wake = asyncio.Event()
        self._sender: asyncio.Task[None] | None = None

    async def __aenter__(self) -> TokenPublisher:
        self._sender = asyncio.ensure_future(self._send_loop())
        if self.attempt > 1:
            self.event("model_retry", {"attempt": self.attempt})
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.send()
        # Flush first (it waits for a Signal in flight, under the contrib's lock), then stop the
        # idle sender: cancelling a Signal in flight would send its batch twice (deduplicated by
        # the workflow, but recorded twice in history).
        try:
            await self._stream.flush()
        except RPCError as err:
            if not _execution_gone(err):
                raise
        if self._sender is not None:
            self._sender.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._sender

    async def _send_loop(self) -> None:
        """Send each batch as soon as it is published: one Signal at a time, never waiting for a timer."""
        while True:
            await self._wake.wait()
            self._wake.clear()
            try:
                await self._stream.flush()
            except RPCError as err:
                if not _execution_gone(err):
                    raise
                return  # the execution ended (cancelled mid-answer, rewound): no one left to send tokens to

    def event(self, kind: str, data: dict[str, Any]) -> None:
        """Publish one event of this step now."""
        self._topic.publish({"kind": kind, "turn": self._target.turn, "step": self._target.step, "data": data})
        self._wake.set()

    def add(self, text: str) -> None:
        """Take a text delta: sent at once when it is the first or the interval has passed, else with the next batch."""
        if not text:
            return
        self._pending.append(text)
        now = time.monotonic()
        due = 0.0 if self._last_sent is None else self._last_sent + self._interval - now
        if due <= 0:
            self.send()
        elif self._timer is None:
            self._timer = asyncio.get_running_loop().call_later(due, self.send)

    def send(self) -> None:
        """Publish the deltas not sent yet as one ``token`` event."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if not self._pending:
            return
        text, self._pending = "".join(self._pending), []
        self._last_sent = time.monotonic()
        self.event("token", {"text": text, "attempt": self.attempt})


class CompletionAccumulator:
    """Folds ``ChatCompletionChunk``s into the ``ChatCompletion`` a non-streamed call returns."""

    def __init__(self) -> None:
        self.chunks = 0
        self._first: ChatCompletionChunk | None = None
        self._content: list[str] | None = None
        self._tool_calls: dict[int, dict[str, Any]] = {}
        self._finish_reason: str | None = None
        self._usage: Any = None

    def add(self, chunk: ChatCompletionChunk) -> str:
        """Take one chunk; returns its text delta ('' when none)."""
        self.chunks += 1
        self._first = self._first or chunk
        if chunk.usage is not None:
            self._usage = chunk.usage
        text = ""
        for choice in chunk.choices:
            if choice.index != 0:
                continue
            delta = choice.delta
            if delta.content is not None:
                self._content = self._content or []
                self._content.append(delta.content)
                text += delta.content
            for call in delta.tool_calls or []:
                entry = self._tool_calls.setdefault(
                    call.index, {"id": None, "type": "function", "function": {"name": "", "arguments": ""}}
                )
                entry["id"] = call.id or entry["id"]
                if call.function is not None:
                    entry["function"]["name"] += call.function.name or ""
                    entry["function"]["arguments"] += call.function.arguments or ""
            if choice.finish_reason is not None:
                self._finish_reason = choice.finish_reason
        return text

    @property
    def finished(self) -> bool:
        return self._finish_reason is not None

    def completion(self) -> ChatCompletion:
        """The whole reply.

        :raises ApplicationError: Retryable (type :data:`STREAM_BROKE_ERROR`) when the stream ended
            before a finish reason came.
        """
        if self._first is None or self._finish_reason is None:
            raise ApplicationError(
                f"The model's stream ended after {self.chunks} chunks without a finish reason; retrying the call.",
                type=STREAM_BROKE_ERROR,
            )
        message: dict[str, Any] = {
            "role": "assistant",
            "content": None if self._content is None else "".join(self._content),
        }
        if self._tool_calls:
            message["tool_calls"] = [self._tool_calls[i] for i in sorted(self._tool_calls)]
        return ChatCompletion.model_validate(
            {
                "id": self._first.id,
                "object": "chat.completion",
                "created": self._first.created,
                "model": self._first.model,
                "system_fingerprint": self._first.system_fingerprint,
                "choices": [{"index": 0, "message": message, "finish_reason": self._finish_reason, "logprobs": None}],
                "usage": self._usage.model_dump() if self._usage is not None else None,
            }
        )


async def streamed_completion(client: openai.AsyncOpenAI, body: dict[str, Any], target: TokenStream) -> ChatCompletion:
    """POST ``body`` with ``stream=True``, publishing its text as ``token`` events; the folded reply.

    :param client: The endpoint's client (its errors propagate as in the non-streamed call).
    :param body: The Chat Completions request body (``stream`` and ``stream_options`` are added).
    :param target: The step the tokens belong to.
    :raises ApplicationError: Retryable (type :data:`STREAM_BROKE_ERROR`) when the stream broke
        or ended before the model finished.
    """
    info = activity.info()
    interval = token_batch_interval()
    stream_client = execution_stream_client()
    accumulator = CompletionAccumulator()
    async with TokenPublisher(stream_client, target, info.attempt, interval) as publisher:
        chunks = await client.post(
            "/chat/completions",
            body={**body, "stream": True, "stream_options": {"include_usage": True}},
            cast_to=ChatCompletion,
            stream=True,
            stream_cls=openai.AsyncStream[ChatCompletionChunk],
        )
        try:
            async for chunk in chunks:
                publisher.add(accumulator.add(chunk))
        except (httpx.HTTPError, openai.APIError) as exc:
            raise ApplicationError(
                f"The model's stream broke after {accumulator.chunks} chunks ({type(exc).__name__}: {exc}); "
                "retrying the call as a whole.",
                type=STREAM_BROKE_ERROR,
            ) from exc
    return accumulator.completion()
