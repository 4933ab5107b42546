"""Hooks for the spec tests, in a module of their own: ``Agent(...)`` imports each hook's module
inside Temporal's workflow sandbox, as a worker would, and a test module (which imports pytest)
is not one the sandbox can load."""

from __future__ import annotations

from typing import Any

from core.state import State


class ForgetsItsSetting:
    """A hook whose to_dict loses a constructor argument: the worker would rebuild another hook."""

    def __init__(self, limit: int = 1) -> None:
        self.limit = limit

    def run(self, state: State) -> None:
        pass

    def to_dict(self) -> dict[str, Any]:
        return {"type": "tests.support.spec_hooks.ForgetsItsSetting", "init_parameters": {}}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ForgetsItsSetting:
        return cls(**data["init_parameters"])
