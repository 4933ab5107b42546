"""A worker loads tiktoken encodings only when asked: ``o200k_base`` is ~76 MB of RSS that a worker
whose runs never count tokens should not hold. Each case runs in a fresh interpreter, since the
encoding cache is per process."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from hooks.compaction.encodings import PRELOAD_ENV, preload_names

ROOT = Path(__file__).resolve().parents[3]

PROBE = """
from hooks.family import warm_up_families
from hooks.compaction import encodings
warm_up_families()
print(",".join(n for n in encodings.OFFLINE_ENCODINGS if encodings.is_loaded(n)))
from hooks.compaction import TiktokenTokenCounter
counter = TiktokenTokenCounter("cl100k_base")
counter.warm_up()  # what CompactionHook.warm_up does at run start: first use loads it
print(",".join(n for n in encodings.OFFLINE_ENCODINGS if encodings.is_loaded(n)))
"""


def _worker_warm_up(preload: str | None) -> list[str]:
    env = {k: v for k, v in os.environ.items() if k != PRELOAD_ENV}
    if preload is not None:
        env[PRELOAD_ENV] = preload
    out = subprocess.run(
        [sys.executable, "-c", PROBE], cwd=ROOT, env=env, capture_output=True, text=True, check=True, timeout=120
    )
    return out.stdout.splitlines()


def test_the_worker_warm_up_loads_no_encoding_by_default_and_first_use_loads_one():
    assert _worker_warm_up(None) == ["", "cl100k_base"]


def test_the_worker_warm_up_loads_what_the_variable_names():
    assert _worker_warm_up(" o200k_base, ") == ["o200k_base", "cl100k_base,o200k_base"]


def test_preload_names_refuses_an_unknown_encoding(monkeypatch):
    monkeypatch.setenv(PRELOAD_ENV, "o200k_base,p50k_base")
    with pytest.raises(ValueError, match="AGENT_PRELOAD_ENCODINGS names unknown tiktoken encoding.*p50k_base"):
        preload_names()
    monkeypatch.setenv(PRELOAD_ENV, "")
    assert preload_names() == ()
