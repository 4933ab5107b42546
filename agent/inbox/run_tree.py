"""The tree of runs a run belongs to: its parent, its sub-agents' child runs (``Agent.as_tool``),
theirs, from one ``describe`` and one visibility listing (``RootWorkflowId``), for the run page."""

from __future__ import annotations

from dataclasses import dataclass, field

from temporalio.client import Client
from temporalio.service import RPCError

#: The most runs of one tree the run page lists.
MAX_TREE_RUNS = 200


@dataclass
class RunNode:
    """One run of a tree.

    :param run_id: The run (workflow id).
    :param status: Temporal's status, lower case (``running``, ``completed``, ...).
    :param children: Its child runs, in start order.
    """

    run_id: str
    status: str
    children: list[RunNode] = field(default_factory=list)


def _quoted(value: str) -> str:
    """``value`` as a string literal of a visibility query."""
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


async def run_tree(client: Client, run_id: str) -> RunNode | None:
    """The tree from the root run down, or None when ``run_id`` has no parent and no children
    (or Temporal does not answer: the tree is an extra, the page shows the run without it).

    Visibility is eventually consistent: a child started a moment ago may not be listed yet.
    """
    try:
        description = await client.get_workflow_handle(run_id).describe()
        root = description.raw_description.workflow_execution_info.root_execution.workflow_id or run_id
        nodes: dict[str, RunNode] = {}
        parents: dict[str, str | None] = {}
        async for execution in client.list_workflows(f"RootWorkflowId = {_quoted(root)}", limit=MAX_TREE_RUNS):
            status = execution.status.name.lower() if execution.status else "unknown"
            nodes.setdefault(execution.id, RunNode(execution.id, status))
            parents[execution.id] = execution.parent_id
    except RPCError:
        return None
    if len(nodes) < 2 or root not in nodes:
        return None
    ordered = sorted(nodes.values(), key=lambda node: node.run_id)
    for node in ordered:
        parent = parents.get(node.run_id)
        if parent in nodes and parent != node.run_id:
            nodes[parent].children.append(node)
    return nodes[root]
