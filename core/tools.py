"""Tools: typed, documented functions the model may call.

``@tool`` reads the function's name, docstring and type hints (through pydantic) into a
``Tool``. The agent spec carries only the ``ToolSpec`` (name, description, JSON schema); the
function itself lives on the worker (``create_worker(tools=[...])``) and runs in an activity.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import inspect
from collections.abc import Callable, Iterator
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model


class ToolSpec(BaseModel):
    """What the model and the workflow know of a tool.

    :param name: The name the model calls it by.
    :param description: What it does (the function's docstring by default).
    :param parameters: JSON schema of its arguments.
    :param local: Run each call as a Temporal local activity (see :class:`Tool`).
    """

    model_config = ConfigDict(frozen=True)

    name: str
    description: str = ""
    parameters: dict[str, Any] = Field(default_factory=lambda: {"type": "object", "properties": {}})
    local: bool = False


class ToolContext(BaseModel):
    """What a running tool may know about its call (read it with :func:`current_tool_context`).

    :param run_id: The agent run (workflow id).
    :param tool_call_id: The model's id for this call.
    :param idempotency_key: ``{run_id}/{tool_call_id}``: stable across retries of the same call,
        so a tool that may run twice (tools run at least once) can de-duplicate its side effect.
    :param attempt: 1 on the first try, 2 after one retry, and so on.
    """

    run_id: str
    tool_call_id: str
    idempotency_key: str
    attempt: int = 1


_tool_context: contextvars.ContextVar[ToolContext | None] = contextvars.ContextVar("agent_tool_context", default=None)


@contextlib.contextmanager
def tool_context_set(context: ToolContext) -> Iterator[None]:
    """Make ``context`` the current tool context for the block (the tool activity uses it)."""
    token = _tool_context.set(context)
    try:
        yield
    finally:
        _tool_context.reset(token)


def current_tool_context() -> ToolContext:
    """The context of the tool call being run.

    :raises RuntimeError: Outside a tool invocation.
    """
    context = _tool_context.get()
    if context is None:
        raise RuntimeError("current_tool_context() is only available while a tool runs in the invoke_tool activity.")
    return context


class Tool:
    """A callable tool with its spec.

    :param function: The function to run (sync or async), on the worker.
    :param name: Defaults to the function's name.
    :param description: Defaults to the function's docstring.
    :param local: Run each call as a Temporal *local activity*: in the worker that runs the
        workflow task, recorded as one marker when the task completes, with no activity task to
        schedule and poll (a step a few ms faster on a loaded server). The trade-off: a call is not
        visible as a pending activity, sends no heartbeats (a crashed worker is noticed by the
        workflow task timeout, and the call runs again, as any tool may), cannot be cancelled
        mid-call, and a long one holds the run's workflow task. For short, idempotent tools only
        (a lookup, a calculation; seconds at most). See docs/benchmarks.md.
    :raises ValueError: If a parameter has no type hint, or the function takes ``*args``/``**kwargs``.
    """

    def __init__(
        self,
        function: Callable[..., Any],
        name: str | None = None,
        description: str | None = None,
        local: bool = False,
    ) -> None:
        self.function = function
        self.is_async = inspect.iscoroutinefunction(function)
        self.arguments_model = _arguments_model(function)
        schema = self.arguments_model.model_json_schema()
        schema.pop("title", None)
        self.spec = ToolSpec(
            name=name or function.__name__,
            description=description or inspect.cleandoc(function.__doc__ or "").strip(),
            parameters=schema,
            local=local,
        )

    @property
    def name(self) -> str:
        """The tool's name."""
        return self.spec.name

    def validate_arguments(self, arguments: dict[str, Any]) -> dict[str, Any]:
        """Coerce and check arguments against the type hints.

        :raises ValueError: With pydantic's description of what is wrong.
        """
        try:
            return dict(self.arguments_model.model_validate(arguments))
        except ValidationError as exc:
            raise ValueError(f"Invalid arguments for tool '{self.name}': {exc}") from exc

    async def invoke(self, arguments: dict[str, Any]) -> Any:
        """Run the function with arguments already checked by :meth:`validate_arguments`
        (sync functions in a thread, which copies the tool context)."""
        if self.is_async:
            return await self.function(**arguments)
        return await asyncio.to_thread(self.function, **arguments)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.function(*args, **kwargs)

    def __repr__(self) -> str:
        return f"Tool({self.name!r})"


class Toolset:
    """A named group of tools, usable wherever a list of tools is (``Agent(tools=[...])``,
    ``create_worker(tools=[...])``), as Haystack's ``Toolset``: each is flattened into its tools.

    :param tools: The ``Tool`` objects (from ``@tool``) of the group.
    :raises ValueError: For an object that is not a ``Tool``, or two tools with one name.
    """

    def __init__(self, tools: list[Tool] | None = None) -> None:
        self.tools: list[Tool] = []
        for t in tools or []:
            self.add(t)

    def add(self, tool: Tool) -> None:
        """Add a tool to the group.

        :raises ValueError: If it is not a ``Tool`` or its name is taken.
        """
        if not isinstance(tool, Tool):
            raise ValueError(f"{tool!r} is not a Tool; decorate the function with @tool.")
        if any(t.name == tool.name for t in self.tools):
            raise ValueError(f"Duplicate tool name '{tool.name}' in the Toolset.")
        self.tools.append(tool)

    def __iter__(self) -> Iterator[Tool]:
        return iter(self.tools)

    def __len__(self) -> int:
        return len(self.tools)

    def __contains__(self, item: object) -> bool:
        return item in self.tools or any(t.name == item for t in self.tools)

    def __repr__(self) -> str:
        return f"Toolset({[t.name for t in self.tools]!r})"


def flatten_tools(tools: list[Any] | None) -> list[Any]:
    """``tools`` with every :class:`Toolset` replaced by its tools, in order."""
    out: list[Any] = []
    for item in tools or []:
        out.extend(item.tools if isinstance(item, Toolset) else [item])
    return out


def _arguments_model(function: Callable[..., Any]) -> type[BaseModel]:
    fields: dict[str, Any] = {}
    hints = inspect.get_annotations(function, eval_str=True)
    for param in inspect.signature(function).parameters.values():
        if param.kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD):
            raise ValueError(f"Tool '{function.__name__}' cannot take *args or **kwargs; name each parameter.")
        if param.name not in hints:
            raise ValueError(f"Tool '{function.__name__}': parameter '{param.name}' needs a type hint.")
        default = ... if param.default is inspect.Parameter.empty else param.default
        fields[param.name] = (hints[param.name], default)
    return create_model(f"{function.__name__}_arguments", **fields)


def tool(
    function: Callable[..., Any] | None = None,
    *,
    name: str | None = None,
    description: str | None = None,
    local: bool = False,
) -> Any:
    """Decorator: turn a typed, documented function into a :class:`Tool`.

    Use as ``@tool`` or ``@tool(name=..., description=..., local=True)`` (``local``: see
    :class:`Tool`). The result is still callable like the function.
    """
    if function is None:
        return lambda f: Tool(f, name=name, description=description, local=local)
    return Tool(function, name=name, description=description, local=local)
