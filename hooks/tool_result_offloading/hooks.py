"""``ToolResultOffloadHook``: move big tool results out of the conversation into a store.

Same rules as Haystack's hook of the same name; what durability changes is where the write
happens. The hook decides in workflow code (deterministically: :meth:`ToolResultOffloadHook.plan`)
and writes through the ``store_tool_result`` activity (:meth:`ToolResultOffloadHook.run_async`),
then swaps each offloaded result for a pointer with a preview (:meth:`ToolResultOffloadHook.apply`).
When it comes first among the ``after_tool`` hooks that read results and the tool's policy needs no
State, the tool activity writes the result itself instead, so it never enters history
(:meth:`ToolResultOffloadHook.activity_offload`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from temporalio import workflow
from temporalio.exceptions import ActivityError, FailureError

from activities.result_store import StoreResultInput, store_result
from activities.tool_invocation import DEFAULT_WRITE_DEADLINE, OffloadInstruction
from core.messages import ChatMessage
from core.serialization import default_to_dict, object_from_dict
from core.state import State, replace_values
from core.tool_records import OFFLOADED_META_KEY, pointer_text, result_key, unstored_text
from hooks._tool_keys import decode_tool_key, encode_tool_key, lookup_by_tool, validate_tool_keys
from hooks.context import current_run_or_none, run_logger
from hooks.protocol import reads_tool_results as hook_reads_tool_results
from hooks.tool_result_offloading.protocol import OFFLOAD_POLICY_SLOT, STORE_SLOT, OffloadPolicy, ToolResultStore

#: ``hook_context`` key of a per-run store descriptor (``store.to_dict()``); it wins over the hook's store.
RESULT_STORE_CONTEXT_KEY = "tool_result_store"


@dataclass(frozen=True)
class OffloadTask:
    """One result the hook decided to offload.

    :param index: Position of the tool-result message in ``state.messages``.
    :param key: Store key, unique in the run (step, tool name, call id or batch position).
    :param content: The result text to write.
    """

    index: int
    key: str
    content: str


def fresh_tool_results_start(messages: list[ChatMessage]) -> int:
    """Index where the trailing block of tool-result messages (this step's) begins.

    :returns: ``len(messages)`` when the last message is not a tool result.
    """
    index = len(messages)
    while index > 0 and messages[index - 1].tool_call_result is not None:
        index -= 1
    return index


class ToolResultOffloadHook:
    """Offload this step's tool results to a ``ToolResultStore``, leaving a pointer and a preview.

    Register under ``after_tool``. ``offload_strategies`` maps a tool name, a tuple of tool names
    or ``"*"`` to an :class:`OffloadPolicy`; the most specific key wins (name, then tuple, then
    ``"*"``) and a tool no key matches is not offloaded. Only the trailing block of tool-result
    messages (the results this step appended) is considered. Error results (failed tools,
    rejections by the confirmation hook) and empty results stay in context, and a result already
    marked ``meta["tool_result_offloaded"]`` is never offloaded again.

    In a run, a write that fails (an S3 outage) is retried with backoff until ``write_deadline``. A
    result the policy says to offload is never kept in the conversation because the store is down:
    after the deadline it is replaced by an error message saying it could not be stored (the model
    may call the tool again), a warning is logged, and the run goes on. Kept, it would travel in
    every later model call's activity input, each recorded in history, where Temporal's payload and
    history limits can end the run. A local :meth:`run` keeps it in context, as Haystack does.

    Hooks run in registration order, and this one stores a result as the ``after_tool`` hooks
    registered before it left it (a redaction hook before it means only redacted text is stored).
    The tool activity writes a result itself (so a big result never enters history) only when that
    gives the same outcome: see :meth:`activity_offload`.

    Each run writes to its own store: the store descriptor in
    ``hook_context[RESULT_STORE_CONTEXT_KEY]`` if present, else ``store``, scoped to the run
    with ``for_run(workflow id)`` when the store supports it.

    :param store: Where results go (``FileSystemToolResultStore`` or ``S3ToolResultStore``).
    :param offload_strategies: ``{tool name | (names, ...) | "*": policy}``.
    :param preview_chars: Leading characters of the result kept in the pointer message. As in
        Haystack it slices the text (``text[:preview_chars]``), so a negative value keeps all but
        that many trailing characters, and a preview shorter than the text ends in ``...``.
    :param write_deadline: How long a failing write is retried before the result is given up
        (10 minutes by default).
    :raises ValueError: For a store without ``write``/``to_dict``, a malformed key, a policy without
        ``should_offload``/``to_dict``, a ``preview_chars`` that is not an integer or a ``write_deadline``
        under a second.
    """

    allowed_hook_points = ("after_tool",)
    #: It rewrites this step's tool results: hooks registered after it see pointers (hooks/protocol.py).
    reads_tool_results = True

    def __init__(
        self,
        store: ToolResultStore,
        offload_strategies: dict[str | tuple[str, ...], OffloadPolicy],
        *,
        preview_chars: int = 200,
        write_deadline: timedelta = DEFAULT_WRITE_DEADLINE,
    ) -> None:
        if not (callable(getattr(store, "write", None)) and callable(getattr(store, "to_dict", None))):
            raise ValueError(f"store must have write() and to_dict(), got {store!r}.")
        if not isinstance(offload_strategies, dict):
            raise ValueError(f"offload_strategies must be a dict, got {type(offload_strategies).__name__}.")
        validate_tool_keys(offload_strategies, "offload_strategies")
        for key, policy in offload_strategies.items():
            if not (callable(getattr(policy, "should_offload", None)) and callable(getattr(policy, "to_dict", None))):
                raise ValueError(f"Policy for {key!r} must have should_offload() and to_dict(), got {policy!r}.")
        if isinstance(preview_chars, bool) or not isinstance(preview_chars, int):
            raise ValueError(f"preview_chars must be an integer, got {preview_chars!r}.")
        if not isinstance(write_deadline, timedelta) or write_deadline < timedelta(seconds=1):
            raise ValueError(f"write_deadline must be a timedelta of at least 1 second, got {write_deadline!r}.")
        self.store = store
        self.offload_strategies = dict(offload_strategies)
        self.preview_chars = preview_chars
        self.write_deadline = write_deadline

    def warm_up(self) -> None:
        """At a run's start, rebuild the store ``hook_context`` names (a descriptor from the run's
        input), so a store the worker refuses (``AGENT_FILE_ROOTS``, ``AGENT_S3_BUCKETS``) fails the
        run before any step instead of at the first offload."""
        run = current_run_or_none()
        if run is not None:
            self.resolve_store(run.state, None)

    def policy_for(self, tool_name: str) -> OffloadPolicy | None:
        """The policy of ``tool_name``: its own key, else a tuple containing it, else ``"*"``, else None."""
        return lookup_by_tool(tool_name, self.offload_strategies)

    def resolve_store(self, state: State, run_id: str | None) -> ToolResultStore:
        """The store this run writes to, scoped to ``run_id`` when given and supported.

        :raises ValueError: If ``hook_context`` holds something that is not a store or a store descriptor.
        """
        override = (state.data.get("hook_context") or {}).get(RESULT_STORE_CONTEXT_KEY)
        if override is None:
            store = self.store
        elif isinstance(override, dict):
            store = object_from_dict(override, STORE_SLOT)
        elif callable(getattr(override, "write", None)):
            store = override
        else:
            raise ValueError(
                f"hook_context['{RESULT_STORE_CONTEXT_KEY}'] must be a store descriptor, got {override!r}."
            )
        for_run = getattr(store, "for_run", None)
        return for_run(run_id) if run_id is not None and callable(for_run) else store

    def plan(self, state: State) -> list[OffloadTask]:
        """Which of this step's results to offload, and under which keys. Pure and deterministic."""
        messages: list[ChatMessage] = state.data.get("messages") or []
        start = fresh_tool_results_start(messages)
        step = state.data.get("step_count", 0)
        tasks: list[OffloadTask] = []
        for position, message in enumerate(messages[start:]):
            result = message.tool_call_result
            if result is None or result.error or not result.result or message.meta.get(OFFLOADED_META_KEY):
                continue
            if len(message.tool_call_results) != 1:
                continue  # several results in one message: not produced by our loop; leave them
            tool_name = result.origin.tool_name
            policy = self.policy_for(tool_name)
            if policy is None or not policy.should_offload(tool_name, result.result, state):
                continue
            key = result_key(step, tool_name, result.origin.id, position)
            tasks.append(OffloadTask(start + position, key, result.result))
        return tasks

    def activity_offload(
        self,
        state: State,
        tool_name: str,
        call_id: str | None,
        position: int,
        hooks_before: Sequence[Any] = (),
    ) -> OffloadInstruction | None:
        """Let the tool activity offload this call's result itself (the run loop asks before each call).

        Only when that gives the outcome of running the ``after_tool`` hooks in order: no hook in
        ``hooks_before`` reads tool results (a redaction hook registered before this one must see,
        and rewrite, the result before it is stored), and the tool's policy decides from the result
        alone (``decides_without_state``). Then a multi-MB result never enters workflow history, and
        this hook finds it marked in its turn and skips it. Otherwise it returns None and this hook
        decides and writes in its own turn (:meth:`run_async`), on the result as the hooks before
        it left it.

        :param hooks_before: The ``after_tool`` hooks registered before this one.
        """
        if any(hook_reads_tool_results(hook) for hook in hooks_before):
            return None
        policy = self.policy_for(tool_name)
        if policy is None or not getattr(policy, "decides_without_state", False):
            return None
        store = self.resolve_store(state, workflow.info().workflow_id)
        return OffloadInstruction(
            store=store.to_dict(),
            policy=policy.to_dict(),
            key=result_key(state.data.get("step_count", 0), tool_name, call_id, position),
            preview_chars=self.preview_chars,
            write_deadline_seconds=self.write_deadline.total_seconds(),
        )

    def apply(self, state: State, references: dict[int, str], unstored: dict[int, object] | None = None) -> None:
        """Replace the messages at ``references``' indices with pointers, and those at ``unstored``'s
        (writes that failed until the deadline) with an error saying so (one State write, if any)."""
        if not references and not unstored:
            return
        messages: list[ChatMessage] = list(state.data.get("messages") or [])
        for index, reference in references.items():
            message = messages[index]
            result = message.tool_call_result
            assert result is not None
            messages[index] = ChatMessage.from_tool(
                pointer_text(reference, result.result, self.preview_chars),
                origin=result.origin,
                error=result.error,
                meta={**message.meta, OFFLOADED_META_KEY: [reference]},
            )
        for index, error in (unstored or {}).items():
            result = messages[index].tool_call_result
            assert result is not None
            text = unstored_text(result.origin.tool_name, result.result, self.write_deadline, error)
            messages[index] = ChatMessage.from_tool(text, origin=result.origin, error=True, meta=messages[index].meta)
        state.set("messages", messages, handler_override=replace_values)

    async def run_async(self, state: State) -> None:
        """In a workflow: write each planned result with the ``store_tool_result`` activity, then rewrite."""
        tasks = self.plan(state)
        if not tasks:
            return
        store = self.resolve_store(state, workflow.info().workflow_id)
        descriptor = store.to_dict()
        outcomes = await asyncio.gather(
            *(
                store_result(StoreResultInput(store=descriptor, key=t.key, content=t.content), self.write_deadline)
                for t in tasks
            ),
            return_exceptions=True,
        )
        references: dict[int, str] = {}
        unstored: dict[int, object] = {}
        for task, outcome in zip(tasks, outcomes, strict=True):
            if isinstance(outcome, ActivityError):
                workflow.logger.warning("Storing %s failed for good; the model is told: %s", task.key, outcome.cause)
                unstored[task.index] = outcome.cause.message if isinstance(outcome.cause, FailureError) else outcome
            elif isinstance(outcome, BaseException):
                raise outcome
            else:
                references[task.index] = outcome
        self.apply(state, references, unstored)

    def run(self, state: State) -> None:
        """Outside a workflow (a local, non-durable run): write with the store directly, as Haystack's hook.

        A write that fails leaves the result in the conversation and logs a warning, as in Haystack:
        a local run has no history to keep small and no deadline to retry until.

        :raises RuntimeError: Inside a workflow, where the write must go through ``run_async``.
        """
        if workflow.in_workflow():
            raise RuntimeError("Inside a workflow ToolResultOffloadHook writes through an activity: await run_async.")
        store = self.resolve_store(state, run_id=None)
        references: dict[int, str] = {}
        for task in self.plan(state):
            try:
                references[task.index] = store.write(key=task.key, content=task.content)
            except Exception as exc:
                run_logger(__name__).warning(
                    "Failed to offload %s to %s; leaving the result in context. Error: %s",
                    task.key,
                    type(store).__name__,
                    exc,
                )
        self.apply(state, references)

    def to_dict(self) -> dict[str, Any]:
        """Serialise store, strategies (tuple keys as JSON arrays) and preview length."""
        return default_to_dict(
            self,
            store=self.store.to_dict(),
            offload_strategies={encode_tool_key(k): p.to_dict() for k, p in self.offload_strategies.items()},
            preview_chars=self.preview_chars,
            write_deadline_seconds=self.write_deadline.total_seconds(),
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ToolResultOffloadHook:
        """Rebuild from :meth:`to_dict`'s output."""
        params = dict(data.get("init_parameters", {}))
        kwargs: dict[str, Any] = {}
        # As Haystack's: a key left out takes its default (a Haystack dict has no write_deadline_seconds);
        # a required one left out is the constructor's TypeError.
        if params.get("store") is not None:
            kwargs["store"] = object_from_dict(params["store"], STORE_SLOT)
        if params.get("offload_strategies") is not None:
            kwargs["offload_strategies"] = {
                decode_tool_key(k): object_from_dict(p, OFFLOAD_POLICY_SLOT)
                for k, p in params["offload_strategies"].items()
            }
        if "preview_chars" in params:
            kwargs["preview_chars"] = params["preview_chars"]
        if params.get("write_deadline_seconds") is not None:
            kwargs["write_deadline"] = timedelta(seconds=params["write_deadline_seconds"])
        return cls(**kwargs)
