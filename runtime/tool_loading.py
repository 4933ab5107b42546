"""Tools named on a command line: ``module:attr``, as ``agent run --agent`` names an agent.

``python worker.py --tools SPEC`` and ``agent dev --agent SPEC`` both resolve a spec here, so the
two accept the same form and find modules in the same place (the current directory, as
``python -m`` does).
"""

from __future__ import annotations

import importlib
import os
import sys
from typing import Any

from core.mcp import MCPToolset
from core.serialization import import_object
from core.spec import AgentSpec
from core.tools import Tool, Toolset, flatten_tools
from core.trust import trust_modules


class ToolSpecError(ValueError):
    """A ``--tools``/``--agent`` spec names nothing usable (a usage error)."""


def _current_directory_importable() -> None:
    """Put the working directory on ``sys.path``, as ``python -m`` does (``python worker.py`` puts
    the script's own directory there instead)."""
    cwd = os.getcwd()
    if cwd not in sys.path:
        sys.path.insert(0, cwd)


def resolve_spec(spec: str, option: str = "--tools") -> Any:
    """The object ``module:attr`` names (``attr`` may be dotted: ``module:holder.TOOLS``).

    The dotted form ``module.attr`` is accepted too, for scripts written before the ``:`` form.

    :param spec: The spec as typed.
    :param option: The option it came from, named in errors.
    :raises ToolSpecError: For a malformed spec, a missing module or attribute, or an import that fails.
    """
    _current_directory_importable()
    module_name, sep, attr = spec.partition(":")
    if not sep:
        try:
            target = import_object(spec)
            serve(spec.rpartition(".")[0], target)
            return target
        except ValueError as exc:
            raise ToolSpecError(
                f"{option} {spec!r}: {exc} Name it as module:attribute, e.g. myapp.tools:TOOLS "
                f"(modules are looked up in {os.getcwd()} and on sys.path)."
            ) from exc
    if not module_name or not attr:
        raise ToolSpecError(f"{option} {spec!r}: expected module:attribute, e.g. myapp.tools:TOOLS")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name and (module_name == exc.name or module_name.startswith(exc.name + ".")):
            raise ToolSpecError(
                f"{option} {spec!r}: no module named {exc.name!r} in {os.getcwd()} or on sys.path"
            ) from exc
        raise ToolSpecError(f"{option} {spec!r}: importing {module_name} failed: {exc}") from exc
    except Exception as exc:
        raise ToolSpecError(f"{option} {spec!r}: importing {module_name} failed: {type(exc).__name__}: {exc}") from exc
    target: Any = module
    for part in attr.split("."):
        if not hasattr(target, part):
            raise ToolSpecError(
                f"{option} {spec!r}: module {module_name} ({module.__file__}) has no attribute {attr!r}"
            )
        target = getattr(target, part)
    serve(module_name, target)
    return target


def serve(module_name: str, target: Any) -> None:
    """Trust what the operator named here: the spec's module and, for an agent, every module its
    hooks, policies, stores, functions and types come from (``core/trust.py``)."""
    trust_modules([module_name, *(target.served_modules() if isinstance(target, AgentSpec) else ())])


def tools_of(obj: Any, spec: str, option: str = "--tools") -> list[Tool | MCPToolset]:
    """The runnable tools of what a spec named: a ``Tool``, an ``MCPToolset``, a list of these, a
    ``Toolset``, an ``Agent`` (its tools and MCP toolsets), or a zero-argument function returning one.

    :raises ToolSpecError: For anything else, or an agent with tools given only as ``ToolSpec``.
    """
    if callable(obj) and not isinstance(obj, (Tool, type)):
        try:
            obj = obj()
        except Exception as exc:
            raise ToolSpecError(f"{option} {spec!r}: calling it raised {type(exc).__name__}: {exc}") from exc
    if isinstance(obj, AgentSpec):
        runnable = {t.name for t in obj.tool_functions} | set(obj.sub_agents)  # sub-agents run as child runs
        missing = sorted({t.name for t in obj.tool_specs} - runnable)
        if missing:
            raise ToolSpecError(
                f"{option} {spec!r}: the agent's tools {', '.join(missing)} were given as ToolSpec, without a "
                "function to run; name their @tool functions with --tools module:TOOLS"
            )
        return [*obj.tool_functions, *obj.mcp_toolsets]
    if isinstance(obj, (Tool, MCPToolset)):
        return [obj]
    if isinstance(obj, (list, tuple, Toolset)):
        tools = flatten_tools(list(obj))
        strangers = [repr(t) for t in tools if not isinstance(t, (Tool, MCPToolset))]
        if strangers:
            raise ToolSpecError(f"{option} {spec!r}: not @tool functions: {', '.join(strangers)}")
        return tools
    raise ToolSpecError(
        f"{option} {spec!r} is a {type(obj).__name__}; expected a list of @tool functions, a Toolset, "
        "an agent.Agent, or a zero-argument function returning one"
    )


def load_tools(specs: list[str], option: str = "--tools") -> list[Tool | MCPToolset]:
    """The tools of every spec, in order; a tool (or MCP toolset object) named by two specs is served once.

    :raises ToolSpecError: As :func:`resolve_spec` and :func:`tools_of`, or when two specs name
        different tools with one name.
    """
    by_name: dict[str, Tool] = {}
    toolsets: list[MCPToolset] = []
    for spec in specs:
        for tool in tools_of(resolve_spec(spec, option), spec, option):
            if isinstance(tool, MCPToolset):
                toolsets += [] if any(t is tool for t in toolsets) else [tool]
                continue
            other = by_name.setdefault(tool.name, tool)
            if other is not tool and other.function is not tool.function:
                raise ToolSpecError(
                    f"{option} {spec!r}: another spec already gave a different tool named {tool.name!r}"
                )
    return [*by_name.values(), *toolsets]
