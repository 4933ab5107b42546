"""The AG-UI 1.0 endpoint (DESIGN.md "Frontends: AG-UI"): ``POST /ag-ui/{name}`` drives a durable
run of the agent that ``--agent MODULE:ATTR`` named ``name`` (its ATTR) with any AG-UI client.

A ``RunAgentInput`` comes in; a ``text/event-stream`` of AG-UI events goes out (package
``ag-ui-protocol``'s types and encoder). The AG-UI thread is the run: ``threadId`` = run id.

- A new thread starts a session with the newest user message (start-or-send, ``Agent.send``); a
  known thread gets it by the ``send_message`` Update. The AG-UI message id is the ``message_id``,
  so a message already delivered is not delivered again.
- A call waiting for approval ends the AG-UI run with an ``interrupt`` outcome; ``resume`` answers
  it with ``submit_tool_decision`` Updates (the run's validator checks them before anything runs).
- A POST with neither a new user message nor ``resume`` re-attaches: it streams what the client's
  messages lack, then the rest of the turn, live. The model is not called again.
- Who sends and who approves is the inbox's identity (``--identity-header``, ``--tokens``,
  ``--insecure-dev-identity``), never a field of the input.

Every check on the request (its type, JSON, schema, identity, the thread, the run's acceptance of
the message or decisions) answers with an HTTP error before any stream starts: 404 unknown agent
or thread, 415 not JSON, 400 unreadable JSON, 422 a field that fails (named in ``field``), 401/403
no identity, 409 a thread that takes no message; a run that fails mid-turn ends with ``RUN_ERROR``.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from ag_ui.core import (
    BaseEvent,
    Interrupt,
    RunAgentInput,
    RunErrorEvent,
    RunFinishedCancelledOutcome,
    RunFinishedEvent,
    RunFinishedInterruptOutcome,
    RunStartedEvent,
)
from ag_ui.encoder import EventEncoder
from pydantic import ValidationError
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route
from temporalio.client import WorkflowExecutionStatus
from temporalio.service import RPCError

from agent.agent import Agent
from agent.approvals.decisions import ConfirmationError, DecisionRefusedError, RunNotAnsweringError, UnknownRunError
from agent.client import AgentRunHandle
from agent.conversation import ConversationError, MessageRefusedError
from agent.inbox.agui_events import AguiTranslator
from agent.inbox.agui_runs import (
    STREAM_ERRORS,
    AguiError,
    decisions_of,
    delivered_between,
    newest_user_message,
    read_results,
    stream_offset,
    thread_status,
    with_pings,
)
from agent.inbox.pages import InboxContext
from agent.run_commands import AgentPathError, load_agent
from core.settings import DEFAULT_TASK_QUEUE

#: How long a session started through AG-UI waits for its user's next message (``wait_for_user``).
DEFAULT_WAIT_FOR_USER = timedelta(days=1)
#: Seconds between keep-alive comments of a quiet stream (proxies close silent connections).
PING_SECONDS = 15.0


@dataclass(frozen=True)
class AguiAgent:
    """An agent served at ``/ag-ui/{name}``.

    :param name: The path segment (the ATTR of ``--agent MODULE:ATTR``).
    :param agent: The agent; its sessions start on ``task_queue``.
    :param task_queue: Where its worker polls.
    :param wait_for_user: How long a session it starts waits for the next message.
    """

    name: str
    agent: Agent
    task_queue: str = DEFAULT_TASK_QUEUE
    wait_for_user: timedelta = DEFAULT_WAIT_FOR_USER


def agui_name(path: str) -> str:
    """The endpoint name of ``MODULE:ATTR``: its last attribute (``examples.quickstart:agent`` -> ``agent``)."""
    return path.partition(":")[2].rsplit(".", 1)[-1]


@dataclass
class _Plan:
    """What a checked request streams: events from ``start``, until turn ``target`` ends (any turn
    when None); ``reattach`` first catches the client up; ``unsent`` is a user message a closed
    thread never got."""

    start: int = 0
    target: int | None = None
    reattach: bool = False
    unsent: str | None = None
    resumed: bool = False


def routes(inbox: InboxContext, agents: dict[str, AguiAgent]) -> list[Route]:
    """The endpoint's route (``POST /ag-ui/{name}``) for ``agents`` by name."""

    async def endpoint(request: Request) -> Response:
        served = agents.get(request.path_params["name"])
        try:
            if served is None:
                known = ", ".join(f"/ag-ui/{n}" for n in sorted(agents)) or "none (start with --agent MODULE:ATTR)"
                raise AguiError(404, f"No agent is served at {request.url.path}. Served: {known}.")
            run_input, sender = await _checked(inbox, request)
            plan = await _prepare(inbox, served, run_input, sender)
        except AguiError as err:
            return JSONResponse(err.body(), status_code=err.status)
        return StreamingResponse(
            _stream(inbox, served, run_input, plan),
            media_type=EventEncoder().get_content_type(),
            headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
        )

    return [Route("/ag-ui/{name}", endpoint, methods=["POST"])]


async def _checked(inbox: InboxContext, request: Request) -> tuple[RunAgentInput, str]:
    """The request's ``RunAgentInput`` and its sender's identity.

    :raises AguiError: 415, 401/403, 400 or 422 (see the module docstring).
    """
    media_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if media_type != "application/json":
        raise AguiError(415, f"Send the RunAgentInput as Content-Type: application/json (got {media_type or 'none'}).")
    sender = inbox.identity.identify(request)
    if sender is None:
        status = 403 if inbox.identity.read_only else 401
        raise AguiError(status, inbox.identity.how_to_sign_in())
    try:
        data = json.loads(await request.body())
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise AguiError(400, f"The body is not JSON: {err}.") from err
    if not isinstance(data, dict):
        raise AguiError(400, "The body must be a JSON object (a RunAgentInput).")
    try:
        return RunAgentInput.model_validate(data), sender
    except ValidationError as err:
        first = err.errors()[0]
        field = _field_path(first["loc"])
        raise AguiError(422, f"RunAgentInput.{field}: {first['msg']}.", field=field) from err


def _field_path(loc: tuple[Any, ...]) -> str:
    path = ""
    for part in loc:
        path += f"[{part}]" if isinstance(part, int) else (f".{part}" if path else str(part))
    return path


async def _prepare(inbox: InboxContext, served: AguiAgent, run_input: RunAgentInput, sender: str) -> _Plan:
    """Deliver the request's message or decisions to the run; returns where its stream starts.

    :raises AguiError: For an unknown thread, a message or decision the run refuses, a run that
        does not answer.
    """
    client, thread = inbox.client, run_input.thread_id
    handle = inbox.handle(thread)
    status = await thread_status(client, thread)
    if run_input.resume:
        decisions = decisions_of(run_input.resume, sender)
        if status is None:
            raise AguiError(404, f"No thread '{thread}': there is nothing to resume.", field="threadId")
        start = await stream_offset(client, thread)
        for index, decision in enumerate(decisions):
            await _decide(handle, decision, index, inbox)
        return _Plan(start=start, resumed=True)
    message = newest_user_message(run_input.messages)
    if status is None:
        if message is None:
            raise AguiError(422, "A new thread starts with a user message; messages has none.", field="messages")
        try:
            started = await served.agent.send(
                client,
                thread,
                message.text,
                task_queue=served.task_queue,
                sender=sender,
                wait_for_user=served.wait_for_user,
                message_id=message.id,
            )
        except MessageRefusedError as err:
            raise AguiError(422, str(err), field="messages") from err
        turn = started.last_receipt.turn if started.last_receipt else None
        return _Plan(start=0, target=turn)
    if message is not None and status == WorkflowExecutionStatus.RUNNING:
        start = await stream_offset(client, thread)
        try:
            receipt = await handle.send_message(message.text, sender=sender, message_id=message.id)
        except MessageRefusedError as err:
            raise AguiError(409, str(err), field="messages") from err
        except ConversationError as err:
            raise AguiError(502, str(err)) from err
        if await delivered_between(handle, start, await stream_offset(client, thread), message.id):
            return _Plan(start=start, target=receipt.turn)
    unsent = message.id if message is not None and status != WorkflowExecutionStatus.RUNNING else None
    return _Plan(reattach=True, unsent=unsent)


async def _decide(handle: AgentRunHandle, decision: Any, index: int, inbox: InboxContext) -> None:
    try:
        await handle.decide(decision, timeout=inbox.settings.decision_timeout)
    except DecisionRefusedError as err:
        raise AguiError(422, str(err), field=f"resume[{index}]") from err
    except UnknownRunError as err:
        raise AguiError(404, str(err), field="threadId") from err
    except RunNotAnsweringError as err:
        raise AguiError(504, str(err)) from err


async def _stream(inbox: InboxContext, served: AguiAgent, run_input: RunAgentInput, plan: _Plan) -> AsyncIterator[str]:
    """The AG-UI events of one request, SSE-encoded (keep-alive comments while quiet)."""
    encoder = EventEncoder()
    thread, run = run_input.thread_id, run_input.run_id
    yield encoder.encode(RunStartedEvent(thread_id=thread, run_id=run))
    handle = inbox.handle(thread)
    translator = AguiTranslator(
        thread,
        read_results=lambda ids: read_results(inbox.client, thread, ids),
        exact_previews=not served.agent.hooks.get("after_tool"),
    )
    try:
        async for event in _events(inbox, handle, translator, run_input, plan):
            if event is None:
                yield ": ping\n\n"
                continue
            yield encoder.encode(event)
            if isinstance(event, (RunFinishedEvent, RunErrorEvent)):
                return
    except (*STREAM_ERRORS, ConfirmationError) as err:
        yield encoder.encode(RunErrorEvent(message=f"The run could not be followed: {err}"))


async def _events(
    inbox: InboxContext, handle: AgentRunHandle, translator: AguiTranslator, run_input: RunAgentInput, plan: _Plan
) -> AsyncIterator[BaseEvent | None]:
    """The AG-UI events after ``RUN_STARTED``, ending with ``RUN_FINISHED`` or ``RUN_ERROR``;
    None while nothing happens (a keep-alive)."""
    thread, run = run_input.thread_id, run_input.run_id
    # A re-attach folds the events so far without sending them, then sends what the client lacks.
    caught_up = await stream_offset(inbox.client, thread) if plan.reattach else 0
    if plan.resumed:  # calls the resume left undecided still wait: they are this run's interrupts
        waiting = await _interrupted(handle, thread, run)
        if waiting is not None:
            yield waiting
            return
    if plan.reattach and caught_up == 0:
        for produced in _caught_up(translator, run_input, plan):
            yield produced
        if plan.unsent is not None or not (translator.turn_open or translator.awaiting_turn):
            return
    async for event in with_pings(handle.events(from_offset=plan.start), PING_SECONDS):
        if event is None:
            yield None
            continue
        out = await translator.feed(event)
        if event.offset < caught_up - 1:
            continue
        if event.offset == caught_up - 1:
            out = list(_caught_up(translator, run_input, plan))
            if out and isinstance(out[-1], (RunErrorEvent, RunFinishedEvent)):
                for produced in out:
                    yield produced
                return
        for produced in out:
            yield produced
        finished = await _finished(handle, translator, event, plan, thread, run)
        if finished is not None:
            yield finished
            return
    for produced in await translator.flush_results():  # what the model got before the run failed
        yield produced
    yield RunErrorEvent(message=await _why_ended(handle), code="run_ended")


def _caught_up(translator: AguiTranslator, run_input: RunAgentInput, plan: _Plan) -> list[BaseEvent]:
    """What a re-attaching client lacks; then ``RUN_ERROR`` for a message a closed thread never got,
    or ``RUN_FINISHED`` when no turn is running and no call waits (nothing more will come)."""
    out = translator.catch_up(run_input.messages)
    thread, run = run_input.thread_id, run_input.run_id
    if plan.unsent is not None and plan.unsent not in translator.messages:
        out.append(RunErrorEvent(message=f"Thread '{thread}' has ended: it takes no new message.", code="thread_ended"))
    elif not translator.asked and not (translator.turn_open or translator.awaiting_turn):
        out.append(RunFinishedEvent(thread_id=thread, run_id=run))
    return out


async def _finished(
    handle: AgentRunHandle, translator: AguiTranslator, event: Any, plan: _Plan, thread: str, run: str
) -> BaseEvent | None:
    """The event that ends this AG-UI run after ``event``, or None to go on."""
    if event.kind == "run_ended":
        cancelled = event.data.get("exit_reason") == "cancelled"
        outcome = RunFinishedCancelledOutcome() if cancelled else None
        return RunFinishedEvent(thread_id=thread, run_id=run, outcome=outcome)
    if event.kind == "turn_ended" and (plan.target is None or event.turn >= plan.target):
        return RunFinishedEvent(thread_id=thread, run_id=run)
    if translator.asked:
        waiting = await _interrupted(handle, thread, run)
        if waiting is not None:
            return waiting
        translator.asked.clear()
    return None


async def _interrupted(handle: AgentRunHandle, thread: str, run: str) -> RunFinishedEvent | None:
    """``RUN_FINISHED`` with an interrupt per call of the run waiting for approval; None when none waits."""
    pending = await handle.pending_confirmations()
    if not pending:
        return None
    interrupts = [
        Interrupt(
            id=call.tool_call_id,
            reason="tool_approval",
            message=f"Approve {call.tool_name}({json.dumps(call.tool_params)})?",
            tool_call_id=call.tool_call_id,
            expires_at=call.expires_at.isoformat() if call.expires_at else None,
            metadata={
                "toolName": call.tool_name,
                "arguments": call.tool_params,
                "argumentsSha256": call.arguments_sha256,
            },
        )
        for call in pending
    ]
    return RunFinishedEvent(thread_id=thread, run_id=run, outcome=RunFinishedInterruptOutcome(interrupts=interrupts))


async def _why_ended(handle: AgentRunHandle) -> str:
    try:
        health = await handle.health()
    except RPCError as err:
        return f"The run's events ended: {err.message}"
    return f"The run ended ({health.status.lower()}) before its turn did" + (
        f": {health.failure}" if health.failure else "."
    )


def load_agui_agents(paths: list[str], task_queue: str) -> dict[str, AguiAgent]:
    """The agents ``--agent MODULE:ATTR`` names, by endpoint name (:func:`agui_name`).

    :raises AgentPathError: For a path that names no ``Agent``, or two paths with one name.
    """
    agents: dict[str, AguiAgent] = {}
    for path in paths:
        name = agui_name(path)
        if name in agents:
            raise AgentPathError(f"--agent {path!r}: another --agent is already served at /ag-ui/{name}.")
        agents[name] = AguiAgent(name=name, agent=load_agent(path), task_queue=task_queue)
    return agents
