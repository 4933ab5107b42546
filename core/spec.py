"""``AgentSpec``: what an agent is, as data that travels in the workflow input.

Model, tool specs, hooks by reference, loop settings. The facade's ``Agent`` adds ``start``;
the workflow rebuilds an ``AgentSpec`` from ``to_dict()`` on the worker, so the run's
configuration is in its history and replay never depends on what the worker holds.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any, Literal, get_args

from core.serialization import object_from_dict, object_to_dict
from core.state import state_schema_from_dict, state_schema_to_dict, validate_state_schema
from core.tools import Tool, ToolSpec

HookPoint = Literal["before_run", "before_llm", "before_tool", "after_tool", "on_exit", "after_run"]

BEFORE_RUN: HookPoint = "before_run"
BEFORE_LLM: HookPoint = "before_llm"
BEFORE_TOOL: HookPoint = "before_tool"
AFTER_TOOL: HookPoint = "after_tool"
ON_EXIT: HookPoint = "on_exit"
AFTER_RUN: HookPoint = "after_run"
VALID_HOOK_POINTS: tuple[HookPoint, ...] = get_args(HookPoint)

DEFAULT_MAX_AGENT_STEPS = 100
DEFAULT_MAX_CONCURRENT_TOOL_CALLS = 8
DEFAULT_CONTINUE_AS_NEW_AFTER_EVENTS = 10_000
DEFAULT_MODEL_RETRY_TIMEOUT = timedelta(minutes=30)


def hook_name(hook: Any) -> str:
    """A hook's name for messages: its ``name`` attribute, else its class name."""
    return getattr(hook, "name", None) or type(hook).__name__


def validate_hooks(hooks: dict[str, list[Any]]) -> None:
    """Check hook points and each hook's ``allowed_hook_points``.

    :raises ValueError: For an unknown hook point, or a hook registered outside the points it allows.
    :raises TypeError: For an object without ``run`` / ``run_async`` (e.g. a bare function: use ``@hook``).
    """
    for point, hook_list in hooks.items():
        if point not in VALID_HOOK_POINTS:
            raise ValueError(f"Unknown hook point '{point}'. Valid hook points are: {', '.join(VALID_HOOK_POINTS)}.")
        for hook in hook_list:
            if not (callable(getattr(hook, "run", None)) or callable(getattr(hook, "run_async", None))):
                hint = " Wrap a plain function with @hook." if callable(hook) else ""
                raise TypeError(f"Hook {hook!r} registered at '{point}' has no run(state) method.{hint}")
            allowed = getattr(hook, "allowed_hook_points", None)
            if allowed is not None and point not in allowed:
                raise ValueError(
                    f"Hook '{hook_name(hook)}' is registered at hook point '{point}' but only supports: "
                    f"{', '.join(allowed)}."
                )


class AgentSpec:
    """An agent: model, tools, hooks and loop settings. Pure data; runs happen in ``AgentWorkflow``.

    :param model: Model name at the OpenAI-compatible endpoint the worker talks to.
    :param tools: ``Tool`` objects (from ``@tool``) or ``ToolSpec``; only the spec travels.
    :param system_prompt: Prepended as a system message when the run starts.
    :param hooks: ``{hook_point: [hook, ...]}``, run in list order.
    :param exit_conditions: ``"text"`` and/or tool names whose successful call ends the run.
    :param max_agent_steps: Upper bound on model calls in one run.
    :param state_schema: Extra State keys, ``{key: {"type": t, "handler": optional}}``.
    :param model_settings: Extra Chat Completions parameters (temperature, max_tokens, ...).
    :param max_concurrent_tool_calls: How many tool activities of one step run at once.
    :param continue_as_new_after_events: Continue-as-new at a step boundary once the history
        has this many events (Temporal's own suggestion also triggers it).
    :param model_retry_timeout: How long one model call is retried (HTTP 5xx, timeouts, bodies
        that are not completions) before the run fails with the last error; 30 minutes by default.
    :raises ValueError: For an unknown hook point, a hook outside its allowed points, a reserved
        or malformed ``state_schema`` key, duplicate tool names, an exit condition naming no
        tool, or ``max_agent_steps < 1``.
    :raises TypeError: For a hook without ``run``/``run_async``.
    """

    def __init__(
        self,
        model: str,
        tools: list[Tool | ToolSpec] | None = None,
        system_prompt: str | None = None,
        hooks: dict[HookPoint, list[Any]] | None = None,
        exit_conditions: list[str] | None = None,
        max_agent_steps: int = DEFAULT_MAX_AGENT_STEPS,
        state_schema: dict[str, dict[str, Any]] | None = None,
        model_settings: dict[str, Any] | None = None,
        max_concurrent_tool_calls: int = DEFAULT_MAX_CONCURRENT_TOOL_CALLS,
        continue_as_new_after_events: int = DEFAULT_CONTINUE_AS_NEW_AFTER_EVENTS,
        model_retry_timeout: timedelta = DEFAULT_MODEL_RETRY_TIMEOUT,
    ) -> None:
        self.model = model
        self.tool_specs: list[ToolSpec] = [
            t.spec if isinstance(t, Tool) else ToolSpec.model_validate(t) for t in tools or []
        ]
        names = [t.name for t in self.tool_specs]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise ValueError(f"Duplicate tool names: {', '.join(duplicates)}.")
        self.system_prompt = system_prompt
        self.hooks: dict[str, list[Any]] = {point: list(hook_list) for point, hook_list in (hooks or {}).items()}
        validate_hooks(self.hooks)
        self.exit_conditions = list(exit_conditions or ["text"])
        unknown = [c for c in self.exit_conditions if c != "text" and c not in names]
        if unknown:
            raise ValueError(f"exit_conditions name unknown tools: {', '.join(unknown)}. Tools: {', '.join(names)}.")
        if max_agent_steps < 1:
            raise ValueError(f"max_agent_steps must be at least 1, got {max_agent_steps}.")
        self.max_agent_steps = max_agent_steps
        self.state_schema = dict(state_schema or {})
        validate_state_schema(self.state_schema)
        self.model_settings = dict(model_settings or {})
        if max_concurrent_tool_calls < 1:
            raise ValueError(f"max_concurrent_tool_calls must be at least 1, got {max_concurrent_tool_calls}.")
        self.max_concurrent_tool_calls = max_concurrent_tool_calls
        if continue_as_new_after_events < 100:
            raise ValueError(f"continue_as_new_after_events must be at least 100, got {continue_as_new_after_events}.")
        self.continue_as_new_after_events = continue_as_new_after_events
        if not isinstance(model_retry_timeout, timedelta) or model_retry_timeout < timedelta(seconds=1):
            raise ValueError(
                f"model_retry_timeout must be a timedelta of at least 1 second, got {model_retry_timeout!r}."
            )
        self.model_retry_timeout = model_retry_timeout

    def tool_spec(self, name: str) -> ToolSpec | None:
        """The spec of the tool called ``name``, or None."""
        return next((t for t in self.tool_specs if t.name == name), None)

    def distinct_hooks(self) -> list[Any]:
        """Every registered hook once, in registration order (a hook may sit at several points)."""
        seen: dict[int, Any] = {}
        for hook_list in self.hooks.values():
            for hook in hook_list:
                seen.setdefault(id(hook), hook)
        return list(seen.values())

    def to_dict(self) -> dict[str, Any]:
        """Serialise the whole spec; hooks by ``to_dict``, tools by name and schema."""
        return {
            "model": self.model,
            "tools": [t.model_dump() for t in self.tool_specs],
            "system_prompt": self.system_prompt,
            "hooks": {point: [object_to_dict(h) for h in hook_list] for point, hook_list in self.hooks.items()},
            "exit_conditions": self.exit_conditions,
            "max_agent_steps": self.max_agent_steps,
            "state_schema": state_schema_to_dict(self.state_schema),
            "model_settings": self.model_settings,
            "max_concurrent_tool_calls": self.max_concurrent_tool_calls,
            "continue_as_new_after_events": self.continue_as_new_after_events,
            "model_retry_timeout_seconds": self.model_retry_timeout.total_seconds(),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> AgentSpec:
        """Rebuild from :meth:`to_dict`'s output (as this class, or the subclass it is called on)."""
        return cls(
            model=data["model"],
            tools=[ToolSpec.model_validate(t) for t in data.get("tools", [])],
            system_prompt=data.get("system_prompt"),
            hooks={
                point: [object_from_dict(h) for h in hook_list] for point, hook_list in data.get("hooks", {}).items()
            },
            exit_conditions=data.get("exit_conditions"),
            max_agent_steps=data.get("max_agent_steps", DEFAULT_MAX_AGENT_STEPS),
            state_schema=state_schema_from_dict(data.get("state_schema", {})),
            model_settings=data.get("model_settings"),
            max_concurrent_tool_calls=data.get("max_concurrent_tool_calls", DEFAULT_MAX_CONCURRENT_TOOL_CALLS),
            continue_as_new_after_events=data.get("continue_as_new_after_events", DEFAULT_CONTINUE_AS_NEW_AFTER_EVENTS),
            model_retry_timeout=timedelta(
                seconds=data.get("model_retry_timeout_seconds", DEFAULT_MODEL_RETRY_TIMEOUT.total_seconds())
            ),
        )
