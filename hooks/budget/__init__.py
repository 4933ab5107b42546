"""Token budget: stop a run before the next model call once it has used its tokens (Haystack 3.x semantics)."""

from hooks.budget.hooks import TokenBudgetHook

__all__ = ["TokenBudgetHook"]
