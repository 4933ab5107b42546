"""``Agent``: the serialisable spec of an agent (``core.spec.AgentSpec``), and how to start a run of it."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from temporalio.client import Client

from agent.client import AgentRunHandle, run_input_for, start_run
from agent.conversation import start_or_send
from agent.routing import check_start_or_send_routes
from core.agent_tool import AgentTool
from core.messages import ChatMessage
from core.payloads import MessageReceipt, UserMessage
from core.settings import DEFAULT_TASK_QUEUE
from core.spec import AgentSpec
from core.trust import trusting
from hooks.protocol import ChecksToolArguments
from runtime.sandbox import check_hook_modules


class Agent(AgentSpec):
    """An agent: model, tools, hooks and loop settings (see :class:`core.spec.AgentSpec` for the
    parameters and the errors they raise). Runs happen in ``AgentWorkflow``, on a worker.

    Building one also round-trips every hook through ``to_dict``/``from_dict``, as the worker will
    (:meth:`core.spec.AgentSpec.check_rebuildable`), and imports the hooks' own modules inside
    Temporal's workflow sandbox, as the worker will (:func:`runtime.sandbox.check_hook_modules`,
    once per module and process): a spec the worker could not rebuild is a ``ValueError`` here,
    where it is written, not a failure on the worker. Hooks that read tools' arguments (a
    ``RulePolicy`` rule) check them against the tools' schemas (``hooks.protocol.ChecksToolArguments``).
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        with trusting(self.served_modules()):  # as a worker serving this agent would
            self.check_rebuildable()
        check_hook_modules(self)
        schemas = {spec.name: spec.parameters for spec in self.tool_specs}
        for hook in self.distinct_hooks():
            if isinstance(hook, ChecksToolArguments):
                hook.check_tool_arguments(schemas, every_tool_known=not self.mcp_sources)

    def as_tool(self, name: str, description: str) -> AgentTool:
        """This agent as another agent's tool (``Agent(tools=[researcher.as_tool(...)])``).

        Each call runs this agent as a Temporal child workflow of the calling run, with the run id
        ``{parent run id}/{tool call id}`` (so a replay or retry of the parent never starts a second
        child). The model passes one string, ``input``: the child's first user message. The child's
        hooks run as in any run, its confirmations wait in its own ``pending_confirmations`` (with
        ``parent_run_id``), and its final text is the tool result. Its token usage is added to the
        parent's ``token_usage`` when the call ends (docs/composition.md).

        :param name: The tool's name for the parent's model.
        :param description: What this agent does, for the parent's model.
        :raises ValueError: For an empty name or description.
        """
        return AgentTool(name, description, self)

    async def start(
        self,
        client: Client,
        messages: list[ChatMessage],
        run_id: str,
        task_queue: str = DEFAULT_TASK_QUEUE,
        hook_context: dict[str, Any] | None = None,
        state: dict[str, Any] | None = None,
        tools: list[Any] | None = None,
        generation_kwargs: dict[str, Any] | None = None,
        wait_for_user: timedelta | None = None,
    ) -> AgentRunHandle:
        """Start a durable run; returns at once with a handle.

        :param client: A client from :func:`agent.connect` (it carries the data converter).
        :param messages: The conversation to start from.
        :param run_id: The workflow id; unique among open runs.
        :param task_queue: The queue a worker with this agent's tools polls.
        :param hook_context: JSON-serialisable data for hooks (it is recorded in history).
        :param state: Initial values for ``state_schema`` keys.
        :param tools: This run's tools: names, ``Tool`` objects or ``Toolset`` groups, as Haystack's
            ``Agent.run(tools=...)`` takes, but each must be one of the agent's tools (the worker
            runs them). The run's recorded spec holds only these.
        :param generation_kwargs: Model settings for this run only, over ``model_settings``.
        :param wait_for_user: Make the run a session: after each turn it waits this long for the
            next message (``handle.send_message``), then ends with ``exit_reason="idle"``. None:
            the run ends after its first turn.
        :raises ValueError: If ``hook_context``, ``state`` or ``generation_kwargs`` is not JSON-serialisable,
            ``state`` names unknown keys, ``tools`` holds a tool the agent does not have, or
            ``wait_for_user`` is not a positive timedelta.
        :raises core.checks.ConfigurationError: If the namespace lacks a search attribute a hook sets
            (checked once per client), with the command that registers it; or
            ``agent.routing.NoCurrentVersionError`` (a ``ConfigurationError``) when only versioned
            workers poll ``task_queue`` and their deployment has no current version.
        """
        return await start_run(
            self, client, messages, run_id, task_queue, hook_context, state, tools, generation_kwargs, wait_for_user
        )

    async def send(
        self,
        client: Client,
        session_id: str,
        text: str,
        task_queue: str = DEFAULT_TASK_QUEUE,
        sender: str | None = None,
        wait_for_user: timedelta | None = None,
        message_id: str | None = None,
        hook_context: dict[str, Any] | None = None,
    ) -> AgentRunHandle:
        """Start-or-send in one call (Temporal's update-with-start): when run ``session_id`` is
        running the message goes to it, otherwise a run of this agent starts with it. A stateless
        web handler needs no lookup. The receipt is the handle's ``last_receipt``.

        :param session_id: The run id.
        :param text: The message (as :meth:`AgentRunHandle.send_message`).
        :param sender: Who says it (checked against ``participants``).
        :param wait_for_user: For a run this call starts: make it a session (as :meth:`start`).
        :param message_id: Your id for the message, for safe retries.
        :param hook_context: For a run this call starts (as :meth:`start`).
        :raises agent.conversation.MessageRefusedError: The run refused the message.
        :raises agent.conversation.NotAcceptedError: No worker accepted it within 30 s (the run is
            started; the message is delivered when a worker picks the run up).
        :raises ValueError: As :meth:`start`.
        :raises agent.routing.NoCurrentVersionError: As :meth:`start`, when this call would start the run.
        """
        run_input = await run_input_for(self, client, [], hook_context, None, None, None, wait_for_user)
        await check_start_or_send_routes(client, task_queue, session_id)
        message = UserMessage(text=text, sender=sender, message_id=message_id)
        receipt: MessageReceipt = await start_or_send(client, run_input, session_id, task_queue, message)
        handle = AgentRunHandle(client, session_id, self.output_type)
        handle.last_receipt = receipt
        return handle
