"""The run loop's turns and its clean cancel (DESIGN.md "Conversations"), a part of ``AgentWorkflow``.

A run is one turn, or a session's turns: each turn is one Haystack ``Agent.run`` over the
conversation so far (``before_run``, steps, ``after_run``); between turns a session waits for the
user's next message (``wait_for_user``) and may continue as new. A cancel (Update ``cancel_run`` or
Temporal's own) interrupts the turns wherever they are and ends the run through
:meth:`ConversationTurns._after_cancel`. Deterministic workflow code only.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

from temporalio import workflow
from temporalio.exceptions import ActivityError, is_cancelled_exception

with workflow.unsafe.imports_passed_through():
    from core.payloads import EXIT_CANCELLED, EXIT_IDLE, AgentRunInput, AgentRunResult, TurnResult
    from core.spec import AFTER_RUN, AFTER_TOOL, BEFORE_RUN, BEFORE_TOOL, AgentSpec
    from core.state import replace_values
    from workflows.conversation import cancelled_tool_results
    from workflows.failures import EXIT_MAX_STEPS

#: The reason of a cancel that came without one (Temporal's own cancel: the UI, ``temporal workflow cancel``).
DEFAULT_CANCEL_REASON = "cancelled through Temporal (no reason given)"
#: How long a run started without messages and without ``wait_for_user`` waits for its first message.
FIRST_MESSAGE_TIMEOUT = timedelta(minutes=5)


class ConversationTurns:
    """The turns and the cancel of :class:`~workflows.agent_workflow.AgentWorkflow` (a mixin: it
    uses the workflow's run context, conversation, steps and hooks)."""

    def _request_cancel(self, reason: str) -> None:
        """Interrupt the turns wherever they are; the run then ends as cancelled (first reason wins)."""
        if self._cancel_reason is None:
            self._cancel_reason = reason
        if self._body is not None and not self._body.done():
            self._body.cancel(self._cancel_reason)  # the reason reaches the run's children (workflows/children.py)

    def _raise_if_cancelled(self) -> None:
        """At a step boundary: raise ``asyncio.CancelledError`` when a cancel has been accepted.

        Cancelling the body task is not enough on its own: when the cancel and the awaited
        activity's result come in the same workflow task, the SDK lets the result win (the
        activity is already done, nothing is left to cancel) and the body would go on to schedule
        the reply's tool calls. So the loop checks before each thing it starts.
        """
        if self._cancel_reason is not None or workflow.cancellation_reason() is not None:
            raise asyncio.CancelledError(self._cancel_reason or workflow.cancellation_reason())

    @staticmethod
    async def _uninterruptible(step: Any) -> Any:
        """Await ``step`` to its end even if Temporal cancels the run meanwhile (clean-up must finish)."""
        task = asyncio.ensure_future(step)
        while True:
            try:
                return await asyncio.shield(task)
            except asyncio.CancelledError:
                if task.done():
                    return task.result()

    async def _finish(self, agent: AgentSpec) -> AgentRunResult:
        context = self._require_context()
        chat = self._require_chat()
        chat.closed = True
        if chat.inbox:  # accepted while the last turn ran out of steps: kept in the conversation
            context.state.set("messages", chat.take())
        self._done = True
        context.phase = "done"
        self.live.publish("run_ended", {"exit_reason": context.state.data.get("exit_reason")}, in_step=False)
        self.live.close()
        # Let in-flight Update handlers reply before the workflow completes.
        if not workflow.all_handlers_finished():
            await workflow.wait_condition(workflow.all_handlers_finished)
        return self._result(agent)

    async def _turns(self, agent: AgentSpec, run_input: AgentRunInput) -> None:
        """The run's turns: one, or a session's turns until ``wait_for_user`` passes with no message."""
        chat = self._require_chat()
        snapshot = run_input.snapshot
        if snapshot is None:
            begin, need_message = True, not any(m.role.value == "user" for m in run_input.messages)
        else:
            begin = need_message = chat.between_turns
        while True:
            if need_message:
                if not await self._wait_for_user(run_input):
                    self._require_context().state.set("exit_reason", EXIT_IDLE)
                    return
            await self._turn(agent, begin)
            if not chat.session:
                return
            begin = need_message = True
            if self._should_continue_as_new(agent) or self._upgrade_due(agent):
                await self._continue_as_new(agent, run_input, between_turns=True)

    async def _wait_for_user(self, run_input: AgentRunInput) -> bool:
        """Wait for a message to start the next turn; False when ``wait_for_user`` passed without one."""
        chat = self._require_chat()
        context = self._require_context()
        if chat.inbox:
            got = True
        else:
            seconds = run_input.wait_for_user_seconds
            timeout = timedelta(seconds=seconds) if seconds is not None else FIRST_MESSAGE_TIMEOUT
            context.phase = "waiting_for_user"
            if chat.session:
                messages = context.state.data["messages"]
                chat.set_waiting(True, messages[-1] if messages else None)
            try:
                await workflow.wait_condition(lambda: bool(chat.inbox), timeout=timeout)
                got = True
            except TimeoutError:
                got = False
            if chat.session:  # (a cancel clears it in _after_cancel)
                chat.set_waiting(False)
        if got and chat.turn_results and self._upgrade_due(self._require_context().agent):
            # The message is carried in the snapshot's inbox; the new run, on the current build, answers it.
            await self._continue_as_new(self._require_context().agent, run_input, between_turns=True)
        if got and chat.turn_results and chat.turn_results[-1].turn == chat.turn:
            chat.turn += 1
            chat.turn_begun = False
            state = context.state
            for key, value in (("step_count", 0), ("exit_reason", None), ("stop_run", None), ("continue_run", False)):
                state.set(key, value, handler_override=replace_values)
        return got

    async def _turn(self, agent: AgentSpec, begin: bool) -> None:
        """One Haystack ``Agent.run`` over the conversation so far: before_run, steps, after_run."""
        chat = self._require_chat()
        state = self._require_context().state
        self._raise_if_cancelled()  # a turn that has not begun does not begin
        chat.in_turn = chat.turn_begun = True
        self.live.publish("turn_started", in_step=False)
        if begin:
            if chat.inbox:
                state.set("messages", chat.take())
            await self._run_hooks(BEFORE_RUN)
        while state.data.get("step_count", 0) < agent.max_agent_steps:
            if not await self._step():
                # A message that came during the last step is answered in this turn, while steps remain.
                if (
                    chat.inbox
                    and state.data.get("stop_run") is None
                    and state.data["step_count"] < agent.max_agent_steps
                ):
                    continue
                break
            if state.data["step_count"] < agent.max_agent_steps and self._should_continue_as_new(agent):
                await self._continue_as_new(agent, self._run_input, between_turns=False)
        else:
            # Steps exhausted: on_exit does not run.
            state.set("exit_reason", EXIT_MAX_STEPS)
        self._raise_if_cancelled()  # a cancel an on_exit hook's activity absorbed
        chat.in_turn = False
        if not chat.session:
            chat.closed = True
        await self._run_hooks(AFTER_RUN)
        self._end_turn(state.data.get("exit_reason"))

    def _end_turn(self, exit_reason: str | None) -> None:
        data = self._require_context().state.data
        messages = data["messages"]
        self.live.publish(
            "turn_ended", {"exit_reason": exit_reason, "step_count": data.get("step_count", 0)}, in_step=False
        )
        self._require_chat().finish_turn(
            TurnResult(
                turn=self._require_chat().turn,
                last_message=messages[-1] if messages else None,
                exit_reason=exit_reason,
                step_count=data.get("step_count", 0),
            )
        )

    @staticmethod
    def _upgrade_due(agent: AgentSpec) -> bool:
        """Whether a session that moves at turn boundaries should move now: Temporal says the task
        queue's target build (current or ramping) is no longer the one this run is pinned to. The
        flag is refreshed with each workflow task, so a session parked on its user learns it when
        the next message arrives (Temporal server 1.32 sets it with no extra configuration, about a
        second after a promote; docs/operations.md)."""
        return agent.upgrade_at_turn_boundary and workflow.info().is_target_worker_deployment_version_changed()

    async def _continue_as_new(self, agent: AgentSpec, run_input: AgentRunInput, between_turns: bool) -> None:
        self._raise_if_cancelled()
        self.live.close()  # subscribers' waiting polls return and follow to the next run
        if not workflow.all_handlers_finished():
            await workflow.wait_condition(workflow.all_handlers_finished)
        # Between turns a session that moves at turn boundaries starts its next run on the target
        # build (Temporal's upgrade on continue-as-new); within a turn, and otherwise, it stays pinned.
        upgrade = between_turns and agent.upgrade_at_turn_boundary
        workflow.continue_as_new(
            self._snapshot_input(agent, run_input, between_turns),
            initial_versioning_behavior=workflow.ContinueAsNewVersioningBehavior.AUTO_UPGRADE if upgrade else None,
        )

    async def _after_cancel(self, reason: str) -> None:
        """End the run cleanly: close waiting requests as cancelled, give every call a result,
        run after_tool when the cancel came between before_tool and after_tool (so the hooks that
        pair the two, such as the audit, see the step's calls answered), and after_run when a turn
        was under way; ``close`` follows in :meth:`run`."""
        self._cancel_reason = reason
        context = self._require_context()
        interrupted = context.phase
        chat = self._require_chat()
        chat.closed = True
        if chat.session:
            chat.set_waiting(False)
        context.cancel_pending(reason)
        state = context.state
        missing = cancelled_tool_results(state.data["messages"], self._finished_tool_results, reason)
        if missing:
            state.set("messages", missing)
        state.set("exit_reason", EXIT_CANCELLED)
        if chat.in_turn and interrupted in (BEFORE_TOOL, "tools"):
            await self._run_hooks(AFTER_TOOL)
        if chat.in_turn:
            chat.in_turn = False
            await self._run_hooks(AFTER_RUN)
            state.set("exit_reason", EXIT_CANCELLED)
            self._end_turn(EXIT_CANCELLED)

    @staticmethod
    async def _cancellable(activity: Any) -> Any:
        """Await an activity; its cancellation (the run's cancel reached it) is raised as
        ``asyncio.CancelledError``, which the run loop turns into a clean cancelled end."""
        try:
            return await activity
        except ActivityError as err:
            if is_cancelled_exception(err):
                raise asyncio.CancelledError() from err
            raise
