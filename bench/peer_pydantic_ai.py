"""pydantic-ai on Temporal, for bench.peers: an ``Agent`` with the ``TemporalDurability`` capability.

``TemporalDurability`` is what pydantic-ai 2.x documents in place of the deprecated ``TemporalAgent``
wrapper (same activities: one per model request, one per tool call). The model is an
``openai-chat:<name>`` string resolved on the worker, so ``OPENAI_BASE_URL`` points it at the
scripted model and each run gets its own script by name.
"""

from __future__ import annotations

from temporalio import workflow
from temporalio.client import Client, WorkflowHandle
from temporalio.worker import Worker

with workflow.unsafe.imports_passed_through():
    from pydantic_ai import Agent
    from pydantic_ai.durable_exec.temporal import PydanticAIPlugin, PydanticAIWorkflow, TemporalDurability
    from pydantic_ai.usage import UsageLimits

    from bench.peer_common import PROMPT
    from bench.workloads import big_text as _big_text

#: Completions of activity types ending so are the run's steps.
TOOL_ACTIVITY = "__call_tool"


async def big_text(size: int) -> str:
    """Return ``size`` characters of text."""
    return _big_text(size)


# The model string here is only a default: every run names its own scripted model.
agent = Agent(
    "openai-chat:scripted",
    name="peer_pydantic_ai",
    tools=[big_text],
    capabilities=[TemporalDurability()],
    defer_model_check=True,
)


@workflow.defn(name="PeerPydanticAIWorkflow")
class PeerPydanticAIWorkflow(PydanticAIWorkflow):
    __pydantic_ai_agents__ = [agent]

    @workflow.run
    async def run(self, model: str, prompt: str) -> str:
        # pydantic-ai stops at 50 requests by default; the bench runs up to 100 steps.
        result = await agent.run(prompt, model=f"openai-chat:{model}", usage_limits=UsageLimits(request_limit=None))
        return str(result.output)


async def connect(address: str) -> Client:
    """A client carrying pydantic-ai's plugin (its pydantic payload converter and sandbox settings)."""
    return await Client.connect(address, plugins=[PydanticAIPlugin()])


def worker(client: Client, task_queue: str) -> Worker:
    """The worker for :class:`PeerPydanticAIWorkflow`; the plugin adds the agent's activities."""
    return Worker(client, task_queue=task_queue, workflows=[PeerPydanticAIWorkflow])


async def start(client: Client, task_queue: str, run_id: str, model: str, steps: int) -> WorkflowHandle:
    """Start one run of the peer workflow against the scripted model named ``model``."""
    return await client.start_workflow(
        PeerPydanticAIWorkflow.run, args=[model, PROMPT], id=run_id, task_queue=task_queue
    )
