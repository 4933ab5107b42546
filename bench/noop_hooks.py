"""No-op hooks for the step-overhead benchmark (importable by the worker)."""

from core.state import State
from hooks import hook


@hook
def noop(state: State) -> None:
    return None


SIX_NOOP_HOOKS = {
    point: [noop] for point in ("before_run", "before_llm", "before_tool", "after_tool", "on_exit", "after_run")
}
