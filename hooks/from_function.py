"""Hooks made from plain functions: ``@hook`` and ``FunctionHook`` (as in Haystack).

The function travels by import path, so it must be defined at module level in a module the
worker can import. It runs as workflow code: keep it deterministic.
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Awaitable, Callable
from typing import Any

from core.serialization import import_path
from core.state import State
from core.trust import HOOK_FUNCTION, check_origin, import_trusted


class FunctionHook:
    """Wraps a sync function, an async function, or both, into a serialisable hook.

    :param function: ``(State) -> None``, called by ``run`` (and by ``run_async`` when there is
        no ``async_function``).
    :param async_function: ``async (State) -> None``, awaited by ``run_async``; it may await
        activities (``workflow.execute_activity``) for I/O.
    :raises ValueError: If neither is given, if they are of the wrong kind (sync vs async), if a
        function does not take a single ``State``-annotated parameter, or if it cannot be imported
        by path (lambda, nested function).
    """

    def __init__(
        self,
        function: Callable[[State], None] | None = None,
        async_function: Callable[[State], Awaitable[None]] | None = None,
    ) -> None:
        if function is None and async_function is None:
            raise ValueError("A FunctionHook needs `function`, `async_function`, or both.")
        if function is not None and inspect.iscoroutinefunction(function):
            raise ValueError(f"`function` must be synchronous; pass '{function.__name__}' as `async_function`.")
        if async_function is not None and not inspect.iscoroutinefunction(async_function):
            raise ValueError(f"`async_function` must be defined with `async def`, got {async_function!r}.")
        for func in (function, async_function):
            if func is not None:
                import_path(func)  # fail now, not on the worker
                if not _takes_only_state(func):
                    raise ValueError(
                        f"Hook function '{func.__name__}' must take a single parameter annotated with `State` "
                        "(e.g. `def my_hook(state: State) -> None`)."
                    )
        self.function = function
        self.async_function = async_function

    @property
    def name(self) -> str:
        """The wrapped function's import path (for logs and errors)."""
        return import_path(self.function or self.async_function)

    def run(self, state: State) -> None:
        """Call the sync function.

        :raises RuntimeError: If the hook has only an async function.
        """
        if self.function is None:
            raise RuntimeError(f"FunctionHook '{self.name}' has only an async function; use run_async.")
        self.function(state)

    async def run_async(self, state: State) -> None:
        """Await the async function if there is one, else call the sync one."""
        if self.async_function is not None:
            await self.async_function(state)
        else:
            self.function(state)  # type: ignore[misc]

    def to_dict(self) -> dict[str, Any]:
        """Serialise by the functions' import paths."""
        return {
            "type": import_path(type(self)),
            "init_parameters": {
                "function": import_path(self.function) if self.function else None,
                "async_function": import_path(self.async_function) if self.async_function else None,
            },
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> FunctionHook:
        """Rebuild by importing the functions."""
        params = data.get("init_parameters", {})
        return cls(
            function=_import_function(params.get("function"), "function"),
            async_function=_import_function(params.get("async_function"), "async_function"),
        )

    def __repr__(self) -> str:
        return f"FunctionHook({self.name})"


def _takes_only_state(function: Callable[..., Any]) -> bool:
    """Whether ``function`` takes exactly one parameter, annotated with ``State`` (as Haystack checks)."""
    parameters = list(inspect.signature(function).parameters.values())
    if len(parameters) != 1:
        return False
    try:
        hints = typing.get_type_hints(function)
    except Exception:  # an annotation that does not resolve is not State
        return False
    return hints.get(parameters[0].name) is State


def _import_function(path: str | None, slot: str) -> Callable[..., Any] | None:
    """Import a hook function; ``@hook`` replaced the module attribute with its FunctionHook,
    so unwrap that back to the function."""
    if not path:
        return None
    obj = import_trusted(path, HOOK_FUNCTION)
    if isinstance(obj, FunctionHook):
        obj = getattr(obj, slot)
        check_origin(path, obj, HOOK_FUNCTION)  # the wrapped function's own module, not FunctionHook's
    return obj


def hook(function: Callable[[State], Any]) -> FunctionHook:
    """Decorator: make a hook from ``def f(state: State) -> None`` (or ``async def``).

    :param function: A module-level function taking the run's ``State``.
    :returns: A :class:`FunctionHook`; register it under any hook point.
    """
    if inspect.iscoroutinefunction(function):
        return FunctionHook(async_function=function)
    return FunctionHook(function=function)
