"""Listing waiting runs (``list_waiting_runs``, ``iter_waiting_runs``, ``agent pending``) over
several visibility pages, on the dev server: an approver must see every waiting run, not only the
first page.

The runs are started in a namespace of this module's own, on a task queue no worker polls, with
the memo and the ``AgentWaitingForApproval`` search attribute a parked run publishes (the
confirmation registry's ``_advertise``): the listing reads only visibility, so it sees them exactly as
it sees parked runs, and the test knows every run of the namespace.
"""

from __future__ import annotations

import argparse
import json
import time
from datetime import UTC, datetime, timedelta

import pytest
from temporalio.api.enums.v1 import IndexedValueType
from temporalio.api.operatorservice.v1 import AddSearchAttributesRequest
from temporalio.common import SearchAttributePair, TypedSearchAttributes

from agent import connect
from agent.approvals.commands import add_commands
from agent.approvals.decisions import ConfirmationError
from agent.approvals.waiting import iter_waiting_runs, list_waiting_runs
from core.wire import WORKFLOW_TYPE
from hooks.human_in_the_loop.dataclasses import PendingSummary
from hooks.human_in_the_loop.wire import PENDING_MEMO_KEY, WAITING_FOR_APPROVAL, WAITING_RUNS_QUERY
from tests.support.namespaces import register_namespace
from tests.support.polling import eventually

WAITING = 23  # over three pages of 10
PAGE = 10


async def _namespace(client, with_attribute: bool) -> str:
    name = await register_namespace(client, "listing")
    if with_attribute:
        await client.operator_service.add_search_attributes(
            AddSearchAttributesRequest(
                namespace=name,
                search_attributes={WAITING_FOR_APPROVAL.name: IndexedValueType.INDEXED_VALUE_TYPE_BOOL},
            )
        )
    return name


def summary(i: int) -> PendingSummary:
    return PendingSummary(
        tool_call_id=f"call-{i}",
        tool_name="delete_file",
        arguments_preview=json.dumps({"path": f"/tmp/{i}"}),
        requested_at=datetime(2026, 1, 1, tzinfo=UTC) + timedelta(minutes=i),
        expires_at=datetime(2026, 1, 4, tzinfo=UTC),
    )


@pytest.fixture(scope="module")
async def listing(client):
    """A namespace with ``WAITING`` waiting runs (two of them waiting on two calls) and three open
    agent runs that wait for nothing (memo emptied, attribute false, as after a decision)."""
    name = await _namespace(client, with_attribute=True)
    ns_client = await connect(client.service_client.config.target_host, name)
    expected: dict[str, list[PendingSummary]] = {}

    async def start(run_id: str, pending: list[PendingSummary]) -> None:
        await ns_client.start_workflow(
            WORKFLOW_TYPE,
            {"never": "run"},
            id=run_id,
            task_queue=f"nobody-polls-{name}",
            memo={PENDING_MEMO_KEY: [p.model_dump(mode="json") for p in pending]},
            search_attributes=TypedSearchAttributes([SearchAttributePair(WAITING_FOR_APPROVAL, bool(pending))]),
        )

    for i in range(WAITING):
        pending = [summary(i)] + ([summary(100 + i)] if i < 2 else [])
        expected[f"waiting-{i:03d}"] = pending
        await start(f"waiting-{i:03d}", pending)
    for i in range(3):
        await start(f"decided-{i}", [])

    async def counts() -> tuple[int, int]:
        return (await ns_client.count_workflows(WAITING_RUNS_QUERY)).count, (await ns_client.count_workflows()).count

    # visibility is eventually consistent
    await eventually(
        counts, lambda seen: seen == (WAITING, WAITING + 3), message="the seeded runs never all showed in visibility"
    )
    yield ns_client, expected
    for run_id in [*expected, *(f"decided-{i}" for i in range(3))]:
        await ns_client.get_workflow_handle(run_id).terminate("test over")


async def test_every_waiting_run_over_several_pages_once_with_its_memo(listing):
    ns_client, expected = listing
    for by_attribute in (True, False):
        listed = await list_waiting_runs(ns_client, use_search_attribute=by_attribute, page_size=PAGE)
        assert not listed.truncated
        ids = [run.run_id for run in listed.runs]
        assert len(ids) == len(set(ids)) == WAITING, by_attribute
        assert {run.run_id: run.pending for run in listed.runs} == expected


async def test_a_limit_cuts_the_list_and_says_so(listing):
    ns_client, expected = listing
    cut = await list_waiting_runs(ns_client, limit=PAGE + 2, page_size=PAGE)
    assert len(cut.runs) == PAGE + 2 and cut.truncated
    exact = await list_waiting_runs(ns_client, limit=WAITING, page_size=PAGE)
    assert len(exact.runs) == WAITING and not exact.truncated


async def test_iterating_stops_early_without_reading_every_page(listing):
    ns_client, _ = listing
    seen = []
    runs = iter_waiting_runs(ns_client, page_size=PAGE)
    async for run in runs:
        seen.append(run.run_id)
        if len(seen) == 3:
            break
    await runs.aclose()
    assert len(seen) == 3


async def test_bad_limit_or_page_size_is_refused(listing):
    ns_client, _ = listing
    with pytest.raises(ValueError, match="limit must be at least 1"):
        await list_waiting_runs(ns_client, limit=0)
    for size in (0, 1001):
        with pytest.raises(ValueError, match="page_size must be between 1 and 1000"):
            await list_waiting_runs(ns_client, page_size=size)


async def test_a_namespace_without_the_attribute_gets_a_clear_error(client):
    name = await _namespace(client, with_attribute=False)
    bare = await connect(client.service_client.config.target_host, name)
    with pytest.raises(ConfirmationError, match="AgentWaitingForApproval"):
        await list_waiting_runs(bare, use_search_attribute=True)
    assert (await list_waiting_runs(bare, use_search_attribute=False)).runs == []


def _parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="agent")
    add_commands(parser.add_subparsers(dest="command", required=True))
    return parser.parse_args(argv)


async def _run(ns_client, capsys, *argv: str) -> tuple[int, str, str]:
    args = _parse(*argv)
    code = await args.handler(args, ns_client)
    out, err = capsys.readouterr()
    return code, out, err


async def test_pending_json_lists_every_call_and_a_limit_notes_the_cut(listing, capsys):
    ns_client, expected = listing
    code, out, err = await _run(ns_client, capsys, "pending", "--json")
    assert code == 0 and err == ""
    rows = json.loads(out)
    assert sorted((r["run_id"], r["tool_call_id"]) for r in rows) == sorted(
        (run_id, p.tool_call_id) for run_id, pending in expected.items() for p in pending
    )
    first = next(r for r in rows if r["tool_call_id"] == "call-5")
    assert first["arguments_preview"] == '{"path": "/tmp/5"}' and first["expires_at"].startswith("2026-01-04")

    code, out, err = await _run(ns_client, capsys, "pending", "--json", "--limit", "4")
    assert code == 0 and len({r["run_id"] for r in json.loads(out)}) == 4
    assert "Listed the first 4 waiting runs (--limit 4); more are waiting." in err

    code, out, _ = await _run(ns_client, capsys, "pending", "--limit", "4")
    listed_runs = {line.split()[0] for line in out.splitlines() if line.startswith("waiting-")}
    assert code == 0 and len(listed_runs) == 4
    assert out.rstrip().endswith("Listed the first 4 waiting runs (--limit 4); more are waiting.")


async def test_a_run_without_the_pending_memo_is_not_waiting(listing):
    """Only the memo says what a run waits for: a run that publishes none is not listed, and not
    queried either (no worker polls its queue: a query would wait for its deadline)."""
    ns_client, expected = listing
    await ns_client.start_workflow(
        WORKFLOW_TYPE,
        {"never": "run"},
        id="no-memo",
        task_queue="nobody-polls-no-memo",
        search_attributes=TypedSearchAttributes([SearchAttributePair(WAITING_FOR_APPROVAL, True)]),
    )
    try:

        async def counted() -> bool:  # visibility is eventually consistent
            return (await ns_client.count_workflows(WAITING_RUNS_QUERY)).count == WAITING + 1

        await eventually(counted, timeout=20, message="visibility never listed the run without a memo")
        for by_attribute in (True, False):
            began = time.monotonic()
            listed = await list_waiting_runs(ns_client, use_search_attribute=by_attribute, page_size=PAGE)
            assert time.monotonic() - began < 5
            assert {run.run_id for run in listed.runs} == set(expected), by_attribute
    finally:
        await ns_client.get_workflow_handle("no-memo").terminate(reason="test over")
