"""Benchmark: the two CEL libraries on PyPI, side by side, for ``RulePolicy(ask_when=...)``.

``RulePolicy`` compiles its rule once (when the ``Agent`` is built, and once more in each run's
sandbox) and evaluates it for every tool call of a run, in the workflow. What matters is the
evaluation time with the conversion of the call's arguments included, and the compile time.

- ``common-expression-language`` (module ``cel``): Python bindings over the Rust ``cel``
  interpreter; takes plain Python values.
- ``cel-python`` (module ``celpy``): pure Python on ``lark``; the arguments are converted with
  ``celpy.json_to_cel`` first.

Printed: microseconds a compile and an evaluation for each rule, and the ratio celpy / cel.
Both must be installed (``.venv/bin/pip install cel-python`` for the second; the project depends
on the first only).

Run: ``.venv/bin/python -m bench.cel_evaluation``
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any

import cel
import celpy

RULES = (
    'args.amount > 100 && tool == "pay"',
    'tool in ["delete_file", "drop_table"] || args.path.startsWith("/etc")',
    'size(args.recipients) > 3 || args.recipients.exists(r, r.endsWith("@external.example"))',
)
CALLS = (
    {"tool": "pay", "args": {"amount": 250, "currency": "EUR", "to": "acme"}},
    {"tool": "write_file", "args": {"path": "/etc/hosts", "content": "x" * 200}},
    {"tool": "mail", "args": {"recipients": ["a@corp.example", "b@corp.example", "c@external.example"]}},
)
REPEATS = 7


def per_call_us(fn: Callable[[], Any], loops: int) -> float:
    """Median over :data:`REPEATS` of ``loops`` calls of ``fn``, in microseconds a call."""
    times = []
    for _ in range(REPEATS):
        start = time.perf_counter()
        for _ in range(loops):
            fn()
        times.append((time.perf_counter() - start) / loops * 1e6)
    return statistics.median(times)


def main() -> None:
    celpy_env = celpy.Environment()
    print(
        f"{'rule':<44} {'cel compile':>12} {'celpy compile':>14} {'cel eval':>9} {'celpy eval':>11} {'eval ratio':>11}"
    )
    ratios = []
    for rule, call in zip(RULES, CALLS, strict=True):
        program = cel.compile(rule)
        celpy_program = celpy_env.program(celpy_env.compile(rule))
        # Same answer from both before timing them.
        assert program.execute(call) == bool(celpy_program.evaluate(celpy.json_to_cel(call))), rule
        cel_compile = per_call_us(lambda r=rule: cel.compile(r), 200)
        celpy_compile = per_call_us(lambda r=rule: celpy_env.program(celpy_env.compile(r)), 20)
        cel_eval = per_call_us(lambda p=program, c=call: p.execute(c), 2_000)
        celpy_eval = per_call_us(lambda p=celpy_program, c=call: p.evaluate(celpy.json_to_cel(c)), 200)
        ratios.append(celpy_eval / cel_eval)
        print(
            f"{rule[:44]:<44} {cel_compile:>10.1f}us {celpy_compile:>12.1f}us {cel_eval:>7.1f}us "
            f"{celpy_eval:>9.1f}us {celpy_eval / cel_eval:>10.1f}x"
        )
    print(f"celpy evaluation is {statistics.median(ratios):.1f}x the time of cel's (median over the rules)")


if __name__ == "__main__":
    main()
