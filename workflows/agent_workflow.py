"""``AgentWorkflow``: the agent's run loop, in the order and precedence of Haystack 3.x.

Deterministic code only: the model call and each tool call are activities; hooks are awaited
in place. See DESIGN.md "The run loop" for the rules this file implements.
"""

from __future__ import annotations

import asyncio
import sys
from typing import Any

from temporalio import workflow
from temporalio.exceptions import (
    ActivityError,
    ApplicationError,
    is_cancelled_exception,
)

with workflow.unsafe.imports_passed_through():
    from activities.model import ModelCallInput, call_model
    from activities.tool_invocation import OffloadInstruction, ToolInvocationInput
    from core.messages import ChatMessage, ToolCall
    from core.payloads import (
        MAX_CANCEL_REASON_CHARS,
        AgentRunInput,
        AgentRunResult,
        CancelRequest,
        MessageReceipt,
        RunSnapshot,
        RunStatus,
        TurnResult,
        UserMessage,
        add_usage,
    )
    from core.sandbox_refusal import sandbox_refusal_message
    from core.spec import AFTER_TOOL, BEFORE_LLM, BEFORE_TOOL, ON_EXIT, AgentSpec
    from core.state import replace_values
    from core.wire import (
        AGENT_SPEC_ERROR,
        CANCEL_RUN_UPDATE,
        MESSAGE_REFUSED,
        RUN_STATUS_QUERY,
        SEND_MESSAGE_UPDATE,
        TURN_RESULT_QUERY,
        USER_MESSAGE_SIGNAL,
        WORKFLOW_TYPE,
    )
    from hooks import lifecycle
    from hooks.context import RunContext
    from hooks.family import register_family_handlers
    from hooks.protocol import TASK_RETRYING_ERRORS, HasMemory, OffloadsInToolActivity
    from workflows.conversation import Conversation, MessageRefused
    from workflows.failures import (
        EXIT_TEXT,
        hook_failure,
        initial_state,
        model_call_failure,
        model_exit_reason,
    )
    from workflows.live import RunEvents
    from workflows.mcp_tools import RunMCPTools
    from workflows.spans import hook_point_span, hook_span, model_call_span, run_span, tool_call_span
    from workflows.stored_conversation import StoredConversation
    from workflows.tool_dispatch import exit_condition_tool, refusal, run_tool_call
    from workflows.turns import DEFAULT_CANCEL_REASON, ConversationTurns


@workflow.defn(name=WORKFLOW_TYPE)
class AgentWorkflow(ConversationTurns):
    """One agent run. Workflow id = run id.

    Its ``run_context`` is the run's :class:`~hooks.context.RunContext`, which hooks and the hook
    families' handlers reach through ``hooks.context.current_run()`` (see that module). Each family
    registers its Signal, Update and Query handlers when the run starts
    (``HookFamily.register_handlers``).
    """

    @workflow.init
    def __init__(self, run_input: AgentRunInput) -> None:
        self.run_context: RunContext | None = None
        self._done = False
        self._continuations = 0
        self._conversation = StoredConversation()
        self.live = RunEvents(run_input.stream_state, self)
        # Made here, not in run(): a message sent with the start (update-with-start) is handled
        # before run() begins, and Temporal does not hold Updates for handlers registered later.
        snapshot = run_input.snapshot
        self.chat = Conversation(
            run_input.agent.get("participants"),
            session=run_input.wait_for_user_seconds is not None,
            snapshot=snapshot.session if snapshot else None,
        )
        self.chat.on_accept = self.live.message_received
        self._cancel_reason: str | None = None
        self._body: asyncio.Task[None] | None = None
        #: Results of this step's tool calls whose activity has completed, by call id.
        self._finished_tool_results: dict[str, ChatMessage] = {}
        self._mcp = RunMCPTools()

    # -- queries -----------------------------------------------------------------------------

    @workflow.query(name=RUN_STATUS_QUERY)
    def run_status(self) -> RunStatus:
        """Where the run is: step, phase, approvals pending, exit reason once done."""
        context = self.run_context
        if context is None:
            return RunStatus(run_id=workflow.info().workflow_id, step_count=0, phase="starting")
        pending = context.pending_count()
        data = context.state.data
        return RunStatus(
            run_id=context.run_id,
            step_count=data.get("step_count", 0),
            phase=context.phase,
            waiting_for_approval=pending > 0,
            pending_confirmations=pending,
            exit_reason=data.get("exit_reason") if self._done else None,
            done=self._done,
            token_usage=data.get("token_usage") or {},
            hook_token_usage=context.hook_token_usage,
            continuations=self._continuations,
            turn=self.chat.turn if self.chat else 1,
            waiting_for_user=bool(self.chat and self.chat.waiting_for_user),
        )

    @workflow.query(name=TURN_RESULT_QUERY)
    def turn_result(self, turn: int) -> TurnResult | None:
        """The finished turn ``turn`` (None while it runs or before it begins)."""
        return self.chat.result_of(turn) if self.chat else None

    # -- conversation handlers (DESIGN.md "Conversations") -------------------------------------

    @workflow.update(name=SEND_MESSAGE_UPDATE)
    def send_message(self, message: UserMessage) -> MessageReceipt:
        """Accept a message for the next step boundary (or the next turn); returns its receipt."""
        try:
            self.check_message(message)
            return self._require_chat().accept(message)
        except MessageRefused as err:
            raise ApplicationError(str(err), type=MESSAGE_REFUSED, non_retryable=True) from err

    @send_message.validator
    def check_message(self, message: UserMessage) -> None:
        """Refuse before history: a closed or cancelling run, empty or too long text, a sender not allowed."""
        if self._cancel_reason is not None:
            raise MessageRefused(f"The run is being cancelled ({self._cancel_reason}); it accepts no more messages.")
        self._require_chat().check(message)

    @workflow.signal(name=USER_MESSAGE_SIGNAL)
    def user_message(self, message: UserMessage) -> None:
        """Fire-and-forget message; a refused one is logged and ignored."""
        try:
            self.check_message(message)
            self._require_chat().accept(message)
        except MessageRefused as err:
            workflow.logger.warning("Ignored user_message signal (sender %s): %s", message.sender, err)

    @workflow.update(name=CANCEL_RUN_UPDATE)
    def cancel_run(self, request: CancelRequest) -> RunStatus:
        """End the run as cancelled (see :meth:`_after_cancel`); returns the status as the request left it."""
        self._request_cancel(request.reason or "cancelled by the user (no reason given)")
        return self.run_status()

    @cancel_run.validator
    def check_cancel(self, request: CancelRequest) -> None:
        """Refuse to cancel a run that has finished, or with a reason over MAX_CANCEL_REASON_CHARS."""
        if request.reason is not None and len(request.reason) > MAX_CANCEL_REASON_CHARS:
            raise MessageRefused(
                f"The cancel reason is {len(request.reason):,} characters; the limit is {MAX_CANCEL_REASON_CHARS:,}."
            )
        if self._done:
            raise MessageRefused(f"Run {workflow.info().workflow_id} has already finished; there is nothing to cancel.")

    def _require_chat(self) -> Conversation:
        if self.chat is None:
            raise MessageRefused("The run has not started yet; send the message again.")
        return self.chat

    # -- the run -----------------------------------------------------------------------------

    @workflow.run
    async def run(self, run_input: AgentRunInput) -> AgentRunResult:
        register_family_handlers()
        try:
            agent = AgentSpec.from_dict(run_input.agent)
        except Exception as err:
            # The spec was checked when the Agent was built; failing here means the worker cannot
            # import what the client could: the sandbox refused a hook module (an Agent built
            # before that check), or a module is missing or of another version.
            why = sandbox_refusal_message(err) or (
                f"{type(err).__name__}: {err}. Install the hooks' modules on every worker of the task queue."
            )
            raise ApplicationError(
                f"This worker cannot rebuild the run's agent: {why}",
                type=AGENT_SPEC_ERROR,
                non_retryable=True,
            ) from err
        await self._mcp.list_tools(agent)  # once per run, recorded: a replay never reconnects
        state = initial_state(agent, run_input)
        snapshot = run_input.snapshot
        context = RunContext(
            run_id=workflow.info().workflow_id,
            agent=agent,
            state=state,
            hook_token_usage=dict(snapshot.hook_token_usage) if snapshot else {},
            parent_run_id=parent.workflow_id if (parent := workflow.info().parent) else None,
            publish=self.live.publish,
        )
        self.run_context = context
        hooks = agent.distinct_hooks()
        with run_span(context.run_id, agent.model, snapshot.continuations if snapshot else 0):
            for hook in hooks:
                await self._lifecycle(hook, "warm_up", lifecycle.warm_up_async)
            try:
                return await self._run(agent, run_input)
            finally:
                for hook in hooks:
                    await self._lifecycle(hook, "close", lifecycle.close_async)

    async def _lifecycle(self, hook: Any, stage: str, step: Any) -> None:
        """Await ``step(hook)`` (its ``warm_up``/``close``, async variant first); its error ends the run."""
        try:
            await step(hook)
        except TASK_RETRYING_ERRORS:
            raise
        except Exception as err:
            step = self._require_context().state.data.get("step_count", 0)
            raise hook_failure(hook, stage, step, err) from err

    async def _run(self, agent: AgentSpec, run_input: AgentRunInput) -> AgentRunResult:
        context = self._require_context()
        state = context.state
        self._run_input = run_input
        snapshot = run_input.snapshot
        if snapshot is not None:
            self._continuations = snapshot.continuations
            if snapshot.conversation is not None:
                count = snapshot.conversation[0]
                self._conversation = StoredConversation(state.data["messages"][:count], snapshot.conversation)
            self._restore_hook_memory(agent, snapshot.hook_memory)
        self._body = asyncio.ensure_future(self._turns(agent, run_input))
        if self._cancel_reason is not None:  # cancel_run came with the run's first task
            self._body.cancel()
        try:
            await self._body
        except (asyncio.CancelledError, ActivityError):
            if not is_cancelled_exception(sys.exc_info()[1]):
                raise
            task = asyncio.current_task()
            if task is not None and task.cancelling():
                task.uncancel()  # Temporal's own cancel: handled here, the run goes on to clean up
            reason = self._cancel_reason or workflow.cancellation_reason() or DEFAULT_CANCEL_REASON
            await self._uninterruptible(self._after_cancel(reason))
        return await self._uninterruptible(self._finish(agent))

    async def _step(self) -> bool:
        """One step: model call, then tools. Returns False when the run should stop."""
        context = self._require_context()
        agent, state = context.agent, context.state
        self._raise_if_cancelled()
        if (chat := self._require_chat()).inbox:  # delivered at the step boundary, in arrival order
            state.set("messages", chat.take())
        state.set("tools", list(agent.tool_specs), handler_override=replace_values)
        self.live.publish("step_started")
        await self._run_hooks(BEFORE_LLM)
        if (reason := state.data.get("stop_run")) is not None:
            state.set("exit_reason", reason)
            return False

        context.phase = "model"
        sent = state.data["messages"]
        head, tail = self._conversation.request(sent)
        request = ModelCallInput(
            model=agent.model,
            messages=tail,
            conversation_head=head,
            tools=agent.tool_specs,
            settings=agent.model_settings,
            step=state.data["step_count"],
            live=self.live.token_stream(agent),
        )
        try:
            with model_call_span(agent.model):
                output = await call_model(request, retry_timeout=agent.model_retry_timeout)
        except ActivityError as err:
            if is_cancelled_exception(err):
                raise asyncio.CancelledError() from err
            raise model_call_failure(err, agent.model_retry_timeout) from err
        reply = output.message
        self.live.model_reply(reply)
        self._conversation.record(sent, reply, output.conversation_head, output.conversation_covers_reply)
        state.set("messages", [reply])
        if isinstance(usage := reply.meta.get("usage"), dict):
            state.set("token_usage", add_usage(state.data.get("token_usage") or {}, usage))
            if context_tokens := usage.get("prompt_tokens", 0) + usage.get("completion_tokens", 0):
                state.set("context_tokens", context_tokens)
        self._raise_if_cancelled()  # the reply and the cancel may come in one workflow task

        exit_reason = model_exit_reason(reply)
        if not agent.tool_specs or exit_reason is not None:
            state.set("step_count", state.data["step_count"] + 1)
            state.set("exit_reason", exit_reason or EXIT_TEXT)
            return await self._continue_after_exit_hooks()

        await self._run_hooks(BEFORE_TOOL)
        # A before_tool hook may have removed or changed the calls: re-read the last message.
        last = state.data["messages"][-1] if state.data["messages"] else None
        calls = list(last.tool_calls) if last is not None else []
        context.phase = "tools"
        tool_messages = await self._run_tools(calls)
        self._finished_tool_results = {}
        state.set("messages", tool_messages)
        if tool_messages:
            counts = dict(state.data.get("tool_call_counts") or {})
            for message in tool_messages:
                name = message.tool_call_result.origin.tool_name
                counts[name] = counts.get(name, 0) + 1
            state.set("tool_call_counts", counts)
        await self._run_hooks(AFTER_TOOL)
        self._raise_if_cancelled()

        state.set("step_count", state.data["step_count"] + 1)
        exit_tool = exit_condition_tool(agent, calls, tool_messages)
        if exit_tool is not None:
            state.set("exit_reason", exit_tool)
            return await self._continue_after_exit_hooks()
        return True

    async def _continue_after_exit_hooks(self) -> bool:
        """Run on_exit hooks; a hook that sets ``continue_run`` keeps the loop going."""
        context = self._require_context()
        if not context.agent.hooks.get(ON_EXIT):
            return False
        context.state.set("continue_run", False)
        await self._run_hooks(ON_EXIT)
        keep_going = bool(context.state.data.get("continue_run"))
        context.state.set("continue_run", False)
        return keep_going

    # -- tools -------------------------------------------------------------------------------

    async def _run_tools(self, calls: list[ToolCall]) -> list[ChatMessage]:
        """Run the step's calls concurrently (bounded); results come back in call order."""
        context = self._require_context()
        agent = context.agent
        step = context.state.data["step_count"]
        bound = asyncio.Semaphore(agent.max_concurrent_tool_calls)

        async def run_one(index: int, call: ToolCall) -> ChatMessage:
            if (refused := refusal(agent, call)) is not None:
                return refused
            spec = agent.tool_spec(call.tool_name)
            request = ToolInvocationInput(
                run_id=context.run_id,
                tool_call=call,
                call_key=call.id or f"step{step}-call{index}",
                step=step,
                offload=self._offload_instruction(call, index),
            )
            async with bound:
                self._raise_if_cancelled()  # no tool starts once a cancel is accepted
                self.live.tool_started(call)
                async with tool_call_span(call, step):
                    output = await self._cancellable(run_tool_call(agent, spec, request, self._mcp))
            message = ChatMessage.from_tool(output.result, origin=call, error=output.error, meta=output.meta)
            self.live.tool_finished(call, output.result, output.error)
            if call.id is not None:
                self._finished_tool_results[call.id] = message
            return message

        # return_exceptions: a cancel waits for every call's activity to acknowledge it.
        outcomes = await asyncio.gather(*(run_one(i, c) for i, c in enumerate(calls)), return_exceptions=True)
        for outcome in outcomes:
            if isinstance(outcome, BaseException):
                raise outcome
        return list(outcomes)

    def _offload_instruction(self, call: ToolCall, position: int) -> OffloadInstruction | None:
        """Whether the tool activity writes this call's result to a store itself (the instruction).

        after_tool hooks see results in registration order, so only the first
        ``OffloadsInToolActivity`` hook is asked, with the hooks registered before it; it answers
        None when one of them reads results (hooks/protocol.py, "Tool results and hook order").
        Replay never depends on the answer: it only shapes the activity's input, and the steps
        after the call read the result recorded in history.
        """
        context = self._require_context()
        hooks = context.agent.hooks.get(AFTER_TOOL, [])
        for index, hook in enumerate(hooks):
            if isinstance(hook, OffloadsInToolActivity):
                return hook.activity_offload(
                    context.state, call.tool_name, call.id, position, hooks_before=hooks[:index]
                )
        return None

    # -- hooks -------------------------------------------------------------------------------

    async def _run_hooks(self, point: str) -> None:
        """Run ``point``'s hooks in order. A hook's own error ends the run (see :func:`hook_failure`)."""
        context = self._require_context()
        context.phase = point
        hooks = context.agent.hooks.get(point, [])
        with hook_point_span(point, len(hooks)):
            for hook in hooks:
                run_async = getattr(hook, "run_async", None)
                try:
                    with hook_span(hook, point):
                        if run_async is not None:
                            await run_async(context.state)
                        else:
                            hook.run(context.state)
                except TASK_RETRYING_ERRORS:
                    raise
                except Exception as err:
                    if is_cancelled_exception(err):  # the hook's activity was cancelled with the run
                        raise asyncio.CancelledError() from err
                    raise hook_failure(hook, point, context.state.data.get("step_count", 0), err) from err

    @staticmethod
    def _hooks_with_memory(agent: AgentSpec) -> dict[str, HasMemory]:
        return {
            f"{point}/{index}": hook
            for point, hooks in agent.hooks.items()
            for index, hook in enumerate(hooks)
            if isinstance(hook, HasMemory)
        }

    def _restore_hook_memory(self, agent: AgentSpec, memory: dict[str, Any]) -> None:
        for key, hook in self._hooks_with_memory(agent).items():
            if key in memory:
                hook.restore(memory[key])

    # -- state, continue-as-new, result ------------------------------------------------------

    def _should_continue_as_new(self, agent: AgentSpec) -> bool:
        info = workflow.info()
        return (
            info.is_continue_as_new_suggested()
            or info.get_current_history_length() >= agent.continue_as_new_after_events
        )

    def _snapshot_input(self, agent: AgentSpec, run_input: AgentRunInput, between_turns: bool) -> AgentRunInput:
        state = self._require_context().state
        data = {k: v for k, v in state.data.items() if k != "tools"}
        # Carry only a stored prefix the messages still start with: a hook may have rewritten the
        # stored reply since (a confirmation that modified a call), and the next run cannot tell.
        head, tail = self._conversation.request(state.data["messages"])
        snapshot = RunSnapshot(
            state=data,
            hook_memory={key: hook.snapshot() for key, hook in self._hooks_with_memory(agent).items()},
            hook_token_usage=self._require_context().hook_token_usage,
            continuations=self._continuations + 1,
            conversation=None if head is None else (len(state.data["messages"]) - len(tail), head),
            session=self._session_snapshot(run_input, between_turns),
        )
        return AgentRunInput(
            agent=run_input.agent,
            hook_context=run_input.hook_context,
            snapshot=snapshot,
            wait_for_user_seconds=run_input.wait_for_user_seconds,
            last_message_only=run_input.last_message_only,
            stream_state=self.live.carried_state(),
        )

    def _session_snapshot(self, run_input: AgentRunInput, between_turns: bool) -> Any:
        """The conversation's part of the snapshot; None for a run that never got a message."""
        chat = self._require_chat()
        if run_input.wait_for_user_seconds is None and not chat.receipts and chat.turn == 1 and not chat.turn_results:
            return None
        return chat.snapshot(between_turns)

    def _result(self, agent: AgentSpec) -> AgentRunResult:
        data = self._require_context().state.data
        messages = data["messages"]
        return AgentRunResult(
            messages=messages[-1:] if self._run_input.last_message_only else messages,
            last_message=messages[-1] if messages else None,
            exit_reason=data.get("exit_reason"),
            step_count=data.get("step_count", 0),
            token_usage=data.get("token_usage") or {},
            hook_token_usage=self._require_context().hook_token_usage,
            tool_call_counts=data.get("tool_call_counts") or {},
            state={key: data[key] for key in agent.state_schema if key in data},
            continuations=self._continuations,
            turn=self._require_chat().turn,
        )

    def _require_context(self) -> RunContext:
        assert self.run_context is not None, "run() has not started"
        return self.run_context
