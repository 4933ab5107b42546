"""An accepted cancel is never lost: cancels aimed across the model-reply boundary (seeded,
printed; ``CANCEL_SWEEP_SEED`` repeats a sweep), by ``handle.cancel`` and Temporal's cancel, and
``Agent.send`` followed at once by ``handle.cancel``. Every accepted cancel ends the run
``"cancelled"`` and no tool activity is scheduled after it (bench/cancel_sweep.py says how it is
checked; ``python -m bench.cancel_sweep`` runs 400 + 100)."""

from __future__ import annotations

import os
import random

import pytest

from bench.cancel_sweep import sweep

#: Cancels aimed around the reply, and send-then-cancel runs: enough that the lost cancel of
#: issue 30 (about 1 in 15 aimed in its window) shows, in well under a minute.
RUNS, SENDS = 200, 40


@pytest.fixture
def gates(tmp_path, monkeypatch):
    monkeypatch.setenv("GATE_DIR", str(tmp_path))
    return tmp_path


@pytest.mark.slow
async def test_no_accepted_cancel_is_lost_across_the_model_reply(client, worker, scripted, gates):
    seed = int(os.environ.get("CANCEL_SWEEP_SEED", random.SystemRandom().randrange(1 << 30)))
    print(f"cancel sweep seed {seed} (CANCEL_SWEEP_SEED={seed} repeats it)")
    report = await sweep(client, worker, scripted, gates, runs=RUNS, sends=SENDS, seed=seed)
    print("\n".join(report.lines()))
    assert len(report.outcomes) == RUNS + SENDS
    assert len(report.refused) < len(report.outcomes) // 10, "the sweep must test accepted cancels"
    assert report.lost == []
