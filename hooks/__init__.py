"""Hooks: deterministic steps at six points of the durable run loop (Haystack 3.x semantics)."""

from hooks.from_function import FunctionHook, hook
from hooks.protocol import (
    AFTER_RUN,
    AFTER_TOOL,
    BEFORE_LLM,
    BEFORE_RUN,
    BEFORE_TOOL,
    ON_EXIT,
    VALID_HOOK_POINTS,
    Hook,
    HookPoint,
)

__all__ = [
    "AFTER_RUN",
    "AFTER_TOOL",
    "BEFORE_LLM",
    "BEFORE_RUN",
    "BEFORE_TOOL",
    "ON_EXIT",
    "VALID_HOOK_POINTS",
    "FunctionHook",
    "Hook",
    "HookPoint",
    "hook",
]
