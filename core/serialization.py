"""Hooks travel by reference: ``{"type": "module.Class", "init_parameters": {...}}``.

The dict goes into the workflow input, so a run's hook configuration is in its history and
replay never depends on what the worker happens to hold. The input is data written by whoever
can start a run: :func:`object_from_dict` rebuilds only what passes :mod:`core.trust`'s gate.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from core.trust import ANY_CLASS, Slot, import_trusted, resolve_path

T = TypeVar("T")


def import_path(obj: Any) -> str:
    """``module.QualifiedName`` of a class or function.

    :raises ValueError: For lambdas and nested functions, which cannot be imported back.
    """
    qualname = getattr(obj, "__qualname__", None)
    module = getattr(obj, "__module__", None)
    if not qualname or not module or "<" in qualname:
        raise ValueError(
            f"{obj!r} cannot be serialised by import path: use a module-level function or class "
            "(lambdas and nested functions cannot be imported on the worker)."
        )
    return f"{module}.{qualname}"


def import_object(path: str) -> Any:
    """Resolve ``module.Qualified.Name`` with no trust check: only for paths the process's operator
    typed (``--tools``, ``--agent``), never for a path read from a run's input
    (:func:`core.trust.import_trusted` is for those).

    :raises ValueError: If the module or attribute cannot be found.
    """
    return resolve_path(path)


def hook_import_path(hook: Any) -> str:
    """How messages name a hook: a ``FunctionHook``'s function path, else the class's import path."""
    name = getattr(hook, "name", None)
    if isinstance(name, str) and "." in name:
        return name
    try:
        return import_path(type(hook))
    except ValueError:
        return type(hook).__qualname__


def default_to_dict(obj: Any, **init_parameters: Any) -> dict[str, Any]:
    """The standard serialised form of ``obj`` built with ``init_parameters``."""
    return {"type": import_path(type(obj)), "init_parameters": init_parameters}


def default_from_dict(cls: type[T], data: dict[str, Any]) -> T:
    """Build ``cls`` from :func:`default_to_dict`'s output."""
    return cls(**data.get("init_parameters", {}))


def object_to_dict(obj: Any) -> dict[str, Any]:
    """Serialise any object that has ``to_dict`` (a hook, policy, strategy, store, compactor)."""
    to_dict: Callable[[], dict[str, Any]] | None = getattr(obj, "to_dict", None)
    if to_dict is None:
        raise ValueError(f"{type(obj).__name__} has no to_dict(); it cannot travel in a workflow input.")
    return to_dict()


def object_from_dict(data: dict[str, Any], slot: Slot = ANY_CLASS) -> Any:
    """Rebuild an object serialised by :func:`object_to_dict`, through its class's ``from_dict``.

    :param data: ``{"type": "module.Class", "init_parameters": {...}}``, as read from a run's input.
    :param slot: What the type must be (a hook, a policy, a store, ...), checked before construction.
    :raises core.trust.UntrustedPathError: If the type's module is not trusted or the class does not
        fit ``slot`` (nothing is imported or constructed then).
    :raises ValueError: If ``data`` has no ``type`` or the type cannot be imported.
    """
    if not isinstance(data, dict) or "type" not in data:
        raise ValueError(f"Serialised object has no 'type': {data!r}")
    cls = import_trusted(data["type"], slot)
    from_dict = getattr(cls, "from_dict", None)
    return from_dict(data) if from_dict is not None else default_from_dict(cls, data)
