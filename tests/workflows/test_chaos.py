"""Chaos drill: a dozen concurrent runs under kill -9s of the worker (at random times, right after a
tool call started or completed, inside the workflow task that follows a completion), a kill -9 of
the Temporal dev server restarted on the same SQLite file, and an S3 outage. Every run must finish
with its planned result, and no completed tool call may run again.

It runs on its own DevStack, scripted model and worker processes (bench/chaos_drill.py, shared
with ``python -m bench.chaos``), so killing its server disturbs none of the session fixtures.
Each run draws a new seed unless ``CHAOS_SEED`` gives one. The seed is printed when the test
starts and added to whatever exception fails it (a timeout included), so pytest's failure report
shows it; replay the same plan of kills and outages with ``CHAOS_SEED=<seed>``.
"""

from __future__ import annotations

import asyncio
import os
import random

import pytest

from bench.chaos_drill import DrillConfig, run_drill
from tests import tools as t

pytestmark = pytest.mark.integration  # it starts its own stack

#: The drill gives up on unfinished runs after this many seconds from their start, then reports.
DEADLINE_SECONDS = 60.0
#: Hard bound on the whole test, stack start-up and diagnostics included.
TEST_TIMEOUT_SECONDS = 90.0


@pytest.fixture
def chaos_seed(record_property) -> int:
    """The drill's seed: ``CHAOS_SEED`` when set, else a fresh one (printed and kept as a property
    of the test's report either way)."""
    given = os.environ.get("CHAOS_SEED", "").strip()
    if not given:
        seed = random.SystemRandom().randrange(1_000_000)
    elif given.isdigit():
        seed = int(given)
    else:
        raise ValueError(f"CHAOS_SEED must be a non-negative integer, got {given!r}")
    print(f"\nchaos seed {seed} (replay with CHAOS_SEED={seed})")
    record_property("chaos_seed", seed)
    return seed


@pytest.mark.slow
async def test_chaos_drill(tmp_path, chaos_seed):
    try:
        await drill(tmp_path, chaos_seed)
    except BaseException as failure:
        failure.add_note(f"chaos seed {chaos_seed}: replay with CHAOS_SEED={chaos_seed}")
        raise


async def drill(tmp_path, seed: int) -> None:
    config = DrillConfig(
        runs=12,
        steps=5,
        calls_per_step=2,
        worker_kills=4,
        server_kills=1,
        s3_outages=1,
        seed=seed,
        tools="tests.tools.TEST_TOOLS",
        record_tool=t.record,
        deadline=DEADLINE_SECONDS,
    )
    report = await asyncio.wait_for(run_drill(config, tmp_path), timeout=TEST_TIMEOUT_SECONDS)
    print(report.format())

    assert report.failures == [], f"seed {seed} (logs and ledgers in {tmp_path}):\n{report.format()}"
    assert report.completed_runs == config.runs
    assert (report.count("worker"), report.count("server"), report.count("s3")) == (4, 1, 1)
    # every disruption was followed by progress, except one that struck after every run had finished
    assert all(d.to_progress is not None or d.after_the_runs for d in report.disruptions), report.format()
    assert report.calls_completed_twice == 0 and report.calls_run_after_completion == 0
    assert report.start_lines >= report.planned_calls == config.runs * config.steps * config.calls_per_step
