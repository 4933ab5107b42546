"""``AgentTool``: an agent used as another agent's tool (``Agent.as_tool``), as data.

The parent's spec carries the sub-agent's whole spec (``AgentSpec.to_dict()``) under the tool's
name, so the parent's history says what each child runs and replay never depends on what a worker
holds. Each call of the tool runs the sub-agent as a child workflow (``workflows/children.py``);
the model sees an ordinary tool that takes one string, :data:`INPUT_PARAMETER`.
"""

from __future__ import annotations

from typing import Any, Protocol

from core.tools import Tool, ToolSpec

#: The one argument of an agent tool: what the parent asks the sub-agent, its first user message.
INPUT_PARAMETER = "input"


def agent_tool_parameters(description: str) -> dict[str, Any]:
    """The JSON schema of an agent tool's arguments: ``{"input": "<the request>"}``."""
    return {
        "type": "object",
        "properties": {
            INPUT_PARAMETER: {"type": "string", "description": f"The request for the sub-agent: {description}"}
        },
        "required": [INPUT_PARAMETER],
    }


class SubAgent(Protocol):
    """What :class:`AgentTool` reads of an agent (an ``AgentSpec``; named structurally because
    ``core.spec`` imports this module)."""

    tool_functions: list[Tool]

    def to_dict(self) -> dict[str, Any]: ...


class AgentTool:
    """A sub-agent as a tool: its spec for the model, and the sub-agent's spec for the child run.

    :param name: The tool's name, as the parent's model calls it.
    :param description: What the sub-agent does, for the parent's model.
    :param agent: The sub-agent (an ``Agent``/``AgentSpec``); its ``to_dict()`` is taken now.
    :raises ValueError: For an empty name or description.
    """

    def __init__(self, name: str, description: str, agent: SubAgent) -> None:
        if not isinstance(name, str) or not name.strip():
            raise ValueError(f"An agent tool needs a name, got {name!r}.")
        if not isinstance(description, str) or not description.strip():
            raise ValueError(f"Agent tool '{name}' needs a description: the parent's model reads it to decide.")
        self.spec = ToolSpec(name=name, description=description, parameters=agent_tool_parameters(description))
        #: ``agent.to_dict()``: what each child run of this tool starts from.
        self.sub_agent: dict[str, Any] = agent.to_dict()
        #: The sub-agent's runnable tools (its own sub-agents' included): what a worker must serve.
        self.tool_functions: list[Tool] = list(agent.tool_functions)

    @classmethod
    def from_spec(cls, spec: ToolSpec, sub_agent: dict[str, Any]) -> AgentTool:
        """Rebuild from a recorded spec (``AgentSpec.from_dict``): the tool's spec and the sub-agent's
        ``to_dict()``; it has no runnable tools (a worker serves those)."""
        made = cls.__new__(cls)
        made.spec, made.sub_agent, made.tool_functions = spec, dict(sub_agent), []
        return made

    @property
    def name(self) -> str:
        """The tool's name."""
        return self.spec.name

    def __repr__(self) -> str:
        return f"AgentTool({self.name!r}, model={self.sub_agent.get('model')!r})"
