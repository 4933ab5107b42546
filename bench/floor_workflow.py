"""Our activities with no agent logic: the same model and tool activities in a loop
(``FloorWorkflow``), or around one approval (``ParkedFloorWorkflow``), with no State, no hooks, no
spec parsing. The benchmarks' second row ("our activities"): what the run loop adds is the agent's
row minus this one, what our activities add is this one minus the bare floor's
(bench/bare_floor.py, which imports nothing of this project)."""

from __future__ import annotations

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from activities.model import ModelCallInput, call_model
    from activities.tool_invocation import ToolInvocationInput, call_tool
    from core.messages import ChatMessage
    from core.tools import ToolSpec
    from hooks.human_in_the_loop.wire import WAITING_FOR_APPROVAL
    from workflows.stored_conversation import StoredConversation


@workflow.defn(name="FloorWorkflow")
class FloorWorkflow:
    @workflow.run
    async def run(self, model: str, tools: list[ToolSpec], prompt: str) -> int:
        messages = [ChatMessage.from_user(prompt)]
        conversation = StoredConversation()  # as the run loop: send what the worker has not stored
        steps = 0
        while True:
            sent = list(messages)
            head, tail = conversation.request(sent)
            output = await call_model(ModelCallInput(model=model, messages=tail, conversation_head=head, tools=tools))
            reply = output.message
            conversation.record(sent, reply, output.conversation_head, output.conversation_covers_reply)
            messages.append(reply)
            steps += 1
            if not reply.tool_calls:
                return steps
            for call in reply.tool_calls:
                out = await call_tool(
                    ToolInvocationInput(run_id=workflow.info().workflow_id, tool_call=call, call_key=call.id or "")
                )
                messages.append(ChatMessage.from_tool(out.result, origin=call, error=out.error))


@workflow.defn(name="ParkedFloorWorkflow")
class ParkedFloorWorkflow:
    """The bare floor of an approval: one model call, then wait for an ``approve`` Update naming
    each tool call, run the calls, one more model call. It marks itself waiting with the same
    search attribute as ours (what a hand-written inbox would list) and nothing else: no State,
    no hooks, no memo, no spec."""

    def __init__(self) -> None:
        self._pending: set[str] = set()
        self._approved: set[str] = set()

    @workflow.run
    async def run(self, model: str, tools: list[ToolSpec], prompt: str) -> int:
        messages = [ChatMessage.from_user(prompt)]
        reply = (await call_model(ModelCallInput(model=model, messages=messages, tools=tools))).message
        messages.append(reply)
        calls = reply.tool_calls
        self._pending = {call.id or "" for call in calls}
        workflow.upsert_search_attributes([WAITING_FOR_APPROVAL.value_set(True)])
        await workflow.wait_condition(lambda: self._pending <= self._approved)
        workflow.upsert_search_attributes([WAITING_FOR_APPROVAL.value_set(False)])
        for call in calls:
            out = await call_tool(
                ToolInvocationInput(run_id=workflow.info().workflow_id, tool_call=call, call_key=call.id or "")
            )
            messages.append(ChatMessage.from_tool(out.result, origin=call, error=out.error))
        await call_model(ModelCallInput(model=model, messages=messages, tools=tools))
        return 2

    @workflow.update
    async def approve(self, call_id: str) -> None:
        self._approved.add(call_id)

    @approve.validator
    def _check_approve(self, call_id: str) -> None:
        if call_id not in self._pending or call_id in self._approved:
            raise ValueError(f"no pending tool call {call_id!r}")
