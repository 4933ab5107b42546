"""Token budget: stop a run before the next model call once it has used its tokens (Haystack 3.x semantics)."""

from hooks.budget.hooks import TokenBudgetHook
from hooks.family import HookFamily

#: The budget needs nothing beyond its hook.
FAMILY = HookFamily(name="budget")

__all__ = ["TokenBudgetHook"]
