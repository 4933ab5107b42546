"""A watcher attached before ``agent rewind`` follows the new run: ``handle.events()`` gives a
``run_rewound`` event, then the new run's events (and nothing more of the discarded attempt)
up to ``run_ended``; several watchers in one process share one feed."""

from __future__ import annotations

import asyncio

from agent import RunEvent
from agent.live import local_watchers
from tests.support.hitl_helpers import wait_pending
from tests.support.live import REWIND_REASON, REWOUND_ANSWER, parked_for_rewind
from tests.support.polling import eventually


async def test_a_watcher_attached_before_a_rewind_follows_the_new_run(client, worker, scripted, model, run_id):
    handle = await parked_for_rewind(client, worker, scripted, model, run_id)
    seen: list[list[RunEvent]] = [[], []]

    async def watch(into: list[RunEvent]) -> None:
        async for event in handle.events():
            into.append(event)

    watchers = [asyncio.create_task(watch(into)) for into in seen]
    await wait_pending(handle, 1)
    await eventually(lambda: all(any(e.kind == "approval_requested" for e in s) for s in seen))
    assert local_watchers(client, run_id) == 2  # both read the process's one feed
    done = await handle.rewind(0, REWIND_REASON)
    await asyncio.wait_for(asyncio.gather(*watchers), 60)  # each ends at the new run's run_ended

    fresh = [event async for event in handle.events()]  # the new run, read afresh after the fact
    for events in seen:
        kinds = [e.kind for e in events]
        assert kinds.count("run_rewound") == 1, kinds
        marker = events[kinds.index("run_rewound")]
        assert marker.data["reason"] == f"rewind to step 0: {REWIND_REASON}"
        assert marker.data["temporal_run_id"] == done.temporal_run_id
        assert marker.data["previous_temporal_run_id"] == done.from_temporal_run_id
        assert (marker.turn, marker.step, marker.offset) == (1, 0, marker.data["from_offset"] - 1)
        before, after = events[: kinds.index("run_rewound")], events[kinds.index("run_rewound") + 1 :]
        assert "approval_requested" in [e.kind for e in before]  # the discarded attempt, seen live
        # after the marker: exactly the new run's events from the rewound step on, to run_ended
        assert after == [e for e in fresh if e.offset >= marker.data["from_offset"]]
        assert after[-1].kind == "run_ended" and "approval_requested" not in [e.kind for e in after]
        assert [e.data["text"] for e in after if e.kind == "model_reply"] == [REWOUND_ANSWER]
        # and the events before the rewind point are the new run's too (a reset copies them)
        assert [e for e in before if e.offset < marker.data["from_offset"]] == [
            e for e in fresh if e.offset < marker.data["from_offset"]
        ]
