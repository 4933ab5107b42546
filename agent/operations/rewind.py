"""``agent rewind RUN --to-step K``: take a run back to the start of step K with Temporal's reset.

Step K's start is the workflow task whose commands scheduled step K's model call (the
``chat_completion`` activity whose input carries ``step == K``). Temporal's reset to that task's
``WorkflowTaskCompleted`` event ends the current run and starts a new one (same run id, a new
Temporal run id) whose history is the old one up to that task; the task then runs again on the
code the workers have now: the model call of step K is made anew, and every tool call after it
runs again (nothing after the reset point is reused). The conversation is what it was when step K
began. Nothing sent to the run after that point is reapplied (Signals, Updates such as approvals
and messages, cancel requests): they were about the steps that are gone.

Reset reaches only the current Temporal run: after a continue-as-new, the steps of earlier runs
are out of reach, and the rewind is refused, naming the steps it can reach.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime

from temporalio.api.common.v1 import WorkflowExecution
from temporalio.api.enums.v1 import ResetReapplyExcludeType
from temporalio.api.workflowservice.v1 import ResetWorkflowExecutionRequest
from temporalio.client import Client
from temporalio.service import RPCError, RPCStatusCode

from agent.run_history import HistoryDecoder

#: What a reset does not reapply from the discarded part of the history.
NOT_REAPPLIED = (
    ResetReapplyExcludeType.RESET_REAPPLY_EXCLUDE_TYPE_SIGNAL,
    ResetReapplyExcludeType.RESET_REAPPLY_EXCLUDE_TYPE_UPDATE,
    ResetReapplyExcludeType.RESET_REAPPLY_EXCLUDE_TYPE_CANCEL_REQUEST,
)


class RewindRefused(ValueError):
    """The rewind cannot be done; the message says why and what can be done instead."""


@dataclass
class StepStart:
    """Where one step began in the current run.

    :param step: The step (``step_count`` when it began; the first step of a turn is 0).
    :param turn: The turn it belongs to (1 for a run that is not a session).
    :param reset_event_id: The ``WorkflowTaskCompleted`` event that scheduled its model call.
    :param at: When its model call was scheduled.
    """

    step: int
    turn: int
    reset_event_id: int
    at: datetime | None


@dataclass
class RunSteps:
    """The steps of a run's current Temporal run, from its history.

    :param run_id: The run id (workflow id).
    :param temporal_run_id: The current Temporal run.
    :param status: Temporal's status name.
    :param steps: Each agent step's start, in history order.
    :param continuation: How many times the run had continued as new before this run (0: none).
    :param continued_at: ``(turn, step)`` where this run took over after a continue-as-new.
    :param session: True for a run with turns (``wait_for_user``).
    :param expired: True when the run's execution timeout has passed (a reset run keeps it).
    """

    run_id: str
    temporal_run_id: str
    status: str
    steps: list[StepStart] = field(default_factory=list)
    continuation: int = 0
    continued_at: tuple[int, int] | None = None
    session: bool = False
    expired: bool = False

    def reachable(self, turn: int) -> str:
        """The steps of ``turn`` a rewind can reach, in words."""
        numbers = [s.step for s in self.steps if s.turn == turn]
        if not numbers:
            return "none"
        return f"step {numbers[0]}" if len(numbers) == 1 else f"steps {min(numbers)} to {max(numbers)}"


@dataclass
class Rewound:
    """A rewind that was done.

    :param run_id: The run id (workflow id).
    :param step: The step the run went back to the start of.
    :param turn: Its turn.
    :param reason: The reason recorded in the new run's history.
    :param from_temporal_run_id: The Temporal run that was reset (now terminated by Temporal).
    :param temporal_run_id: The new Temporal run, going on from step ``step``.
    :param reset_event_id: The event it was reset to.
    :param status_before: The run's status before (``RUNNING``, ``COMPLETED``, ``FAILED``, ...).
    """

    run_id: str
    step: int
    turn: int
    reason: str
    from_temporal_run_id: str
    temporal_run_id: str
    reset_event_id: int
    status_before: str


async def read_steps(client: Client, run_id: str, temporal_run_id: str | None = None) -> RunSteps:
    """The current Temporal run of ``run_id`` (or ``temporal_run_id``) and where each of its agent
    steps began.

    :raises temporalio.service.RPCError: NOT_FOUND when there is no such run.
    """
    description = await client.get_workflow_handle(run_id, run_id=temporal_run_id).describe()
    raw = description.raw_description.workflow_extended_info
    expires = (
        raw.execution_expiration_time.ToDatetime(tzinfo=UTC) if raw.HasField("execution_expiration_time") else None
    )
    found = RunSteps(
        run_id=run_id,
        temporal_run_id=description.run_id,
        status=description.status.name if description.status else "UNKNOWN",
        expired=expires is not None and expires.year > 1970 and expires <= datetime.now(UTC),
    )
    decoder = HistoryDecoder(client.data_converter)
    turn, counted = 1, 0  # counted: agent calls in the turn so far (histories without a step marker)
    handle = client.get_workflow_handle(run_id, run_id=description.run_id)
    async for event in handle.fetch_history_events():
        for item in await decoder.decode_all(event):
            if item.kind == "run_started" and item.run_input is not None:
                found.session = item.run_input.wait_for_user_seconds is not None
                snapshot = item.run_input.snapshot
                if snapshot is not None:
                    found.continuation = snapshot.continuations
                    counted = int(snapshot.state.get("step_count") or 0)
                    turn = snapshot.session.turn if snapshot.session is not None else 1
                    found.continued_at = (turn, counted)
            elif item.kind == "turn_started" and item.turn is not None:
                if item.turn != turn:
                    turn, counted = item.turn, 0
            elif item.kind == "model_called" and item.model_input is not None and item.model_input.purpose == "agent":
                step = item.model_input.step if item.model_input.step is not None else counted
                found.steps.append(StepStart(step, turn, item.scheduled_by, item.at))
                counted = step + 1
    return found


def rewind_point(steps: RunSteps, to_step: int, turn: int | None = None) -> StepStart:
    """Step ``to_step``'s start in ``turn`` (default: the latest turn of the current run).

    :raises RewindRefused: When the step is not in the current run (an earlier run after a
        continue-as-new, or not reached yet), or the run cannot be reset usefully.
    """
    run = steps.run_id
    if to_step < 0:
        raise RewindRefused(f"--to-step must be 0 or more (the first step of a turn is 0), not {to_step}")
    if steps.expired:
        raise RewindRefused(
            f"run {run} is {steps.status.lower()} and its execution timeout has passed; a reset run keeps that "
            "timeout and would time out at once. Start a new run instead."
        )
    earlier = (
        f"it continued as new (continuation {steps.continuation}) at step {steps.continued_at[1]}"
        + (f" of turn {steps.continued_at[0]}" if steps.session else "")
        if steps.continued_at is not None
        else ""
    )
    if not steps.steps:
        before = f" since {earlier}" if earlier else ""
        raise RewindRefused(
            f"run {run} has made no model call in its current run{before}; there is no step to rewind to."
        )
    turns = sorted({s.turn for s in steps.steps})
    wanted_turn = turns[-1] if turn is None else turn
    if wanted_turn not in turns:
        if wanted_turn < turns[0] and earlier:
            raise RewindRefused(
                f"turn {wanted_turn} of run {run} is in an earlier Temporal run: {earlier}, and Temporal's reset "
                f"reaches only the current run (turns {turns[0]} to {turns[-1]})."
            )
        raise RewindRefused(
            f"run {run} has no turn {wanted_turn} in its current run (turns {turns[0]} to {turns[-1]})."
        )
    in_turn = [s for s in steps.steps if s.turn == wanted_turn]
    of_turn = f" of turn {wanted_turn}" if steps.session else ""
    for start in in_turn:
        if start.step == to_step:
            return start
    reachable = steps.reachable(wanted_turn)
    if to_step < in_turn[0].step:
        why = (
            f"it ran before the run continued as new ({earlier}), and Temporal's reset reaches only the current run"
            if earlier and steps.continued_at is not None and steps.continued_at[0] == wanted_turn
            else "the current run does not hold it"
        )
        raise RewindRefused(
            f"step {to_step}{of_turn} of run {run} is out of reach: {why}; it can rewind to {reachable}."
        )
    raise RewindRefused(
        f"run {run} has not reached step {to_step}{of_turn} (its last step is {in_turn[-1].step}); it can rewind to {reachable}."
    )


def _reason_text(start: StepStart, reason: str, session: bool) -> str:
    return f"rewind to step {start.step}" + (f" of turn {start.turn}" if session else "") + f": {reason}"


async def rewind(client: Client, run_id: str, to_step: int, reason: str, turn: int | None = None) -> Rewound:
    """Reset ``run_id`` to the start of step ``to_step`` of its current run; it goes on from there.

    :param client: A client of the run's namespace (``agent.connect``).
    :param run_id: The run id (workflow id).
    :param to_step: The step (``step_count`` when it began; 0 is a turn's first step).
    :param reason: Why (recorded in the new run's history; ``agent watch`` and the inbox show it).
    :param turn: For a session, the turn (default: the latest in the current run).
    :raises ValueError: For an empty ``reason``.
    :raises RewindRefused: When step ``to_step`` is not in the current run, or Temporal refuses.
    :raises temporalio.service.RPCError: NOT_FOUND when there is no such run.
    """
    if not reason or not reason.strip():
        raise ValueError("--reason is required: say why the run is rewound (it is kept in the run's history)")
    steps = await read_steps(client, run_id)
    start = rewind_point(steps, to_step, turn)
    text = _reason_text(start, reason.strip(), steps.session)
    request = ResetWorkflowExecutionRequest(
        namespace=client.namespace,
        workflow_execution=WorkflowExecution(workflow_id=run_id, run_id=steps.temporal_run_id),
        reason=text,
        workflow_task_finish_event_id=start.reset_event_id,
        request_id=str(uuid.uuid4()),
        reset_reapply_exclude_types=list(NOT_REAPPLIED),
        identity=client.identity,
    )
    try:
        response = await client.workflow_service.reset_workflow_execution(request)
    except RPCError as err:
        if err.status == RPCStatusCode.NOT_FOUND:
            raise
        raise RewindRefused(f"Temporal refused to reset run {run_id} to step {to_step}: {err.message}") from err
    return Rewound(
        run_id=run_id,
        step=start.step,
        turn=start.turn,
        reason=text,
        from_temporal_run_id=steps.temporal_run_id,
        temporal_run_id=response.run_id,
        reset_event_id=start.reset_event_id,
        status_before=steps.status,
    )
