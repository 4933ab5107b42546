"""The gate every import path in a run's input passes: a run's input is data, never code.

Whoever can start or signal ``AgentWorkflow`` writes the run's input, and the input names hooks,
policies, stores, functions and types by import path. The worker's operator, not the input,
decides which code may be rebuilt from those paths. A path is imported only when

1. its module is trusted, checked **before** anything is imported: one of the project's packages
   (:data:`PROJECT_PACKAGES`), a module of an agent or tool the process serves (registered with
   :func:`trust_modules` by ``create_worker``, ``python worker.py --tools``, ``agent dev --agent``
   and ``Agent(...)``), or a prefix listed in ``AGENT_TRUSTED_MODULES``;
2. the object it resolves to comes from a trusted module too (its ``__module__``: a trusted module
   re-exporting ``os.system`` does not make ``os.system`` trusted), through no dunder attribute;
3. the object is what its :class:`Slot` expects: a class with the slot's methods (a hook, a
   policy, a store, ...), or a plain function for a function slot, checked before anything is
   constructed or called.

A refusal is an :class:`UntrustedPathError` (a ``ValueError``) naming the path, the slot and the
setting that would allow it; the run fails at once with it (workflows/agent_workflow.py turns a
rebuild error into a non-retryable failure). Haystack 3.4 guards its own serialised form the same
way (``haystack.core.serialization_security``: allowed module prefixes checked before import).

The registry is process-wide: workflow code reads it and never the environment (settings are read
where the process starts, by :func:`trust_configured_modules`).
"""

from __future__ import annotations

import importlib
import inspect
import sys
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from temporalio import workflow

from core.settings import get_settings

#: The project's own packages: always trusted.
PROJECT_PACKAGES: tuple[str, ...] = ("core", "activities", "hooks", "workflows", "runtime", "agent", "worker")
TRUSTED_MODULES_ENV = "AGENT_TRUSTED_MODULES"
#: Keys of a serialised agent whose string values are import paths (hooks' classes, function
#: hooks' functions, state-schema types and handlers).
PATH_KEYS = frozenset({"type", "function", "async_function", "handler"})

_lock = threading.Lock()
_trusted: set[str] = set()
_settings_read = False
#: Modules trusted only for the check under way (``Agent(...)`` checking its own spec), so that an
#: agent a client builds never widens what a worker in the same process accepts from input.
_trusted_here: ContextVar[frozenset[str]] = ContextVar("trusted_here", default=frozenset())


class UntrustedPathError(ValueError):
    """An import path of a run's input that this process refuses to import or use."""


@dataclass(frozen=True)
class Slot:
    """What one place of a serialised agent expects its path to resolve to.

    :param name: The slot, as errors say it ("hook", "confirmation policy", ...).
    :param methods: Methods the class must have, every one.
    :param any_of: Methods of which the class must have at least one.
    :param function: The slot takes a plain function (a ``FunctionHook`` function, a state
        handler) instead of a class.
    """

    name: str
    methods: tuple[str, ...] = ()
    any_of: tuple[str, ...] = ()
    function: bool = False

    def problem(self, obj: Any) -> str | None:
        """Why ``obj`` does not fit this slot, or None."""
        if self.function:
            if inspect.isfunction(obj) or _is_function_hook(obj):
                return None
            return f"it is a {type(obj).__name__}, not a function"
        if not isinstance(obj, type):
            return f"it is a {type(obj).__name__}, not a class"
        missing = [m for m in self.methods if not callable(getattr(obj, m, None))]
        if self.any_of and not any(callable(getattr(obj, m, None)) for m in self.any_of):
            missing.append(" or ".join(self.any_of))
        if missing:
            return f"{obj.__qualname__} has no {', '.join(missing)}"
        return None


#: Any class (a slot with no protocol of its own, such as a state-schema type).
ANY_CLASS = Slot("class")


def _is_function_hook(obj: Any) -> bool:
    # ``@hook`` replaces the module attribute by its FunctionHook; hooks/ is above this layer.
    return type(obj).__name__ == "FunctionHook" and type(obj).__module__.startswith("hooks.")


def trust_modules(modules: Iterable[str]) -> None:
    """Trust these modules (and the modules below them) in this process.

    :param modules: Dotted module names or package prefixes; empty strings are ignored.
    """
    names = {m.strip() for m in modules if m and m.strip()}
    with _lock:
        _trusted.update(names)


def trust_configured_modules(configured: str | None) -> None:
    """Trust the prefixes of ``AGENT_TRUSTED_MODULES`` (comma-separated), read where the process
    starts (worker, client, CLI), never in workflow code."""
    if configured:
        trust_modules(configured.split(","))


@contextmanager
def trusting(modules: Iterable[str]) -> Iterator[None]:
    """Trust ``modules`` as well, for the checks made inside this block only (this task or thread)."""
    token = _trusted_here.set(_trusted_here.get() | {m for m in modules if m})
    try:
        yield
    finally:
        _trusted_here.reset(token)


def trusted_modules() -> tuple[str, ...]:
    """Every trusted prefix of this process (and of the block under way), the project's packages first.

    The first call outside a workflow reads ``AGENT_TRUSTED_MODULES`` (a worker's plugin reads it
    when the worker is built, so workflow code never needs to)."""
    global _settings_read
    if not _settings_read and not workflow.in_workflow():
        _settings_read = True
        trust_configured_modules(get_settings().trusted_modules)
    with _lock:
        extra = (_trusted | _trusted_here.get()) - set(PROJECT_PACKAGES)
    return (*PROJECT_PACKAGES, *sorted(extra))


def is_trusted_module(module: str, prefixes: Sequence[str] | None = None) -> bool:
    """Whether ``module`` is a trusted module or lies below one.

    :param prefixes: The trusted prefixes, when the caller already has them (:func:`trusted_modules`).
    """
    prefixes = trusted_modules() if prefixes is None else prefixes
    return any(module == prefix or module.startswith(prefix + ".") for prefix in prefixes)


def _refusal(path: str, slot: Slot, why: str, prefixes: Sequence[str]) -> UntrustedPathError:
    return UntrustedPathError(
        f"Refused {slot.name} {path!r}: {why}. This process rebuilds only code from the project's packages, "
        f"the modules of the agents and tools it serves, and {TRUSTED_MODULES_ENV} (comma-separated module "
        f"prefixes; trusted now: {', '.join(prefixes)}). If {path!r} is yours, add its module to "
        f"{TRUSTED_MODULES_ENV} on the worker, or serve the agent that uses it (python worker.py --tools "
        "module:agent, agent dev --agent module:agent)."
    )


def import_trusted(path: str, slot: Slot) -> Any:
    """Resolve ``module.Qualified.Name`` after checking it may be, and that it fits ``slot``.

    :param path: The import path, as the run's input names it.
    :param slot: What the path must resolve to.
    :raises UntrustedPathError: If the module is not trusted (nothing is imported then), the
        object comes from an untrusted module, a part of the path is a dunder, or the object does
        not fit the slot.
    :raises ValueError: If nothing can be found at the path.
    """
    if not isinstance(path, str) or not path or any(not part for part in path.split(".")):
        raise UntrustedPathError(f"Refused {slot.name} {path!r}: not an import path such as 'package.module.Class'.")
    parts = path.split(".")
    prefixes = trusted_modules()  # once a path: a replay rebuilds every path of the run
    if any(part.startswith("__") for part in parts):
        raise _refusal(path, slot, "a path through a dunder attribute is never followed", prefixes)
    if not any(is_trusted_module(".".join(parts[:split]), prefixes) for split in range(1, len(parts))):
        raise _refusal(path, slot, f"no module of it is trusted ({'.'.join(parts[:-1]) or path})", prefixes)
    obj = resolve_path(path, may_import=lambda module: is_trusted_module(module, prefixes))
    check_origin(path, obj, slot, prefixes)
    problem = slot.problem(obj)
    if problem:
        raise UntrustedPathError(f"Refused {slot.name} {path!r}: {problem}, so it cannot be a {slot.name}.")
    return obj


def check_origin(path: str, obj: Any, slot: Slot, prefixes: Sequence[str] | None = None) -> None:
    """Refuse ``obj`` (what ``path`` resolved to) unless its own module is trusted.

    :param prefixes: The trusted prefixes, when the caller already has them.
    :raises UntrustedPathError: Naming the path and the object's module.
    """
    prefixes = trusted_modules() if prefixes is None else prefixes
    origin = getattr(obj, "__module__", None)
    if not isinstance(origin, str) or not is_trusted_module(origin, prefixes):
        why = f"it resolves to an object of module {origin!r}, which is not trusted"
        raise _refusal(path, slot, why, prefixes)


def resolve_path(path: str, may_import: Callable[[str], bool] = lambda module: True) -> Any:
    """Import the longest module prefix of ``module.Qualified.Name`` that ``may_import`` allows and
    walk the rest as attributes; a prefix it refuses is never imported.

    :raises ValueError: If the module or attribute cannot be found.
    """
    parts = path.split(".")
    for split in range(len(parts) - 1, 0, -1):
        module_name = ".".join(parts[:split])
        if not may_import(module_name):
            continue
        try:
            obj: Any = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name and (module_name == exc.name or module_name.startswith(exc.name + ".")):
                continue
            raise ValueError(f"Cannot import '{path}': {exc}") from exc
        try:
            for attr in parts[split:]:
                obj = getattr(obj, attr)
        except AttributeError as exc:
            raise ValueError(f"Cannot import '{path}': {exc}") from exc
        return obj
    raise ValueError(f"Cannot import '{path}': no such module.")


def module_of_path(path: str) -> str | None:
    """The module an import path lives in, among the modules this process has imported."""
    parts = path.split(".")
    for split in range(len(parts) - 1, 0, -1):
        name = ".".join(parts[:split])
        if name in sys.modules:
            return name
    return None


def modules_named_in(data: Any) -> set[str]:
    """The imported modules a serialised agent (or any part of one) names by import path."""
    found: set[str] = set()
    stack = [data]
    while stack:
        item = stack.pop()
        if isinstance(item, Mapping):
            for key, value in item.items():
                if key in PATH_KEYS and isinstance(value, str) and "." in value:
                    module = module_of_path(value)
                    if module:
                        found.add(module)
                else:
                    stack.append(value)
        elif isinstance(item, (list, tuple)):
            stack.extend(item)
    return found


#: The slots the run loop itself fills from a run's input; hook families declare their own.
HOOK = Slot("hook", any_of=("run", "run_async"))
HOOK_FUNCTION = Slot("hook function", function=True)
STATE_TYPE = Slot("state-schema type")
STATE_HANDLER = Slot("state-schema handler", function=True)
