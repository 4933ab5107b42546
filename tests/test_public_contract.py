"""The names DESIGN.md's public contract lists stay importable where it lists them."""

from __future__ import annotations

import importlib

import pytest

import agent

CONTRACT = {
    "agent": [
        "Agent",
        "ChatMessage",
        "ToolCall",
        "tool",
        "get_run",
        "connect",
        "AgentPlugin",
        "MCPTool",
        "MCPToolset",
        "StdioServerInfo",
        "StreamableHttpServerInfo",
    ],
    "hooks": ["hook", "FunctionHook"],
    "hooks.human_in_the_loop": [
        "ConfirmationHook",
        "DurableConfirmationStrategy",
        "AlwaysAskPolicy",
        "NeverAskPolicy",
        "AskOncePolicy",
        "BlockingConfirmationStrategy",
        "ConfirmationUI",
        "SimpleConsoleUI",
        "RichConsoleUI",
        "RulePolicy",
        "Escalation",
        "WebhookNotifier",
    ],
    "hooks.tool_result_offloading": [
        "ToolResultOffloadHook",
        "S3ToolResultStore",
        "FileSystemToolResultStore",
        "AlwaysOffload",
        "NeverOffload",
        "OffloadOverChars",
    ],
    "hooks.compaction": [
        "CompactionHook",
        "SlidingWindowCompactor",
        "ToolResultPruningCompactor",
        "SummarizationCompactor",
        "ToolResultOffloadCompactor",
        "TiktokenCounter",
    ],
    "hooks.budget": ["TokenBudgetHook"],
    "hooks.audit": ["AuditHook"],
    "worker": ["create_worker"],
    # imported from these paths by client programs (README, bench/)
    "agent.client": ["AgentRunHandle", "connect", "get_run"],
    "agent.approvals.decisions": [
        "ConfirmationError",
        "DecisionRefusedError",
        "UnknownRunError",
        "RunNotAnsweringError",
        "submit_decision",
        "signal_decision",
        "query_pending",
    ],
    "agent.approvals.waiting": ["WaitingRuns", "iter_waiting_runs", "list_waiting_runs"],
}


@pytest.mark.parametrize(("module", "names"), list(CONTRACT.items()))
def test_contract_names_import(module: str, names: list[str]) -> None:
    imported = importlib.import_module(module)
    assert [n for n in names if not hasattr(imported, n)] == []


def test_lazy_agent_package_exports_what_it_lists() -> None:
    assert set(agent.__all__) == set(agent._EXPORTS)
    for name in agent.__all__:
        assert getattr(agent, name) is not None
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        agent.Nope  # noqa: B018
