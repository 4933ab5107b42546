"""``AgentSpec``: what an agent is, as data that travels in the workflow input.

Model, tool specs, hooks by reference, loop settings. The facade's ``Agent`` adds ``start``;
the workflow rebuilds an ``AgentSpec`` from ``to_dict()`` on the worker, so the run's
configuration is in its history and replay never depends on what the worker holds.
"""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any, Literal, get_args

from pydantic import BaseModel

from core.agent_tool import AgentTool
from core.mcp import MCPSource, MCPToolset, split_mcp
from core.models import Fallback, Model, as_model
from core.serialization import object_from_dict, object_to_dict
from core.state import state_schema_from_dict, state_schema_to_dict, validate_state_schema
from core.tools import Tool, Toolset, ToolSpec, flatten_tools
from core.trust import HOOK, modules_named_in

HookPoint = Literal["before_run", "before_llm", "before_tool", "after_tool", "on_exit", "after_run"]

BEFORE_RUN: HookPoint = "before_run"
BEFORE_LLM: HookPoint = "before_llm"
BEFORE_TOOL: HookPoint = "before_tool"
AFTER_TOOL: HookPoint = "after_tool"
ON_EXIT: HookPoint = "on_exit"
AFTER_RUN: HookPoint = "after_run"
VALID_HOOK_POINTS: tuple[HookPoint, ...] = get_args(HookPoint)

#: Key of a serialised hook that is the same object as the hook at an earlier place.
SAME_AS = "same_as"

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


def _unserialised_parts(obj: Any, data: dict[str, Any]) -> list[str]:
    """Objects held by ``obj`` (directly or in a mapping) whose place in ``data`` is None."""
    found = []
    for key, value in (data.get("init_parameters") or {}).items():
        held = getattr(obj, key, None)
        if value is None and held is not None and not isinstance(held, (str, int, float, bool)):
            found.append(f"{type(held).__name__} ({key})")
        elif isinstance(value, dict) and isinstance(held, dict):
            found += [f"{type(v).__name__} ({key}[{k!r}])" for k, v in held.items() if value.get(_key(k), 0) is None]
    return found


_PLAIN = (str, int, float, bool, type(None))


def _settings_lost(original: Any, rebuilt: Any) -> list[str]:
    """Plain settings (strings, numbers, flags) of ``original`` that ``rebuilt`` does not have."""
    lost = []
    for name, value in vars(original).items() if hasattr(original, "__dict__") else ():
        if name.startswith("_") or not isinstance(value, _PLAIN):
            continue
        again = getattr(rebuilt, name, None)
        if again != value:
            lost.append(f"{name}={value!r} came back as {again!r}")
    return lost


def _key(key: Any) -> Any:
    return json.dumps(list(key)) if isinstance(key, tuple) else key


def participant_list(participants: Any) -> list[str] | None:
    """``participants`` checked: None (anyone may send), or a new list of distinct names.

    :raises ValueError: For something other than a list or tuple of names (a single string
        included), an empty list (no one could send), or a blank name or one with spaces around it.
    """
    if participants is None:
        return None
    if isinstance(participants, str) or not isinstance(participants, (list, tuple)):
        raise ValueError(f"participants must be a list of sender names, got {participants!r}.")
    if not participants:
        raise ValueError("participants is empty, so no one could send a message; pass None to let anyone send.")
    names: list[str] = []
    for name in participants:
        if not isinstance(name, str) or not name.strip() or name != name.strip():
            raise ValueError(f"participants holds {name!r}; each must be a non-blank name without spaces around it.")
        if name not in names:
            names.append(name)
    return names


class AgentSpec:
    """An agent: model, tools, hooks and loop settings. Pure data; runs happen in ``AgentWorkflow``.

    :param model: Model name at the OpenAI-compatible endpoint the worker talks to; or a
        ``Model(name, endpoint)``; or ``Fallback([...])``, models tried in order within one call
        (core/models.py).
    :param tools: ``Tool`` objects (from ``@tool``), ``ToolSpec`` or ``Toolset`` groups (flattened),
        and sub-agents (``Agent.as_tool``, each call a child run); only the specs travel.
        ``MCPToolset``/``MCPTool`` travel as an ``MCPSource``; each run lists their tools once
        (``mcp_sources``, ``workflows/mcp_tools.py``).
    :param system_prompt: Prepended as a system message when the run starts.
    :param hooks: ``{hook_point: [hook, ...]}``, run in list order.
    :param exit_conditions: ``"text"`` and/or tool names whose successful call ends the run (a
        name no tool has is accepted, as in Haystack, and never ends a run).
    :param max_agent_steps: Upper bound on model calls in one run; 0 makes none (the run ends with
        ``exit_reason="max_agent_steps"``), as in Haystack.
    :param state_schema: Extra State keys, ``{key: {"type": t, "handler": optional}}``.
    :param model_settings: Extra Chat Completions parameters (temperature, max_tokens, ...).
    :param max_concurrent_tool_calls: How many tool activities of one step run at once.
    :param continue_as_new_after_events: Continue-as-new at a step boundary once the history
        has this many events (Temporal's own suggestion also triggers it).
    :param model_retry_timeout: How long one model call is retried (HTTP 5xx, timeouts, bodies
        that are not completions) before the run fails with the last error; 30 minutes by default.
    :param participants: Who may send messages into a run (``UserMessage.sender``); None: anyone.
    :param stream_tokens: Stream each model call and publish its text to the run's events as it
        arrives (``token`` events, DESIGN.md "Live"); the recorded reply is the same either way.
    :param endpoint: The name of the endpoint ``model`` is called at (``"PRIMARY"``: the worker's
        ``PRIMARY_OPENAI_BASE_URL``/``_API_KEY``); None: the worker's own ``OPENAI_*``. Only with a
        model given by name.
    :param output_type: A pydantic model the final answer must be (its JSON schema goes to the
        model as ``response_format``; the model activity validates each answer, asks once for a
        correction, then fails the run); ``result().output`` is the typed value. A JSON schema
        (a dict) is accepted as well, as the worker rebuilds it.
    :param upgrade_at_turn_boundary: For a session on versioned workers (DESIGN.md "Deploys"):
        continue as new at the next turn boundary onto the deployment's current build once
        Temporal says it changed. False: the session stays on the build it started on.
    :raises TypeError: For a ``stream_tokens`` or ``upgrade_at_turn_boundary`` that is not a bool, or an
        ``output_type`` that is neither a pydantic model class nor a JSON schema.
    :raises ValueError: For an unknown hook point, a hook outside its allowed points, a reserved
        or malformed ``state_schema`` key, duplicate tool names, a ``max_agent_steps`` that is not
        a number, or ``participants`` that is not a non-empty list of names.
    :raises TypeError: For a hook without ``run``/``run_async``.
    """

    def __init__(
        self,
        model: str | Model | Fallback,
        tools: list[Tool | ToolSpec | Toolset | MCPToolset | MCPSource] | None = None,
        system_prompt: str | None = None,
        hooks: dict[HookPoint, list[Any]] | None = None,
        exit_conditions: list[str] | None = None,
        max_agent_steps: int = DEFAULT_MAX_AGENT_STEPS,
        state_schema: dict[str, dict[str, Any]] | None = None,
        model_settings: dict[str, Any] | None = None,
        max_concurrent_tool_calls: int = DEFAULT_MAX_CONCURRENT_TOOL_CALLS,
        continue_as_new_after_events: int = DEFAULT_CONTINUE_AS_NEW_AFTER_EVENTS,
        model_retry_timeout: timedelta = DEFAULT_MODEL_RETRY_TIMEOUT,
        participants: list[str] | None = None,
        stream_tokens: bool = False,
        endpoint: str | None = None,
        output_type: type[BaseModel] | dict[str, Any] | None = None,
        upgrade_at_turn_boundary: bool = False,
    ) -> None:
        for name, flag in (("stream_tokens", stream_tokens), ("upgrade_at_turn_boundary", upgrade_at_turn_boundary)):
            if not isinstance(flag, bool):
                raise TypeError(f"{name} must be True or False, got {flag!r}.")
        self.stream_tokens = stream_tokens
        self.upgrade_at_turn_boundary = upgrade_at_turn_boundary
        if isinstance(model, (Model, Fallback)) and endpoint is not None:
            raise ValueError("Give the endpoint inside Model(...) or Fallback([...]), not as endpoint= as well.")
        choices = model.models if isinstance(model, Fallback) else [as_model(model, endpoint)]
        #: The first model's name (what spans, logs and ``agent run`` show).
        self.model = choices[0].name
        #: Where the first model is called (None: the worker's own endpoint).
        self.endpoint = choices[0].endpoint
        #: The models tried after it, in order, when it fails in a way another endpoint may not.
        self.fallback_models: list[Model] = choices[1:]
        #: The final answer's type (client side only) and its JSON schema (what travels).
        self.output_type: type[BaseModel] | None = None
        self.output_schema: dict[str, Any] | None = None
        if isinstance(output_type, type) and issubclass(output_type, BaseModel):
            self.output_type, self.output_schema = output_type, output_type.model_json_schema()
        elif isinstance(output_type, dict):
            self.output_schema = dict(output_type)
        elif output_type is not None:
            raise TypeError(f"output_type must be a pydantic model class (or a JSON schema), got {output_type!r}.")
        tools, mcp = split_mcp(tools)
        #: The MCP servers' tools, listed when a run starts (the toolsets themselves: a worker serves them).
        self.mcp_sources: list[MCPSource] = [t.source() if isinstance(t, MCPToolset) else t for t in mcp]
        self.mcp_toolsets: list[MCPToolset] = [t for t in mcp if isinstance(t, MCPToolset)]
        self.tool_specs: list[ToolSpec] = [
            t.spec if isinstance(t, (Tool, AgentTool)) else ToolSpec.model_validate(t) for t in flatten_tools(tools)
        ]
        #: The sub-agents' specs by tool name (``Agent.as_tool``): each call of one runs it as a child.
        self.sub_agents: dict[str, dict[str, Any]] = {
            t.name: t.sub_agent for t in flatten_tools(tools) if isinstance(t, AgentTool)
        }
        #: The runnable tools among ``tools``, the sub-agents' included, each once (not serialised:
        #: a worker serves them, e.g. ``agent dev --agent``).
        self.tool_functions: list[Tool] = list(
            {
                id(f): f
                for t in flatten_tools(tools)
                for f in (t.tool_functions if isinstance(t, AgentTool) else [t])
                if isinstance(f, Tool)
            }.values()
        )
        names = [t.name for t in self.tool_specs]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise ValueError(f"Duplicate tool names: {', '.join(duplicates)}.")
        self.system_prompt = system_prompt
        self.hooks: dict[str, list[Any]] = {point: list(hook_list) for point, hook_list in (hooks or {}).items()}
        validate_hooks(self.hooks)
        # As in Haystack, an exit condition naming no tool is accepted (it can never end a run).
        self.exit_conditions = list(exit_conditions or ["text"])
        # As in Haystack, any number: 0 (or less) makes no model call and ends with "max_agent_steps".
        # What is not a number is refused here: the run loop would fail on it mid-run.
        if isinstance(max_agent_steps, bool) or not isinstance(max_agent_steps, (int, float)):
            raise ValueError(f"max_agent_steps must be a number, got {max_agent_steps!r}.")
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
        self.participants = participant_list(participants)

    @property
    def models(self) -> list[Model]:
        """Every model one model call may try, in order: the first, then the fallbacks."""
        return [Model(self.model, self.endpoint), *self.fallback_models]

    def tool_spec(self, name: str) -> ToolSpec | None:
        """The spec of the tool called ``name``, or None."""
        return next((t for t in self.tool_specs if t.name == name), None)

    def served_modules(self) -> set[str]:
        """The modules this agent's own code comes from: its tools' functions (sub-agents' included)
        and every import path its serialised form names. A worker that serves this agent trusts
        them (:mod:`core.trust`), and ``Agent(...)`` checks its own spec against them."""
        return {t.function.__module__ for t in self.tool_functions} | modules_named_in(self.to_dict())

    def distinct_hooks(self) -> list[Any]:
        """Every registered hook once, in registration order (a hook may sit at several points)."""
        seen: dict[int, Any] = {}
        for hook_list in self.hooks.values():
            for hook in hook_list:
                seen.setdefault(id(hook), hook)
        return list(seen.values())

    def hooks_to_dict(self) -> dict[str, list[dict[str, Any]]]:
        """The hooks by ``to_dict``; a hook registered again at a later place is written as
        ``{"same_as": "point/index"}`` of its first place, so it is one object after :meth:`from_dict`."""
        first_place: dict[int, str] = {}
        out: dict[str, list[dict[str, Any]]] = {}
        for point, hook_list in self.hooks.items():
            out[point] = []
            for index, hook in enumerate(hook_list):
                if (place := first_place.get(id(hook))) is not None:
                    out[point].append({SAME_AS: place})
                else:
                    first_place[id(hook)] = f"{point}/{index}"
                    out[point].append(object_to_dict(hook))
        return out

    @staticmethod
    def hooks_from_dict(data: dict[str, list[dict[str, Any]]]) -> dict[str, list[Any]]:
        """Inverse of :meth:`hooks_to_dict`: ``same_as`` entries are the very object of their first place.

        :raises ValueError: For a ``same_as`` that names no earlier place.
        """
        built: dict[str, Any] = {}
        out: dict[str, list[Any]] = {}
        for point, entries in data.items():
            out[point] = []
            for index, entry in enumerate(entries):
                if SAME_AS in entry:
                    if entry[SAME_AS] not in built:
                        raise ValueError(
                            f"Hook at {point}/{index} refers to {entry[SAME_AS]!r}, which comes later or not at all."
                        )
                    hook = built[entry[SAME_AS]]
                else:
                    hook = object_from_dict(entry, HOOK)
                built[f"{point}/{index}"] = hook
                out[point].append(hook)
        return out

    def check_rebuildable(self) -> None:
        """Round-trip every hook (and so each compactor, store, policy and strategy inside it)
        through ``to_dict``/``from_dict``, as the worker will, and compare.

        :raises ValueError: Naming the object and its place (``point[index]``) when it serialises to
            nothing, cannot be rebuilt, or comes back different.
        """
        for point, entries in self.hooks_to_dict().items():
            for index, data in enumerate(entries):
                if isinstance(data, dict) and SAME_AS in data:
                    continue
                hook = self.hooks[point][index]
                where = f"{hook_name(hook)} at {point}[{index}]"
                if not isinstance(data, dict) or "type" not in data:
                    raise ValueError(
                        f"Hook {where} serialises to {data!r}: it cannot travel to the worker. Give it "
                        "to_dict()/from_dict() (core.serialization.default_to_dict/default_from_dict)."
                    )
                for problem in _unserialised_parts(hook, data):
                    raise ValueError(
                        f"{problem} inside hook {where} serialises to None; give it to_dict()/from_dict()."
                    )
                try:
                    rebuilt = object_from_dict(data, HOOK)
                    again = object_to_dict(rebuilt)
                except Exception as err:
                    raise ValueError(
                        f"Hook {where} cannot be rebuilt from its to_dict(): {type(err).__name__}: {err}"
                    ) from err
                lost = _settings_lost(hook, rebuilt)
                if again != data or lost:
                    changed = "; ".join(lost) or f"{data!r} came back as {again!r}"
                    raise ValueError(f"Hook {where} does not survive to_dict()/from_dict(): {changed}.")

    def to_dict(self) -> dict[str, Any]:
        """Serialise the whole spec; hooks by ``to_dict`` (sharing kept), tools by name and schema."""
        return {
            "model": self.model,
            "tools": [t.model_dump() for t in self.tool_specs],
            "system_prompt": self.system_prompt,
            "hooks": self.hooks_to_dict(),
            "exit_conditions": self.exit_conditions,
            "max_agent_steps": self.max_agent_steps,
            "state_schema": state_schema_to_dict(self.state_schema),
            "model_settings": self.model_settings,
            "max_concurrent_tool_calls": self.max_concurrent_tool_calls,
            "continue_as_new_after_events": self.continue_as_new_after_events,
            "model_retry_timeout_seconds": self.model_retry_timeout.total_seconds(),
            "participants": self.participants,
            # Only when there are some, so the specs (and histories) of other agents stay as they were.
            **({"mcp": [s.model_dump() for s in self.mcp_sources]} if self.mcp_sources else {}),
            **({"sub_agents": self.sub_agents} if self.sub_agents else {}),
            "stream_tokens": self.stream_tokens,
            # Only when set, so the specs (and histories) of agents on the worker's endpoint stay as they were.
            **({"endpoint": self.endpoint} if self.endpoint else {}),
            **({"output_schema": self.output_schema} if self.output_schema else {}),
            **({"fallback_models": [m.model_dump() for m in self.fallback_models]} if self.fallback_models else {}),
            **({"upgrade_at_turn_boundary": True} if self.upgrade_at_turn_boundary else {}),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> AgentSpec:
        """Rebuild from :meth:`to_dict`'s output (as this class, or the subclass it is called on).

        Each sub-agent's spec is rebuilt too and dropped: it passes the same trust gate now, so a
        refused path in it fails the parent's run at once, not a child run later.

        :raises core.trust.UntrustedPathError: For a path of the spec (or a sub-agent's) this
            process does not trust.
        """
        sub_agents = data.get("sub_agents") or {}
        for sub_agent in sub_agents.values():
            AgentSpec.from_dict(sub_agent)
        first = Model(data["model"], data.get("endpoint"))
        fallbacks = [Model.model_validate(m) for m in data.get("fallback_models") or []]
        return cls(
            model=Fallback([first, *fallbacks]) if fallbacks else first,
            tools=[
                *(
                    AgentTool.from_spec(ToolSpec.model_validate(t), sub_agents[t["name"]])
                    if t["name"] in sub_agents
                    else ToolSpec.model_validate(t)
                    for t in data.get("tools", [])
                ),
                *(MCPSource.model_validate(s) for s in data.get("mcp", [])),
            ],
            system_prompt=data.get("system_prompt"),
            hooks=cls.hooks_from_dict(data.get("hooks", {})),
            exit_conditions=data.get("exit_conditions"),
            max_agent_steps=data.get("max_agent_steps", DEFAULT_MAX_AGENT_STEPS),
            state_schema=state_schema_from_dict(data.get("state_schema", {})),
            model_settings=data.get("model_settings"),
            max_concurrent_tool_calls=data.get("max_concurrent_tool_calls", DEFAULT_MAX_CONCURRENT_TOOL_CALLS),
            continue_as_new_after_events=data.get("continue_as_new_after_events", DEFAULT_CONTINUE_AS_NEW_AFTER_EVENTS),
            model_retry_timeout=timedelta(
                seconds=data.get("model_retry_timeout_seconds", DEFAULT_MODEL_RETRY_TIMEOUT.total_seconds())
            ),
            participants=data.get("participants"),
            stream_tokens=data.get("stream_tokens", False),
            output_type=data.get("output_schema"),
            upgrade_at_turn_boundary=data.get("upgrade_at_turn_boundary", False),
        )
