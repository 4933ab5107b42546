"""``AgentPlugin``: a temporalio Plugin that gives a client, worker or replayer this project's
data converter and workflow sandbox settings (as pydantic-ai and the OpenAI Agents
integration ship one)."""

from __future__ import annotations

from temporalio.plugin import SimplePlugin
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner, SandboxRestrictions

from agent.converter import agent_data_converter

#: Deterministic modules shared by all workflows instead of re-imported into each sandbox:
#: faster, and tiktoken's encoding is loaded once per worker process.
PASSTHROUGH_MODULES = ("agent", "hooks", "workflows.calls", "workflows.run_context", "tiktoken", "pydantic", "httpx")


def workflow_runner() -> SandboxedWorkflowRunner:
    """The sandbox runner with this project's pass-through modules."""
    return SandboxedWorkflowRunner(
        restrictions=SandboxRestrictions.default.with_passthrough_modules(*PASSTHROUGH_MODULES)
    )


class AgentPlugin(SimplePlugin):
    """Data converter (pydantic, plus S3 ExternalStorage when configured) and sandbox settings."""

    def __init__(self) -> None:
        super().__init__(
            "durable-agent.AgentPlugin",
            data_converter=agent_data_converter(),
            workflow_runner=workflow_runner(),
        )
