"""The run loop's MCP tools (workflow side): list each toolset once per run, route each call.

:meth:`RunMCPTools.list_tools` runs when a run starts: one ``mcp_list_tools`` activity per
toolset, whose answers (the tools' specs) history records, so a replay reads them back and never
reconnects, and a run keeps the tool list it started with even when the server changes. The specs
join the agent's own, so the model, confirmations (by tool name), offloading (by tool name) and
the Update validator's JSON-schema check see MCP tools as any other. A run that continues as new
lists again (its new history records the new answer).

:meth:`RunMCPTools.call` runs one call as an ``mcp_call_tool`` activity. A call that fails past
its retries (a server that keeps dying) becomes an error result the model sees; the run goes on.
"""

from __future__ import annotations

from datetime import timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError, is_cancelled_exception

with workflow.unsafe.imports_passed_through():
    from activities.heartbeat import HEARTBEAT_TIMEOUT
    from activities.mcp import MCPActivities, MCPCallInput, MCPListInput
    from activities.tool_invocation import ToolInvocationInput, ToolInvocationOutput
    from core.mcp import MCP_SERVER_ERROR, MCPSource
    from core.spec import AgentSpec

#: Attempts at listing or at one call: enough for a server that died to be restarted, few enough
#: that a server that cannot start fails the run (listing) or the call within a minute or two.
MCP_ATTEMPTS = 3
MCP_RETRY_POLICY = RetryPolicy(
    initial_interval=timedelta(milliseconds=500), maximum_interval=timedelta(seconds=5), maximum_attempts=MCP_ATTEMPTS
)
#: Slack over a toolset's own timeouts, for the activity's start on a busy worker.
MARGIN = timedelta(seconds=10)


def _cause(err: BaseException) -> str:
    while isinstance(err, ActivityError) and err.cause is not None:
        err = err.cause
    return str(err)


class RunMCPTools:
    """One run's MCP tools: which tool name belongs to which toolset."""

    def __init__(self) -> None:
        self.sources: dict[str, MCPSource] = {}

    async def list_tools(self, agent: AgentSpec) -> None:
        """List every toolset of ``agent`` and add the tools to ``agent.tool_specs``.

        :raises ApplicationError: Non-retryable (the run fails), naming the server's command or URL,
            when a server cannot start or list its tools after :data:`MCP_ATTEMPTS`, lacks a tool of
            ``tool_names``, or offers a tool whose name the agent already has.
        """
        for source in agent.mcp_sources:
            try:
                listed = await workflow.execute_activity_method(
                    MCPActivities.list_mcp_tools,
                    MCPListInput(source=source),
                    start_to_close_timeout=timedelta(seconds=source.connection_timeout) + MARGIN,
                    heartbeat_timeout=HEARTBEAT_TIMEOUT,
                    retry_policy=MCP_RETRY_POLICY,
                    summary=f"list {source.server}",
                )
            except ActivityError as err:
                if is_cancelled_exception(err):
                    raise
                raise ApplicationError(
                    f"The MCP server `{source.server}` could not list its tools: {_cause(err)}",
                    type=MCP_SERVER_ERROR,
                    non_retryable=True,
                ) from err
            for spec in listed.tools:
                if agent.tool_spec(spec.name) is not None:
                    raise ApplicationError(
                        f"The MCP server `{source.server}` offers a tool named '{spec.name}', which the agent "
                        "already has; leave one out with tool_names=[...].",
                        type=MCP_SERVER_ERROR,
                        non_retryable=True,
                    )
                agent.tool_specs.append(spec)
                self.sources[spec.name] = source

    def serves(self, tool_name: str) -> bool:
        """Whether ``tool_name`` is one of this run's MCP tools."""
        return tool_name in self.sources

    async def call(self, request: ToolInvocationInput) -> ToolInvocationOutput:
        """Run one MCP call in ``mcp_call_tool``; a failure past the retries is an error result."""
        source = self.sources[request.tool_call.tool_name]
        try:
            return await workflow.execute_activity_method(
                MCPActivities.call_mcp_tool,
                MCPCallInput(source=source, invocation=request),
                start_to_close_timeout=timedelta(seconds=source.connection_timeout + source.invocation_timeout)
                + MARGIN,
                heartbeat_timeout=HEARTBEAT_TIMEOUT,
                retry_policy=MCP_RETRY_POLICY,
                cancellation_type=workflow.ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
                summary=request.tool_call.tool_name,
            )
        except ActivityError as err:
            if is_cancelled_exception(err):
                raise
            return ToolInvocationOutput(
                result=f"MCP tool '{request.tool_call.tool_name}' (server `{source.server}`) failed: {_cause(err)}",
                error=True,
            )
