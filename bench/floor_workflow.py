"""The bare floor: the same model and tool activities in a loop, with no agent logic
(no State, no hooks, no spec parsing). What a hand-written Temporal loop would cost."""

from __future__ import annotations

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from activities.model import ModelCallInput, call_model
    from activities.tools import ToolInvocationInput, call_tool
    from core.messages import ChatMessage
    from core.tools import ToolSpec


@workflow.defn(name="FloorWorkflow")
class FloorWorkflow:
    @workflow.run
    async def run(self, model: str, tools: list[ToolSpec], prompt: str) -> int:
        messages = [ChatMessage.from_user(prompt)]
        steps = 0
        while True:
            reply = (await call_model(ModelCallInput(model=model, messages=messages, tools=tools))).message
            messages.append(reply)
            steps += 1
            if not reply.tool_calls:
                return steps
            for call in reply.tool_calls:
                out = await call_tool(
                    ToolInvocationInput(run_id=workflow.info().workflow_id, tool_call=call, call_key=call.id or "")
                )
                messages.append(ChatMessage.from_tool(out.result, origin=call, error=out.error))
