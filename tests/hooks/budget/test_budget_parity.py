"""TokenBudgetHook decides as haystack-ai 3.4.1's does: both are fed the same seeded random usage and
must agree on every case, so a drift from the reference shows as a differing case."""

from __future__ import annotations

import random

import pytest
from haystack.components.agents.state.state import State as HaystackState
from haystack.dataclasses import ChatMessage as HaystackChatMessage
from haystack.hooks.budget import TokenBudgetHook as HaystackTokenBudgetHook

from core.state import State
from hooks.budget import TokenBudgetHook

pytestmark = pytest.mark.filterwarnings("ignore:.*is an experimental component")

SEEDS = range(40)
CASES_PER_SEED = 25
KEYS = ("total_tokens", "prompt_tokens", "completion_tokens", "input_tokens", "output_tokens")


def random_usage(rng: random.Random) -> dict | None:
    if rng.random() < 0.05:
        return None
    usage: dict = {}
    for key in rng.sample(KEYS, rng.randint(0, len(KEYS))):
        usage[key] = rng.choice([0, rng.randint(1, 3000), float(rng.randint(1, 3000)), True, "12", None])
    if rng.random() < 0.3:
        usage["prompt_tokens_details"] = {"cached_tokens": rng.randint(0, 100)}
    return usage


@pytest.mark.parametrize("seed", SEEDS)
def test_stop_and_final_message_match_haystack(seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(CASES_PER_SEED):
        usage = random_usage(rng)
        budget = rng.randint(1, 4000)
        final = rng.random() < 0.5
        ours = State(data={"messages": [], "token_usage": usage, "stop_run": None})
        TokenBudgetHook(max_total_tokens=budget, add_final_message=final).run(ours)
        theirs = HaystackState(
            schema={"token_usage": {"type": dict}, "stop_run": {"type": str}},
            data={"messages": [], "token_usage": usage, "stop_run": None},
        )
        HaystackTokenBudgetHook(max_total_tokens=budget, add_final_message=final).run(theirs)
        assert ours.data.get("stop_run") == theirs.data.get("stop_run"), (usage, budget)
        ours_texts = [m.text for m in ours.data["messages"]]
        theirs_texts = [m.text for m in theirs.data["messages"] if isinstance(m, HaystackChatMessage)]
        assert ours_texts == theirs_texts, (usage, budget)
