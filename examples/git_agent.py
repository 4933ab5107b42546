"""An agent on a git MCP server: ``mcp-server-git`` (from PyPI, over stdio) on one repository.

The repository is ``$GIT_AGENT_REPOSITORY`` (default: the current directory); the server is
started with ``--repository`` so it refuses any other. The agent may read the history freely;
``git_commit`` asks a person first (a confirmation applies to an MCP tool by its name).

Serve it, then run it (with the venv active, so ``mcp-server-git`` is on ``PATH``)::

    agent dev --agent examples.git_agent:agent            # or: python worker.py --tools examples.git_agent:agent
    agent run --agent examples.git_agent:agent --wait "What changed lately?"

The worker starts one ``mcp-server-git`` process when it starts and stops it when it stops.
``$GIT_AGENT_MODEL`` names the model (default ``gpt-4o-mini``).
"""

from __future__ import annotations

import os
from datetime import timedelta

from agent import Agent, MCPToolset, StdioServerInfo
from hooks.human_in_the_loop import AlwaysAskPolicy, ConfirmationHook, DurableConfirmationStrategy

#: What the agent may do: read the history and the working tree, stage, and (asked first) commit.
GIT_TOOLS = ["git_status", "git_log", "git_show", "git_diff_unstaged", "git_add", "git_commit"]


def git_agent(repository: str, model: str = "gpt-4o-mini") -> Agent:
    """The agent on ``mcp-server-git --repository <repository>``.

    :param repository: Path of the git repository (made absolute).
    :param model: The model name.
    """
    repository = os.path.abspath(repository)
    git = MCPToolset(StdioServerInfo(command="mcp-server-git", args=["--repository", repository]), tool_names=GIT_TOOLS)
    ask = DurableConfirmationStrategy(confirmation_policy=AlwaysAskPolicy(), timeout=timedelta(days=1))
    return Agent(
        model=model,
        tools=[git],
        system_prompt=f"You look after the git repository at {repository}; pass it as repo_path.",
        hooks={"before_tool": [ConfirmationHook({"git_commit": ask})]},
    )


agent = git_agent(os.environ.get("GIT_AGENT_REPOSITORY", "."), os.environ.get("GIT_AGENT_MODEL", "gpt-4o-mini"))
