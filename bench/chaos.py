"""Chaos drill at scale: 100 concurrent runs under kill -9s of the worker, a kill -9 of the Temporal
dev server (restarted on the same SQLite file) and an S3 outage (bench/chaos_drill.py, the drill
tests/workflows/test_chaos.py runs with a dozen runs).

Prints runs, kills by kind, the time from each kill (or the start of the S3 outage) to the next
progress of any run once the service is back (a tool call starts, a run finishes), calls started
twice (interrupted and retried: tools run at least once) and calls completed twice (must be 0).
Exits 1 when a check fails.

Run: python -m bench.chaos [--runs 100] [--seed N] [--worker-kills 12]
"""

from __future__ import annotations

import argparse
import asyncio
import random
import sys
import tempfile
from pathlib import Path

from bench.chaos_drill import DrillConfig, run_drill, steps_for


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--seed", type=int, default=None, help="replay a drill (default: a random seed, printed)")
    parser.add_argument(
        "--steps", type=int, default=None, help="tool steps per run (default: enough to outlast the events)"
    )
    parser.add_argument("--calls-per-step", type=int, default=2)
    parser.add_argument("--worker-kills", type=int, default=12)
    parser.add_argument("--server-kills", type=int, default=1)
    parser.add_argument("--s3-outages", type=int, default=1)
    parser.add_argument("--deadline", type=float, default=480.0, help="seconds for every run to finish")
    parser.add_argument("--keep", action="store_true", help="keep the data directory (logs, ledgers) and print it")
    args = parser.parse_args()
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(1_000_000)
    events = args.worker_kills + args.server_kills + args.s3_outages
    config = DrillConfig(
        runs=args.runs,
        steps=args.steps or steps_for(events),
        calls_per_step=args.calls_per_step,
        worker_kills=args.worker_kills,
        server_kills=args.server_kills,
        s3_outages=args.s3_outages,
        seed=seed,
        deadline=args.deadline,
    )
    print(f"chaos drill, seed {seed} (replay with --seed {seed}); the model is the project's scripted model")
    tmp = tempfile.mkdtemp(prefix="chaos-") if args.keep else None
    with tempfile.TemporaryDirectory(prefix="chaos-") as scratch:
        data_dir = Path(tmp or scratch)
        report = asyncio.run(run_drill(config, data_dir))
    print()
    print(report.format())
    if tmp:
        print(f"data directory kept: {tmp}")
    sys.exit(0 if report.ok else 1)


if __name__ == "__main__":
    main()
