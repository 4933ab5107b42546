"""Differential test against haystack-ai 3.4.1: which lifecycle methods ``CompactionHook`` calls on
its token counter and its compactor, observed on parts that record every call."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from haystack.hooks.compaction import CompactionHook as HCompactionHook

from hooks.compaction import CompactionHook


class Part:
    """A counter or compactor with the lifecycle methods named in ``methods``, each recording its call."""

    def __init__(self, methods: tuple[str, ...]) -> None:
        self.calls: list[str] = []
        for name in methods:
            if name.endswith("_async"):

                async def method(name: str = name) -> None:
                    await asyncio.sleep(0)
                    self.calls.append(name)

            else:

                def method(name: str = name) -> None:
                    self.calls.append(name)

            setattr(self, name, method)

    def count(self, messages, tools=None) -> int:
        return sum(len(m.text or "") for m in messages)

    def compact(self, messages, target_tokens, token_counter):
        return None

    def to_dict(self) -> dict[str, Any]:
        return {"type": f"{__name__}.Part", "init_parameters": {}}


ALL = ("warm_up", "warm_up_async", "close", "close_async")
LAYOUTS = [ALL, ("warm_up", "close"), ("warm_up_async", "close_async"), ("warm_up",), ("close_async",), ()]


def observe(hook_type, counter_methods, compactor_methods, sequence) -> tuple[list[str], list[str]]:
    counter, compactor = Part(counter_methods), Part(compactor_methods)
    if hook_type is HCompactionHook:
        hook = HCompactionHook(compactor, context_window=1000, token_counter=counter)
    else:
        hook = CompactionHook(compactor, context_window=1000, token_counter=counter)
    for step in sequence:
        outcome = getattr(hook, step)()
        if asyncio.iscoroutine(outcome):
            asyncio.run(outcome)
    return counter.calls, compactor.calls


@pytest.mark.parametrize("counter_methods", LAYOUTS)
@pytest.mark.parametrize("compactor_methods", LAYOUTS)
@pytest.mark.parametrize("sequence", [("warm_up_async", "close_async"), ("warm_up", "close")])
def test_lifecycle_reaches_the_same_methods_as_haystacks(counter_methods, compactor_methods, sequence):
    theirs = observe(HCompactionHook, counter_methods, compactor_methods, sequence)
    ours = observe(CompactionHook, counter_methods, compactor_methods, sequence)
    assert ours == theirs


def test_a_counters_warm_up_async_is_never_called_in_either():
    counter_calls, _ = observe(CompactionHook, ALL, (), ("warm_up_async",))
    assert counter_calls == ["warm_up"]
    assert observe(HCompactionHook, ALL, (), ("warm_up_async",))[0] == ["warm_up"]
