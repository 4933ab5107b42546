"""``ToolResultOffloadCompactor``: write older tool results to a store and leave a pointer in their place.

Haystack 3.4's compactor of the same name, with the write moved where durability needs it: in a
workflow, :meth:`ToolResultOffloadCompactor.compact_async` writes each result through the
``store_tool_result`` activity (``activities/result_store.py``), so every write is in the
run's history and replay never writes again. The choice of results is Haystack's.
"""

from __future__ import annotations

import asyncio
import uuid
from datetime import timedelta
from typing import Any, Protocol

from temporalio import workflow
from temporalio.exceptions import ActivityError, ApplicationError

from activities.result_store import StoreResultInput, store_result
from core.messages import ChatMessage
from core.serialization import default_to_dict, object_from_dict
from core.tool_records import OFFLOADED_META_KEY, pointer_text, result_key
from hooks.compaction.protocol import RESULT_STORE_SLOT, Compactor
from hooks.compaction.token_counters import TokenCounter
from hooks.compaction.utils import (
    COMPACTION_META_KEY,
    check_result_rewriting,
    replace_tool_results_until_target,
    replace_tool_results_until_target_async,
)
from hooks.context import current_run_or_none, run_logger


class ResultStore(Protocol):
    """What the compactor writes to: a tool-result store such as ``FileSystemToolResultStore`` or
    ``S3ToolResultStore`` (``hooks.tool_result_offloading``), or any object with these methods; a
    ``for_run(run_id)`` method, when it has one, scopes it to the run."""

    def write(self, key: str, content: str) -> str:
        """Store ``content`` under ``key``; returns the reference the pointer names."""
        ...

    def to_dict(self) -> dict[str, Any]:
        """The store's descriptor (rebuilt on the worker by the store activity)."""
        ...


STRATEGY = "tool_result_offloading"

#: How long one write is retried before its result is left in the conversation. Shorter than the
#: offload hook's: a result left in context costs only room, so a store outage should not hold the
#: model call up for long.
DEFAULT_COMPACTION_WRITE_DEADLINE = timedelta(minutes=1)

#: Store keys of compacted results start with this segment, apart from the offload hook's.
KEY_PREFIX = "compacted"


class ToolResultOffloadCompactor(Compactor):
    """Writes older tool results to a store and leaves a pointer to each, so every call keeps its result.

    Results are offloaded oldest first, until the conversation fits the target; the results of the
    newest ``min_keep_steps`` tool-calling steps are never offloaded. Left in place: error results,
    empty results, results of ``min_tokens`` tokens or fewer, results already offloaded
    (``meta["tool_result_offloaded"]``) or rewritten by another compactor (``meta["context_compaction"]``),
    and a result whose pointer would cost as many tokens as the result (its stored copy stays unused).
    An offloaded result keeps its call, error flag and meta; its meta gains
    ``"context_compaction": {"strategy": "tool_result_offloading", "original_tokens": n}`` and
    ``"tool_result_offloaded": [reference]``. The pointer text is ``ToolResultOffloadHook``'s, so
    the model reads a result back the same way, with ``read_tool_result``.

    Where the write happens:

    - in a workflow, :meth:`compact_async` (what ``CompactionHook.run_async`` awaits) writes one
      result at a time through the ``store_tool_result`` activity, to ``store`` scoped to the run
      (``store.for_run(run id)`` when the store has it; ``read_tool_result`` reads that scope). A
      write is retried until ``write_deadline``; a write that still fails leaves its result in the
      conversation with a warning, as in Haystack, and no further write is tried in that compaction
      (the store is likely down). A key the store refuses skips only that result.
    - outside a workflow (in-process use, tests), :meth:`compact` writes with ``store.write`` directly,
      once per result, and :meth:`compact_async` runs it in a thread. Inside a workflow :meth:`compact`
      raises: a store write there would be I/O in workflow code.

    Keys are ``compacted/step-{step}/{tool}/{call id or @index}-{12 hex}.txt``: the step the run was
    at, and a random part (``workflow.uuid4()`` in a workflow, so replay makes the same keys) that
    keeps keys apart when a model reuses call ids.

    :param store: Where results go: a ``ToolResultStore`` (``FileSystemToolResultStore``, ``S3ToolResultStore``).
    :param min_keep_steps: How many of the newest tool-calling steps keep their results, even over
        the target. At least 1: the model has not acted on the latest results yet.
    :param min_tokens: Only results taking more than this many tokens are offloaded.
    :param preview_chars: Leading characters of each result kept in its pointer.
    :param write_deadline: How long one write is retried in a workflow before its result is left in place.
    :raises ValueError: For a store without ``write``/``to_dict``, ``min_keep_steps < 1``, a negative
        ``min_tokens`` or ``preview_chars``, or a ``write_deadline`` under a second.
    """

    def __init__(
        self,
        store: ResultStore,
        *,
        min_keep_steps: int = 1,
        min_tokens: int = 200,
        preview_chars: int = 200,
        write_deadline: timedelta = DEFAULT_COMPACTION_WRITE_DEADLINE,
    ) -> None:
        if not (callable(getattr(store, "write", None)) and callable(getattr(store, "to_dict", None))):
            raise ValueError(f"`store` must have write() and to_dict(), got {store!r}.")
        check_result_rewriting(min_keep_steps, min_tokens)
        if preview_chars < 0:
            raise ValueError(f"`preview_chars` must be at least 0, got {preview_chars}.")
        if not isinstance(write_deadline, timedelta) or write_deadline < timedelta(seconds=1):
            raise ValueError(f"`write_deadline` must be a timedelta of at least 1 second, got {write_deadline!r}.")
        self.store = store
        self.min_keep_steps = min_keep_steps
        self.min_tokens = min_tokens
        self.preview_chars = preview_chars
        self.write_deadline = write_deadline

    # -- compacting ----------------------------------------------------------------------------

    def compact(
        self, messages: list[ChatMessage], target_tokens: int, token_counter: TokenCounter
    ) -> list[ChatMessage] | None:
        """Outside a workflow: offload results with ``store.write``, oldest first, until the conversation fits.

        :returns: The conversation with older results replaced by pointers, or None when none was offloaded.
        :raises RuntimeError: Inside a workflow, where writes go through :meth:`compact_async`.
        """
        if workflow.in_workflow():
            raise RuntimeError(
                "Inside a workflow ToolResultOffloadCompactor writes through the store_tool_result activity: "
                "await compact_async (CompactionHook.run_async does)."
            )

        def replace(message: ChatMessage, index: int) -> tuple[ChatMessage, int] | None:
            candidate = self._candidate(message, token_counter)
            if candidate is None:
                return None
            text, original_tokens = candidate
            try:
                reference = self.store.write(key=self._key(message, index), content=text)
            except Exception as error:  # as in Haystack: a failed write only leaves the result in context
                _warn_write_failed(message, error)
                return None
            return self._replacement(message, reference, text, original_tokens, token_counter)

        return replace_tool_results_until_target(
            messages,
            target_tokens=target_tokens,
            token_counter=token_counter,
            min_keep_steps=self.min_keep_steps,
            replace=replace,
        )

    async def compact_async(
        self, messages: list[ChatMessage], target_tokens: int, token_counter: TokenCounter
    ) -> list[ChatMessage] | None:
        """Offload results until the conversation fits: through the store activity in a workflow,
        else :meth:`compact` in a thread.

        :returns: The conversation with older results replaced by pointers, or None when none was offloaded.
        """
        if not workflow.in_workflow():
            return await asyncio.to_thread(self.compact, messages, target_tokens, token_counter)
        descriptor = self.run_store(workflow.info().workflow_id).to_dict()
        store_down = False

        async def replace(message: ChatMessage, index: int) -> tuple[ChatMessage, int] | None:
            nonlocal store_down
            candidate = None if store_down else self._candidate(message, token_counter)
            if candidate is None:
                return None
            text, original_tokens = candidate
            request = StoreResultInput(store=descriptor, key=self._key(message, index), content=text)
            try:
                reference = await store_result(
                    request, self.write_deadline, summary=f"compaction: offload {request.key}"
                )
            except ActivityError as error:
                refused = isinstance(error.cause, ApplicationError) and error.cause.non_retryable
                store_down = not refused
                _warn_write_failed(message, error.cause or error)
                return None
            return self._replacement(message, reference, text, original_tokens, token_counter)

        return await replace_tool_results_until_target_async(
            messages,
            target_tokens=target_tokens,
            token_counter=token_counter,
            min_keep_steps=self.min_keep_steps,
            replace=replace,
        )

    def run_store(self, run_id: str) -> ResultStore:
        """The store this run writes to: ``store.for_run(run_id)`` when the store has it, else ``store``."""
        for_run = getattr(self.store, "for_run", None)
        return for_run(run_id) if callable(for_run) else self.store

    def _candidate(self, message: ChatMessage, token_counter: TokenCounter) -> tuple[str, int] | None:
        """``(text to write, tokens the message takes)``, or None when this result stays in context."""
        result = message.tool_call_result
        if (
            result is None
            or result.error
            or message.meta.get(OFFLOADED_META_KEY)
            or COMPACTION_META_KEY in message.meta
            or len(message.tool_call_results) != 1  # one pointer per message: never drop a second result
        ):
            return None
        original_tokens = token_counter.count([message])
        if original_tokens <= self.min_tokens or not result.result:
            return None
        return result.result, original_tokens

    def _replacement(
        self, message: ChatMessage, reference: str, text: str, original_tokens: int, token_counter: TokenCounter
    ) -> tuple[ChatMessage, int] | None:
        """The pointer message and the tokens it saves, or None when it saves none."""
        result = message.tool_call_result
        assert result is not None
        marker = {"strategy": STRATEGY, "original_tokens": original_tokens}
        offloaded = ChatMessage.from_tool(
            pointer_text(reference, text, self.preview_chars),
            origin=result.origin,
            error=result.error,
            meta={**message.meta, COMPACTION_META_KEY: marker, OFFLOADED_META_KEY: [reference]},
        )
        saved = original_tokens - token_counter.count([offloaded])
        # A pointer can cost more than a small result: that replacement is dropped, its stored copy unused.
        return (offloaded, saved) if saved > 0 else None

    @staticmethod
    def _key(message: ChatMessage, index: int) -> str:
        """``compacted/step-{step}/{tool}/{call id or @index}-{random}.txt`` (deterministic in a workflow)."""
        result = message.tool_call_result
        assert result is not None
        run = current_run_or_none()
        step = run.state.data.get("step_count", 0) if run is not None else 0
        unique = (workflow.uuid4() if workflow.in_workflow() else uuid.uuid4()).hex[:12]
        path = result_key(step, result.origin.tool_name, result.origin.id, index).removesuffix(".txt")
        return f"{KEY_PREFIX}/{path}-{unique}.txt"

    # -- serialisation -------------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """Serialise the compactor with its store's descriptor."""
        return default_to_dict(
            self,
            store=self.store.to_dict(),
            min_keep_steps=self.min_keep_steps,
            min_tokens=self.min_tokens,
            preview_chars=self.preview_chars,
            write_deadline_seconds=self.write_deadline.total_seconds(),
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ToolResultOffloadCompactor:
        """Rebuild the compactor and its store from :meth:`to_dict`'s output."""
        params = dict(data.get("init_parameters", {}))
        store = params.pop("store")
        deadline = params.pop("write_deadline_seconds")
        return cls(
            object_from_dict(store, RESULT_STORE_SLOT) if isinstance(store, dict) else store,
            write_deadline=timedelta(seconds=deadline),
            **params,
        )


def _warn_write_failed(message: ChatMessage, error: object) -> None:
    result = message.tool_call_result
    tool = result.origin.tool_name if result is not None else "?"
    run_logger(__name__).warning(
        "Offloading the result of tool '%s' for context compaction failed; leaving it in the conversation. Error: %s",
        tool,
        error,
    )
