"""Client side: connect, start a run, and the handle to follow, query and steer it."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from datetime import timedelta
from typing import Any

from pydantic import BaseModel
from temporalio.api.enums.v1 import PendingActivityState
from temporalio.client import Client, WorkflowHandle
from temporalio.common import WorkflowIDReusePolicy
from temporalio.service import RPCError, RPCStatusCode

from agent import conversation
from agent.approvals.decisions import (
    DEFAULT_TIMEOUT,
    RunNotAnsweringError,
    UnknownRunError,
    query_pending,
    submit_decision,
)
from agent.live import run_events
from agent.operations.rewind import Rewound, rewind
from agent.routing import check_task_queue_routes_new_runs
from agent.run_history import last_failures
from agent.run_problems import failing_workflow_task
from core.checks import check_search_attributes
from core.converter import readable_failure
from core.events import RunEvent
from core.messages import ChatMessage
from core.payloads import (
    ActivityRetry,
    AgentRunInput,
    AgentRunResult,
    MessageReceipt,
    RunHealth,
    RunStatus,
    TurnResult,
    UserMessage,
)
from core.settings import DEFAULT_WORKFLOW_TASK_TIMEOUT
from core.spec import AgentSpec
from core.tools import ToolSpec, flatten_tools
from core.wire import RUN_STATUS_QUERY, WAITING_FOR_USER_ATTRIBUTE, WORKFLOW_TYPE
from hooks.human_in_the_loop.dataclasses import DecisionRecord, PendingConfirmation, ToolDecision
from hooks.protocol import NeedsSearchAttributes
from runtime.plugin import connect

__all__ = ["AgentRunHandle", "connect", "get_run", "start_run"]

#: How often :meth:`AgentRunHandle.wait_for_pending` asks the run again.
PENDING_POLL_SECONDS = 0.2


class AgentRunHandle:
    """A handle on one run (workflow id = run id), from ``Agent.start`` or :func:`get_run`."""

    def __init__(self, client: Client, run_id: str, output_type: type[BaseModel] | None = None) -> None:
        self.client = client
        self.run_id = run_id
        #: The agent's ``output_type`` when the handle came from ``Agent.start``/``send``: ``result()``
        #: returns ``output`` as that type (a handle from :func:`get_run` gives the JSON value).
        self.output_type = output_type
        # No pinned run: follows the run across continue-as-new.
        self.workflow: WorkflowHandle = client.get_workflow_handle(run_id, result_type=AgentRunResult)
        #: The receipt of the message ``Agent.send`` delivered with this handle (None otherwise).
        self.last_receipt: MessageReceipt | None = None

    async def result(self) -> AgentRunResult:
        """Wait for the run to finish (across any continue-as-new) and return its result.

        :raises pydantic.ValidationError: When the final answer is not the handle's ``output_type``
            (the worker checked it against the same schema, so only a changed type does this).
        """
        result = await self.workflow.result()
        if self.output_type is not None and result.output is not None:
            result.output = self.output_type.model_validate(result.output)
        return result

    async def status(self) -> RunStatus:
        """The ``run_status`` query: step, phase, approvals pending, exit reason when done."""
        return await self.workflow.query(RUN_STATUS_QUERY, result_type=RunStatus)

    async def health(self) -> RunHealth:
        """What Temporal knows beyond the status query: the run's status and failure, a workflow task
        that keeps failing (attempts, last error, the fix: ``failing_workflow_task``) and activities
        being retried (a model call answering 5xx, a tool whose store is down), from ``describe()``
        and the history.

        :raises temporalio.service.RPCError: NOT_FOUND when there is no such run.
        """
        description = await self.workflow.describe()
        raw = description.raw_description
        health = RunHealth(
            status=description.status.name if description.status else "UNKNOWN",
            history_length=description.history_length,
        )
        if raw.HasField("pending_workflow_task"):
            health.workflow_task_attempts = raw.pending_workflow_task.attempt
        converter = self.client.data_converter
        health.retrying_activities = [
            ActivityRetry(
                activity_type=activity.activity_type.name,
                attempt=activity.attempt,
                last_error=(await readable_failure(activity.last_failure, converter)).message or None,
            )
            for activity in raw.pending_activities
            if activity.attempt > 1
        ]
        health.waiting_activities = [
            activity.activity_type.name
            for activity in raw.pending_activities
            if activity.state == PendingActivityState.PENDING_ACTIVITY_STATE_SCHEDULED
        ]
        ended_badly = health.status in ("FAILED", "TERMINATED", "TIMED_OUT", "CANCELED")
        if health.workflow_task_attempts > 1 or ended_badly:
            found = await last_failures(self.workflow, ended_badly, converter)
            health.workflow_task_error, health.failure = found.workflow_task_error, found.run_failure
            if health.workflow_task_attempts > 1 and health.status == "RUNNING":
                health.failing_workflow_task = failing_workflow_task(
                    health.workflow_task_attempts,
                    found.workflow_task_error,
                    description.task_queue,
                    found.workflow_task_error_kinds,
                )
        return health

    # -- confirmations (hooks.human_in_the_loop) ----------------------------------------------

    async def pending_confirmations(self, timeout: timedelta | None = DEFAULT_TIMEOUT) -> list[PendingConfirmation]:
        """The tool calls waiting for a person (``PendingConfirmation``), oldest first.

        :param timeout: How long to wait for the run (a worker) to answer.
        :raises agent.approvals.decisions.UnknownRunError: No such run.
        :raises agent.approvals.decisions.RunNotAnsweringError: No answer within ``timeout``.
        """
        return await query_pending(self.workflow, timeout=timeout)

    async def wait_for_pending(self, timeout: timedelta = DEFAULT_TIMEOUT) -> list[PendingConfirmation]:
        """Wait until the run has at least one pending confirmation and return them, oldest first.

        :param timeout: How long to wait in all.
        :raises TimeoutError: When no confirmation is pending by then (the message names the run).
        :raises RuntimeError: When the run ends first (the message says how).
        :raises agent.approvals.decisions.UnknownRunError: No such run.
        """
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout.total_seconds()
        while True:
            try:
                description = await self.workflow.describe()
            except RPCError as err:
                if err.status == RPCStatusCode.NOT_FOUND:
                    raise UnknownRunError(f"No run '{self.run_id}': {err.message}") from err
                raise
            status = description.status.name if description.status else "UNKNOWN"
            if status != "RUNNING":
                health = await self.health()
                why = f": {health.failure}" if health.failure else ""
                raise RuntimeError(
                    f"Run '{self.run_id}' ended ({status.lower()}) before asking for a confirmation{why}"
                )
            left = deadline - loop.time()
            waited = f"Run '{self.run_id}' asked for no confirmation within {timeout.total_seconds():g} s"
            if left <= 0:
                raise TimeoutError(f"{waited} (task queue '{description.task_queue}').")
            try:
                pending = await query_pending(self.workflow, timeout=timedelta(seconds=left))
            except RunNotAnsweringError as err:
                raise TimeoutError(f"{waited}: {err}") from err
            if pending:
                return pending
            await asyncio.sleep(min(PENDING_POLL_SECONDS, left))

    async def decide(self, decision: ToolDecision, timeout: timedelta | None = DEFAULT_TIMEOUT) -> DecisionRecord:
        """Send a ``ToolDecision`` by the validated Update; returns its ``DecisionRecord``.

        :param timeout: How long to wait for the run (a worker) to accept or refuse it.
        :raises agent.approvals.decisions.DecisionRefusedError: Unknown or decided call, bad
            action, or ``new_tool_params`` failing the tool's schema (nothing reached history).
        :raises agent.approvals.decisions.UnknownRunError: No such run, or it has finished.
        :raises agent.approvals.decisions.RunNotAnsweringError: No answer within ``timeout``.
        """
        return await submit_decision(self.workflow, decision, timeout=timeout)

    async def confirm(self, call_id: str, approver: str | None = None) -> DecisionRecord:
        """Run the pending call ``call_id`` as requested."""
        return await self.decide(ToolDecision(tool_call_id=call_id, action="confirm", approver=approver))

    async def reject(self, call_id: str, feedback: str | None = None, approver: str | None = None) -> DecisionRecord:
        """Do not run ``call_id``; the model is told, with ``feedback``."""
        return await self.decide(
            ToolDecision(tool_call_id=call_id, action="reject", feedback=feedback, approver=approver)
        )

    async def modify(
        self, call_id: str, new_tool_params: dict[str, Any], approver: str | None = None
    ) -> DecisionRecord:
        """Run ``call_id`` with ``new_tool_params`` (the complete new arguments) instead."""
        return await self.decide(
            ToolDecision(tool_call_id=call_id, action="modify", new_tool_params=new_tool_params, approver=approver)
        )

    def __repr__(self) -> str:
        return f"AgentRunHandle({self.run_id!r})"

    def events(self, from_offset: int = 0) -> AsyncIterator[RunEvent]:
        """The run's events as they happen (DESIGN.md "Live"; see :func:`agent.live.run_events`);
        resume with ``from_offset=last.offset + 1``: nothing missed, nothing twice."""
        return run_events(self.client, self.run_id, from_offset)

    # -- conversations (DESIGN.md "Conversations"; wire API in docs/api.md) ------------------

    async def send_message(
        self,
        text: str,
        sender: str | None = None,
        message_id: str | None = None,
        timeout: timedelta | None = conversation.DEFAULT_ACCEPT_TIMEOUT,
    ) -> MessageReceipt:
        """Send a message into the run (Update ``send_message``); it is delivered at the next step
        boundary, or starts the next turn of a session waiting for the user.

        :param text: What to say (non-empty, at most 32,000 characters).
        :param sender: Who says it; must be one of the agent's ``participants`` when it names them.
        :param message_id: Your id for the message: sending it again returns the first receipt and
            adds nothing (safe retries). None: a fresh one is made here (see the receipt).
        :param timeout: The one deadline of the call (None: as long as it takes).
        :returns: ``MessageReceipt(message_id, turn)``; ``wait_turn(receipt.turn)`` waits for the answer.
        :raises agent.conversation.NotAcceptedError: No worker accepted it within ``timeout``; it is
            delivered when a worker picks the run up (resend only with the same ``message_id``).
        :raises agent.conversation.MessageRefusedError: The run refused it (finished or cancelled
            run, a run without a session past its turn, empty or too long text, sender not allowed).
        """
        return await conversation.send_message(
            self.workflow, UserMessage(text=text, sender=sender, message_id=message_id), timeout
        )

    async def wait_turn(self, turn: int, timeout: timedelta = conversation.DEFAULT_TURN_TIMEOUT) -> TurnResult:
        """Wait until turn ``turn`` has finished; returns ``TurnResult(turn, last_message, exit_reason, step_count)``.

        :raises agent.conversation.TurnTimeoutError: When ``timeout`` (10 minutes by default) passes first.
        :raises agent.conversation.ConversationError: When the run ended before finishing that turn.
        """
        return await conversation.wait_turn(self.workflow, turn, timeout)

    async def cancel(
        self, reason: str | None = None, timeout: timedelta | None = conversation.DEFAULT_ACCEPT_TIMEOUT
    ) -> RunStatus:
        """End the run cleanly (Update ``cancel_run``): in-flight tools are cancelled, every open
        tool call gets a cancelled result, waiting confirmations close, ``after_run`` and ``close``
        run, and ``result()`` returns ``exit_reason="cancelled"``. Temporal's own cancel
        (``workflow.cancel()``, the UI) does the same with a default reason.

        :param timeout: The one deadline of the call (None: as long as it takes).
        :raises agent.conversation.NotAcceptedError: No worker accepted it within ``timeout``.
        :raises agent.conversation.ConversationError: The run has already finished.
        """
        return await conversation.cancel_run(self.workflow, reason, timeout)

    async def rewind(self, to_step: int, reason: str, turn: int | None = None) -> Rewound:
        """Take the run back to the start of step ``to_step`` of its current Temporal run
        (Temporal's reset; see :func:`agent.operations.rewind.rewind`, which raises ``RewindRefused``
        when the step is out of reach). The run goes on from there; later tool calls run again."""
        return await rewind(self.client, self.run_id, to_step, reason, turn=turn)


def get_run(client: Client, run_id: str) -> AgentRunHandle:
    """Re-attach to a run from any process."""
    return AgentRunHandle(client, run_id)


def _require_json(name: str, value: Any) -> None:
    try:
        json.dumps(value)
    except (TypeError, ValueError) as exc:
        raise ValueError(
            f"{name} is recorded in workflow history and must be JSON-serialisable data (ids, descriptors), "
            f"not live objects: {exc}"
        ) from exc


_SERVED_BY_THE_WORKER = (
    "A durable run's tools are run by the worker, so a run picks from the agent's tools: add a new tool to "
    "Agent(tools=[...]) and to the worker's create_worker(tools=[...]), then name it here."
)


def _selected_tool_names(tools: Any, known: dict[str, dict[str, Any]]) -> list[str]:
    """The names of this run's tools: tool names, ``Tool`` objects and ``Toolset`` groups (as
    Haystack's ``Agent.run(tools=...)`` takes), each one of the agent's own tools.

    :raises ValueError: For a name the agent has no tool of, a ``Tool`` whose spec differs from the
        agent's tool of that name, or an item that is none of these.
    """
    names: list[str] = []
    for item in flatten_tools(tools if isinstance(tools, list) else [tools]):
        if isinstance(item, str):
            names.append(item)
            continue
        item_spec = getattr(item, "spec", None)
        if not isinstance(item_spec, ToolSpec):
            raise ValueError(
                f"tools holds {item!r}: give tool names, Tool objects or Toolsets. {_SERVED_BY_THE_WORKER}"
            )
        if item_spec.name in known and item_spec.model_dump() != known[item_spec.name]:
            raise ValueError(
                f"tools holds a Tool named {item_spec.name!r} that differs from the agent's tool of that name "
                f"(description or parameters). {_SERVED_BY_THE_WORKER}"
            )
        names.append(item_spec.name)
    unknown = [n for n in names if n not in known]
    if unknown:
        raise ValueError(
            f"tools names tools the agent does not have: {unknown}. Its tools: {sorted(known)}. {_SERVED_BY_THE_WORKER}"
        )
    return names


def _for_this_run(
    agent: AgentSpec, tools: list[Any] | None, generation_kwargs: dict[str, Any] | None
) -> dict[str, Any]:
    """The spec a run records: the agent's, with this run's tool selection and model settings.

    :raises ValueError: For a tool the agent does not have (see :func:`_selected_tool_names`), or a
        run spec that does not rebuild.
    """
    spec = agent.to_dict()
    if tools is not None:
        names = _selected_tool_names(tools, {t["name"]: t for t in spec["tools"]})
        spec["tools"] = [t for t in spec["tools"] if t["name"] in names]
    if generation_kwargs:
        _require_json("generation_kwargs", generation_kwargs)
        spec["model_settings"] = {**spec["model_settings"], **generation_kwargs}
    if tools is not None or generation_kwargs:
        AgentSpec.from_dict(spec)  # the run's own spec must stand on its own
    return spec


async def start_run(
    agent: AgentSpec,
    client: Client,
    messages: list[ChatMessage],
    run_id: str,
    task_queue: str,
    hook_context: dict[str, Any] | None,
    state: dict[str, Any] | None,
    tools: list[Any] | None = None,
    generation_kwargs: dict[str, Any] | None = None,
    wait_for_user: timedelta | None = None,
) -> AgentRunHandle:
    """Start ``AgentWorkflow`` for ``agent`` (see ``Agent.start`` for the parameters)."""
    if not messages:
        raise ValueError("A run needs at least one message.")
    run_input = await run_input_for(
        agent, client, messages, hook_context, state, tools, generation_kwargs, wait_for_user
    )
    await check_task_queue_routes_new_runs(client, task_queue)
    await client.start_workflow(
        WORKFLOW_TYPE,
        run_input,
        id=run_id,
        task_queue=task_queue,
        id_reuse_policy=WorkflowIDReusePolicy.ALLOW_DUPLICATE,
        task_timeout=DEFAULT_WORKFLOW_TASK_TIMEOUT,
    )
    return AgentRunHandle(client, run_id, agent.output_type)


async def run_input_for(
    agent: AgentSpec,
    client: Client,
    messages: list[ChatMessage],
    hook_context: dict[str, Any] | None,
    state: dict[str, Any] | None,
    tools: list[Any] | None,
    generation_kwargs: dict[str, Any] | None,
    wait_for_user: timedelta | None,
) -> AgentRunInput:
    """The checked workflow input of a run (see ``Agent.start`` for the parameters and errors)."""
    hook_context = dict(hook_context or {})
    state = dict(state or {})
    _require_json("hook_context", hook_context)
    _require_json("state", state)
    unknown = sorted(set(state) - set(agent.state_schema))
    if unknown:
        raise ValueError(f"state names keys not in the agent's state_schema: {', '.join(unknown)}.")
    if wait_for_user is not None and (not isinstance(wait_for_user, timedelta) or wait_for_user <= timedelta(0)):
        raise ValueError(f"wait_for_user must be a positive timedelta, got {wait_for_user!r}.")
    required: dict[str, str] = {}
    for hook in agent.distinct_hooks():
        if isinstance(hook, NeedsSearchAttributes):
            required.update(hook.search_attributes())
    if required:
        await check_search_attributes(client, required, needed_by="this agent's hooks")
    if wait_for_user is not None:
        await check_search_attributes(
            client, {WAITING_FOR_USER_ATTRIBUTE: "Bool"}, needed_by="a session (wait_for_user)"
        )
    spec = _for_this_run(agent, tools, generation_kwargs)
    return AgentRunInput(
        agent=spec,
        messages=messages,
        hook_context=hook_context,
        state=state,
        wait_for_user_seconds=wait_for_user.total_seconds() if wait_for_user is not None else None,
    )
