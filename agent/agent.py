"""``Agent``: the serialisable spec of an agent (``core.spec.AgentSpec``), and how to start a run of it."""

from __future__ import annotations

from typing import Any

from temporalio.client import Client

from agent.client import AgentRunHandle, start_run
from core.messages import ChatMessage
from core.settings import DEFAULT_TASK_QUEUE
from core.spec import AgentSpec
from runtime.sandbox import check_hook_modules


class Agent(AgentSpec):
    """An agent: model, tools, hooks and loop settings (see :class:`core.spec.AgentSpec` for the
    parameters and the errors they raise). Runs happen in ``AgentWorkflow``, on a worker.

    Building one also round-trips every hook through ``to_dict``/``from_dict``, as the worker will
    (:meth:`core.spec.AgentSpec.check_rebuildable`), and imports the hooks' own modules inside
    Temporal's workflow sandbox, as the worker will (:func:`runtime.sandbox.check_hook_modules`,
    once per module and process): a spec the worker could not rebuild is a ``ValueError`` here,
    where it is written, not a failure on the worker.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.check_rebuildable()
        check_hook_modules(self)

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
    ) -> AgentRunHandle:
        """Start a durable run; returns at once with a handle.

        :param client: A client from :func:`agent.connect` (it carries the data converter).
        :param messages: The conversation to start from.
        :param run_id: The workflow id; unique among open runs.
        :param task_queue: The queue a worker with this agent's tools polls.
        :param hook_context: JSON-serialisable data for hooks (it is recorded in history).
        :param state: Initial values for ``state_schema`` keys.
        :param tools: This run's tools, by name (or ``Tool``): a subset of the agent's, as Haystack's
            ``Agent.run(tools=...)``. The run's recorded spec holds only these.
        :param generation_kwargs: Model settings for this run only, over ``model_settings``.
        :raises ValueError: If ``hook_context``, ``state`` or ``generation_kwargs`` is not JSON-serialisable,
            ``state`` names unknown keys, or ``tools`` names a tool the agent does not have.
        :raises core.checks.ConfigurationError: If the namespace lacks a search attribute a hook sets
            (checked once per client), with the command that registers it.
        """
        return await start_run(
            self, client, messages, run_id, task_queue, hook_context, state, tools, generation_kwargs
        )
