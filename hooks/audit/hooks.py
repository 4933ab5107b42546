"""``AuditHook``: one audit record per tool call, written to an audit store.

Register the same hook at two points of the run loop::

    AuditHook(FileSystemAuditStore("audit"))   # hooks={"before_tool": [audit, confirm, ...],
                                               #        "after_tool": [..., offload, audit]}

- at ``before_tool`` (first, ahead of hooks that rewrite the calls, such as
  ``ConfirmationHook``) it notes the calls the model asked for and where this step's messages
  begin; it changes nothing;
- at ``after_tool`` (last, after hooks that rewrite results, such as
  ``ToolResultOffloadHook``) it builds one :class:`AuditRecord` per noted call from what the
  step left in ``messages`` (result, error, confirmation, offload pointer) and writes them with
  the ``write_audit_records`` activity.

The two registrations are separate objects once the worker rebuilds the agent from its spec,
so the note travels through the run's :class:`AuditLedger` (``current_run().slot(AuditLedger)``).
Which point is running is read from ``current_run().phase``, which the run loop sets before each
point's hooks run. All of it is deterministic workflow code: the only clock is ``workflow.now()``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from temporalio import workflow

from core.messages import ChatMessage, ToolCall, ToolCallResult
from core.serialization import default_to_dict, object_from_dict
from core.state import State
from core.tool_records import CONFIRMATION_KEY, OFFLOADED_META_KEY, arguments_sha256
from hooks.audit.activities import AUDIT_STORE_SLOT, WriteAuditRecordsInput, write_records, write_records_to_store
from hooks.audit.dataclasses import AuditRecord
from hooks.context import current_run_or_none, run_logger
from hooks.protocol import AFTER_TOOL, BEFORE_TOOL

#: Run id of records written outside a run (``run`` with no ``RunContext`` installed).
LOCAL_RUN_ID = "local"


@dataclass(frozen=True)
class StepNote:
    """What the ``before_tool`` turn saw of one step.

    :param step: The step (``step_count``).
    :param start: Index in ``messages`` of the assistant message with the calls; every message
        of the step from there on belongs to it (``ConfirmationHook`` replaces that message in place).
    :param calls: The calls as the model asked for them.
    """

    step: int
    start: int
    calls: tuple[ToolCall, ...]


@dataclass
class AuditLedger:
    """The audit family's per-run object (a ``RunContext`` slot): notes from ``before_tool`` for ``after_tool``.

    :param notes: Step -> note; only the current step's note is kept.
    """

    notes: dict[int, StepNote] = field(default_factory=dict)

    def note(self, note: StepNote) -> bool:
        """Keep ``note`` unless the step already has one (the first ``before_tool`` turn wins,
        since a later one may see calls another hook already rewrote). Returns whether it was kept."""
        if note.step in self.notes:
            return False
        self.notes = {note.step: note}
        return True


@dataclass(frozen=True)
class _Outcome:
    """One tool result of the step, with the message that carries it."""

    message: ChatMessage
    result: ToolCallResult


class AuditHook:
    """Write one :class:`AuditRecord` per tool call of each step to an audit store.

    Register it at ``before_tool`` (first) and at ``after_tool`` (last); see the module
    docstring. Registered at ``after_tool`` alone, it cannot see the calls a ``before_tool``
    hook answered itself (rejections): it records only the results of the last assistant
    message's calls.

    Inside a run the records are written by the ``write_audit_records`` activity, retried until
    the store takes them (the run waits at this step meanwhile); a record the store refuses (a
    bad run id) fails the run. Outside a run, :meth:`run` writes with the store directly.

    :param store: Where records go (``FileSystemAuditStore`` or ``S3AuditStore``, or any object
        with ``write(run_id, key, content)`` and ``to_dict()``).
    :raises ValueError: If ``store`` has no ``write()`` or ``to_dict()``.
    """

    allowed_hook_points = (BEFORE_TOOL, AFTER_TOOL)

    def __init__(self, store: Any) -> None:
        if not (callable(getattr(store, "write", None)) and callable(getattr(store, "to_dict", None))):
            raise ValueError(f"AuditHook needs a store with write() and to_dict(), got {store!r}.")
        self.store = store
        # Used only when no run context is installed (in-process use of one instance at both points).
        self._local_ledger = AuditLedger()

    # -- the two turns ---------------------------------------------------------------------------

    async def run_async(self, state: State) -> None:
        """In a workflow: note the calls at ``before_tool``; at ``after_tool`` write the step's records.

        :param state: The run's State: reads ``messages`` and ``step_count``; writes nothing.
        :raises RuntimeError: If the run loop is not at ``before_tool`` or ``after_tool``.
        """
        if not workflow.in_workflow():
            self.run(state)
            return
        context = current_run_or_none()
        if context is None or context.phase not in self.allowed_hook_points:
            phase = context.phase if context is not None else None
            raise RuntimeError(f"AuditHook runs at before_tool or after_tool; the run loop is at {phase!r}.")
        ledger = self._ledger()
        if context.phase == BEFORE_TOOL:
            self.note_calls(state, ledger)
            return
        records = self.records(state, ledger, run_id=context.run_id, recorded_at=workflow.now())
        if records:
            await write_records(
                WriteAuditRecordsInput(store=self.store.to_dict(), run_id=context.run_id, records=records)
            )

    def run(self, state: State) -> None:
        """Outside a workflow (tests, in-process loops): the same turns, writing with the store directly.

        The point is the run context's ``phase`` when one is installed; otherwise it is read off
        the messages: a last message with tool calls means ``before_tool``, anything else
        ``after_tool``. Records name the installed run's id, else :data:`LOCAL_RUN_ID`.

        :raises RuntimeError: Inside a workflow, where the write must go through ``run_async``.
        """
        if workflow.in_workflow():
            raise RuntimeError("Inside a workflow AuditHook writes through an activity: await run_async.")
        context = current_run_or_none()
        point = context.phase if context is not None and context.phase in self.allowed_hook_points else None
        if point is None:
            messages: list[ChatMessage] = state.data.get("messages") or []
            point = BEFORE_TOOL if messages and messages[-1].tool_calls else AFTER_TOOL
        ledger = self._ledger()
        if point == BEFORE_TOOL:
            self.note_calls(state, ledger)
            return
        run_id = context.run_id if context is not None else LOCAL_RUN_ID
        records = self.records(state, ledger, run_id=run_id, recorded_at=datetime.now(UTC))
        write_records_to_store(self.store, run_id, records)
        if context is None:
            # The local ledger outlives the run (the next run starts at step 0 again).
            ledger.notes.pop(state.data.get("step_count", 0), None)

    def _ledger(self) -> AuditLedger:
        context = current_run_or_none()
        if context is None:
            return self._local_ledger
        return context.slot_or_create(AuditLedger, AuditLedger)

    # -- deterministic parts -----------------------------------------------------------------------

    def note_calls(self, state: State, ledger: AuditLedger) -> None:
        """``before_tool``: note the calls on the last message and where the step begins.

        :param state: The run's State (read only).
        :param ledger: Where the note goes.
        """
        messages: list[ChatMessage] = state.data.get("messages") or []
        last = messages[-1] if messages else None
        if last is None or not last.tool_calls:
            # A hook ahead of this one already answered every call (or removed them): the
            # calls as asked are gone, and after_tool falls back to what it can see.
            run_logger(__name__).warning(
                "AuditHook found no tool calls at before_tool; register it ahead of hooks that rewrite "
                "the calls (e.g. ConfirmationHook) so it records the calls as the model asked for them."
            )
            return
        if any((call.extra or {}).get(CONFIRMATION_KEY) for call in last.tool_calls):
            run_logger(__name__).warning(
                "AuditHook sees calls a confirmation hook already decided; register it ahead of "
                "ConfirmationHook at before_tool, or rejected calls go unrecorded."
            )
        ledger.note(
            StepNote(step=state.data.get("step_count", 0), start=len(messages) - 1, calls=tuple(last.tool_calls))
        )

    def records(self, state: State, ledger: AuditLedger, *, run_id: str, recorded_at: datetime) -> list[AuditRecord]:
        """``after_tool``: one record per call of this step. Pure: reads State and the ledger.

        Each noted call is matched to the tool result that answers it: by id first, then (for
        calls a hook gave an id, or renamed) by tool name in order. A noted call nothing
        answered still gets a record (``error=True``, no result); a result no noted call
        explains (a hook added a call) gets one too.

        :param state: The run's State after the tools ran.
        :param ledger: The ``before_tool`` notes.
        :param run_id: The run the records name.
        :param recorded_at: The records' time (``workflow.now()`` in a run).
        """
        messages: list[ChatMessage] = state.data.get("messages") or []
        step = state.data.get("step_count", 0)
        note = ledger.notes.get(step)
        if note is not None and note.start < len(messages):
            start, requested = note.start, list(note.calls)
        else:
            start = _trailing_results_start(messages)
            requested = None
        outcomes = [_Outcome(message, result) for message in messages[start:] for result in message.tool_call_results]
        if requested is None:
            requested = [outcome.result.origin for outcome in outcomes]
        pairs = _match(requested, outcomes)

        records: list[AuditRecord] = []
        used_ids: set[str] = set()
        for index, (call, outcome) in enumerate(pairs):
            origin = outcome.result.origin if outcome is not None else call
            call_id = origin.id or (call.id if call is not None else None) or f"s{step}-c{index}"
            if call_id in used_ids:  # repeated ids would overwrite each other's record
                call_id = f"{call_id}-{index}"
            used_ids.add(call_id)
            decision, approver, via = _confirmation(origin, outcome)
            pointer = None
            if outcome is not None:
                references = outcome.message.meta.get(OFFLOADED_META_KEY)
                pointer = references[0] if isinstance(references, list) and references else None
            records.append(
                AuditRecord(
                    run_id=run_id,
                    step=step,
                    tool_name=origin.tool_name,
                    tool_call_id=call_id,
                    arguments_sha256=arguments_sha256(origin.arguments),
                    decision=decision,
                    approver=approver,
                    decision_via=via,
                    error=outcome.result.error if outcome is not None else True,
                    result_chars=len(outcome.result.result) if outcome is not None else 0,
                    result_pointer=pointer,
                    recorded_at=recorded_at,
                )
            )
        return records

    # -- serialisation -----------------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """Serialise the store by its own ``to_dict``."""
        return default_to_dict(self, store=self.store.to_dict())

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> AuditHook:
        """Rebuild from :meth:`to_dict`'s output.

        :raises ValueError: If the store descriptor cannot be imported.
        """
        return cls(store=object_from_dict(data.get("init_parameters", {})["store"], AUDIT_STORE_SLOT))

    def __repr__(self) -> str:
        return f"AuditHook(store={self.store!r})"


def _trailing_results_start(messages: list[ChatMessage]) -> int:
    """Without a note: the trailing block of tool results and the assistant message before it."""
    index = len(messages)
    while index > 0 and messages[index - 1].tool_call_result is not None:
        index -= 1
    if index == len(messages):
        return index  # no results at all: nothing to record
    return index - 1 if index > 0 and messages[index - 1].tool_calls else index


def _match(requested: list[ToolCall], outcomes: list[_Outcome]) -> list[tuple[ToolCall | None, _Outcome | None]]:
    """Pair each requested call with the result that answers it, in request order; results left
    over (calls a hook added) come last, paired with None."""
    matched: dict[int, int] = {}
    free = list(range(len(outcomes)))
    for i, call in enumerate(requested):
        if call.id is None:
            continue
        j = next((j for j in free if outcomes[j].result.origin.id == call.id), None)
        if j is not None:
            matched[i] = j
            free.remove(j)
    # Calls the hooks gave an id (id-less ones) or renamed (repeated ids): by tool name, in order,
    # among the results whose id no requested call claims.
    requested_ids = {call.id for call in requested if call.id is not None}
    for i, call in enumerate(requested):
        if i in matched:
            continue
        j = next(
            (
                j
                for j in free
                if outcomes[j].result.origin.tool_name == call.tool_name
                and outcomes[j].result.origin.id not in requested_ids
            ),
            None,
        )
        if j is not None:
            matched[i] = j
            free.remove(j)
    pairs: list[tuple[ToolCall | None, _Outcome | None]] = [
        (call, outcomes[matched[i]] if i in matched else None) for i, call in enumerate(requested)
    ]
    pairs += [(None, outcomes[j]) for j in free]
    return pairs


def _confirmation(origin: ToolCall, outcome: _Outcome | None) -> tuple[str | None, str | None, str | None]:
    """``(action, approver, via)`` of the call's confirmation record, or ``(None, None, None)``.

    A rejected call's record is on the rejecting tool message's meta; a confirmed or modified
    call's is on the call's ``extra`` (``hooks.human_in_the_loop.hooks.apply_decisions``).
    """
    record = outcome.message.meta.get(CONFIRMATION_KEY) if outcome is not None else None
    if not isinstance(record, dict):
        record = (origin.extra or {}).get(CONFIRMATION_KEY)
    if not isinstance(record, dict):
        return None, None, None
    return record.get("action"), record.get("approver"), record.get("via")
