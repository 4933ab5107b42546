"""Sub-agents as child workflows (DESIGN.md "Composition"): the run loop's tool dispatch.

The run loop's dispatch (``workflows/tool_dispatch.py``) hands a call of an agent tool
(``Agent.as_tool``) to :func:`run_sub_agent`, which runs the sub-agent as a child ``AgentWorkflow``:

- its run id is :func:`child_run_id` (``{parent run id}/{call key}``), and starting it is a
  command in the parent's history, so a replay, a new worker or a retried workflow task of the
  parent waits for the same child and never starts a second one;
- it runs on the parent's task queue with the parent's ``hook_context``; its hooks and its
  confirmations are its own (a person decides them on the child run, and the parent goes on when
  the child ends);
- its result carries only its last message (``AgentRunInput.last_message_only``), so the parent's
  history holds the answer, not the child's conversation (that stays in the child's history);
- its final text is the tool result (the parent's ``after_tool`` hooks, offloading included, see
  it like any result); its ``token_usage`` is added to the parent's ``token_usage`` (so the
  parent's result reports it and a parent's ``TokenBudgetHook`` counts it before the next model
  call) and its hooks' usage to the parent's ``hook_token_usage``; the tool message's
  ``meta["sub_agent"]`` records the child's run id, exit reason, steps and usage;
- cancelling the parent (``cancel_run`` or Temporal's cancel) cancels the child with the same
  reason and waits for it to end cleanly (``WAIT_CANCELLATION_COMPLETED``); its answer is then a
  cancelled error result. A parent that closes any other way (terminated, timed out) asks its
  children to cancel (``ParentClosePolicy.REQUEST_CANCEL``).

Deterministic workflow code only.
"""

from __future__ import annotations

import json
from typing import Any

from temporalio import workflow
from temporalio.exceptions import ChildWorkflowError, FailureError, WorkflowAlreadyStartedError
from temporalio.workflow import ChildWorkflowCancellationType, ParentClosePolicy

with workflow.unsafe.imports_passed_through():
    from activities.tool_invocation import ToolInvocationInput, ToolInvocationOutput
    from core.agent_tool import INPUT_PARAMETER
    from core.messages import ChatMessage
    from core.payloads import EXIT_CANCELLED, AgentRunInput, AgentRunResult, add_usage
    from core.settings import DEFAULT_WORKFLOW_TASK_TIMEOUT
    from core.wire import WORKFLOW_TYPE
    from hooks.context import current_run

#: Key of the tool message's ``meta`` that describes the child run of an agent tool call.
SUB_AGENT_META_KEY = "sub_agent"


def child_run_id(parent_run_id: str, call_key: str) -> str:
    """The run id of the child that answers the call ``call_key`` of run ``parent_run_id``."""
    return f"{parent_run_id}/{call_key}"


async def run_sub_agent(request: ToolInvocationInput, sub_agent: dict[str, Any]) -> ToolInvocationOutput:
    """Run the sub-agent ``sub_agent`` (an ``AgentSpec.to_dict()``) for one call, as a child workflow.

    Whatever the child does, the call gets a result: its final text, or an error result saying the
    arguments were wrong, the child failed (its failure's message) or it was cancelled. An
    ``OffloadInstruction`` in ``request`` is not needed here: no activity returns the text, and
    the offload hook applies its policy to the result in its ``after_tool`` turn.
    """
    call = request.tool_call
    name = call.tool_name
    text = call.arguments.get(INPUT_PARAMETER)
    if not isinstance(text, str) or not text.strip():
        got = json.dumps(call.arguments, ensure_ascii=False)[:200]
        return ToolInvocationOutput(
            result=f"Tool '{name}' is a sub-agent and takes one argument, "
            f'{{"{INPUT_PARAMETER}": "<your request>"}} (a non-empty string); got {got}.',
            error=True,
        )
    run = current_run()
    child_id = child_run_id(request.run_id, request.call_key)
    child_input = AgentRunInput(
        agent=sub_agent,
        messages=[ChatMessage.from_user(text)],
        hook_context=dict(run.state.data.get("hook_context") or {}),
        last_message_only=True,
    )
    try:
        result: AgentRunResult = await workflow.execute_child_workflow(
            WORKFLOW_TYPE,
            child_input,
            id=child_id,
            result_type=AgentRunResult,
            task_timeout=DEFAULT_WORKFLOW_TASK_TIMEOUT,
            cancellation_type=ChildWorkflowCancellationType.WAIT_CANCELLATION_COMPLETED,
            parent_close_policy=ParentClosePolicy.REQUEST_CANCEL,
            static_summary=f"sub-agent {name} of {request.run_id}",
        )
    except ChildWorkflowError as err:
        cause = err.cause
        why = cause.message if isinstance(cause, FailureError) else str(cause or err)
        return ToolInvocationOutput(
            result=f"The sub-agent '{name}' (run {child_id}) failed: {why}",
            error=True,
            meta={SUB_AGENT_META_KEY: {"run_id": child_id, "failed": why}},
        )
    except WorkflowAlreadyStartedError:  # e.g. the parent was rewound while that child still runs
        return ToolInvocationOutput(
            result=f"The sub-agent '{name}' could not start: a run with the id {child_id} is already running.",
            error=True,
        )
    count_usage(result)
    meta = {
        SUB_AGENT_META_KEY: {
            "run_id": child_id,
            "exit_reason": result.exit_reason,
            "step_count": result.step_count,
            "token_usage": result.token_usage,
        }
    }
    if result.exit_reason == EXIT_CANCELLED:
        return ToolInvocationOutput(
            result=f"The sub-agent '{name}' (run {child_id}) was cancelled before it answered.", error=True, meta=meta
        )
    return ToolInvocationOutput(result=final_text(name, result), meta=meta)


def count_usage(result: AgentRunResult) -> None:
    """Add a finished child's usage to the current (parent) run: its ``token_usage`` to the
    parent's State ``token_usage``, its hooks' usage to the parent's ``hook_token_usage``."""
    run = current_run()
    if result.token_usage:
        run.state.set("token_usage", add_usage(run.state.data.get("token_usage") or {}, result.token_usage))
    if result.hook_token_usage:
        run.add_hook_usage(result.hook_token_usage)


def final_text(name: str, result: AgentRunResult) -> str:
    """What the parent's model sees of a child's answer: its last message's text, else (a run that
    ended on a tool, or out of steps) that message's tool result, else a note saying so."""
    last = result.last_message
    if last is not None and last.text:
        return last.text
    if last is not None and last.tool_call_result is not None and last.tool_call_result.result:
        return last.tool_call_result.result
    return f"The sub-agent '{name}' ended ({result.exit_reason}) without an answer."
