"""User agents that `agent run --agent tests.support.cli_agents:...` points at (tests/agent/cli/test_cli_runs.py).

They use only tools of the test worker (tests.tools.TEST_TOOLS). The model name comes from
``CLI_TEST_MODEL`` so each test scripts its own replies.
"""

from __future__ import annotations

import os
from datetime import timedelta

from agent import Agent
from hooks import FunctionHook
from hooks.human_in_the_loop import AlwaysAskPolicy, ConfirmationHook, DurableConfirmationStrategy
from tests import tools as t

MODEL_ENV = "CLI_TEST_MODEL"


def make_agent() -> Agent:
    """A user's agent with a system prompt of its own and two of the test worker's tools."""
    return Agent(
        model=os.environ[MODEL_ENV],
        tools=[t.echo, t.add],
        system_prompt="You are the CLI test's own agent.",
        max_agent_steps=5,
    )


def make_failing_agent() -> Agent:
    """An agent whose before_llm hook raises: the run fails at once."""
    return Agent(
        model=os.environ[MODEL_ENV],
        tools=[t.echo],
        hooks={"before_llm": [FunctionHook(t.raise_value_error)]},
    )


NOT_AN_AGENT = 42


def returns_a_string() -> str:
    return "not an agent"


def make_approval_agent() -> Agent:
    """An agent whose ``echo`` calls wait for a person (one hour)."""
    strategy = DurableConfirmationStrategy(AlwaysAskPolicy(), timeout=timedelta(hours=1))
    return Agent(
        model=os.environ[MODEL_ENV], tools=[t.echo], hooks={"before_tool": [ConfirmationHook({"echo": strategy})]}
    )


def make_chat_agent() -> Agent:
    """A session agent for `agent chat --agent` (only ann and bob may write to it)."""
    return Agent(model=os.environ[MODEL_ENV], tools=[t.add], participants=["ann", "bob"])


def make_streaming_chat_agent() -> Agent:
    """A session agent that streams its model calls' tokens (``agent chat --agent``)."""
    return Agent(model=os.environ[MODEL_ENV], tools=[t.add], stream_tokens=True)
