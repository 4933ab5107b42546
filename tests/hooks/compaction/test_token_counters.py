"""Token counters: known counts, determinism, serialisation, and tiktoken loading with no network."""

from __future__ import annotations

import gzip
import hashlib
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from core.messages import ChatMessage
from core.serialization import object_from_dict
from core.tools import ToolSpec
from hooks.compaction import ApproximateTokenCounter, TiktokenTokenCounter, TokenCounter, encodings
from tests.support.compaction_support import random_conversation, step

REPO = Path(__file__).resolve().parents[3]


def test_tiktoken_known_counts():
    o200k, cl100k = TiktokenTokenCounter(), TiktokenTokenCounter("cl100k_base")
    assert o200k.count_text("hello world") == 2
    assert encodings.load_encoding("o200k_base").encode("hello world") == [24912, 2375]
    assert encodings.load_encoding("cl100k_base").encode("hello world") == [15339, 1917]
    assert cl100k.count_text("tiktoken is great!") == 6
    # special-token strings in tool output are counted as text, never raise
    assert o200k.count_text("<|endoftext|>") > 1
    enc = encodings.load_encoding("o200k_base")
    assert enc.name == "o200k_base" and enc.n_vocab == 200019
    assert enc.decode(enc.encode("Grüße, 世界")) == "Grüße, 世界"


def test_encoding_is_loaded_once_per_process():
    assert encodings.load_encoding("o200k_base") is encodings.load_encoding("o200k_base")


def test_count_messages_is_count_of_rendered_text_and_deterministic():
    messages = random_conversation(1)
    counter = TiktokenTokenCounter()
    from hooks.compaction.rendering import render_conversation, render_tools

    tools = [ToolSpec(name="search", description="Search.")]
    assert counter.count(messages) == counter.count_text(render_conversation(messages))
    assert counter.count(messages, tools) == counter.count_text(render_conversation(messages) + render_tools(tools))
    assert counter.count(messages) == counter.count(list(messages))
    assert counter.count([]) == 0 and ApproximateTokenCounter().count([]) == 0
    assert counter.count([], tools) > 0


def test_approximate_counter():
    counter = ApproximateTokenCounter(chars_per_token=2.0)
    assert counter.count_text("abcdefg") == 3
    message = ChatMessage.from_user("abcd")  # rendered "[user] abcd": 11 chars
    assert counter.count([message]) == 5
    assert ApproximateTokenCounter().count(step("c1", "x" * 400)) > 100
    with pytest.raises(ValueError, match="chars_per_token"):
        ApproximateTokenCounter(chars_per_token=0)


def test_protocol_and_round_trip():
    for counter in (ApproximateTokenCounter(3.5), TiktokenTokenCounter("cl100k_base")):
        assert isinstance(counter, TokenCounter)
        again = object_from_dict(counter.to_dict())
        assert type(again) is type(counter) and again.to_dict() == counter.to_dict()
    with pytest.raises(ValueError, match="encoding"):
        TiktokenTokenCounter("p50k_base")


def test_local_file_must_match_tiktokens_hash(tmp_path, monkeypatch):
    good = (encodings._bundled_dir() / "cl100k_base.tiktoken.gz").read_bytes()
    digest = hashlib.sha256(gzip.decompress(good)).hexdigest()
    assert digest == "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"
    (tmp_path / "cl100k_base.tiktoken.gz").write_bytes(gzip.compress(b"aGVsbG8= 0\n"))
    monkeypatch.setattr(encodings, "_bundled_dir", lambda: tmp_path)
    with pytest.raises(ValueError, match="SHA-256"):
        encodings.load_local_bpe("https://example/cl100k_base.tiktoken", expected_hash=digest)
    with pytest.raises(ValueError, match="No local copy"):
        encodings.load_local_bpe("https://example/r50k_base.tiktoken")


def test_tiktoken_counts_with_no_network(tmp_path):
    """A fresh process with an empty tiktoken cache and every socket connection refused still counts."""
    script = textwrap.dedent(
        """
        import socket, sys
        attempts = []
        def refuse(self, *args, **kwargs):
            attempts.append(args)
            raise OSError("network disabled in this test")
        socket.socket.connect = refuse
        socket.socket.connect_ex = refuse
        socket.create_connection = lambda *a, **k: refuse(None, *a)
        socket.getaddrinfo = lambda *a, **k: refuse(None, *a)
        import tiktoken
        try:
            tiktoken.get_encoding("o200k_base")  # tiktoken's own loader needs the network here
            sys.exit("tiktoken downloaded despite the refused sockets")
        except Exception:
            pass
        from core.messages import ChatMessage
        from hooks.compaction import TiktokenTokenCounter
        counter = TiktokenTokenCounter()
        print(counter.count_text("hello world"), counter.count([ChatMessage.from_user("hello world")]))
        print(TiktokenTokenCounter("cl100k_base").count_text("hello world"))
        print(len(attempts) > 0)
        """
    )
    env = {**os.environ, "TIKTOKEN_CACHE_DIR": str(tmp_path / "empty-cache"), "PYTHONPATH": str(REPO)}
    (tmp_path / "empty-cache").mkdir()
    command = [sys.executable, "-c", script]
    done = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["2", "4", "2", "True"]  # "[user] hello world" is 4 tokens
    assert list((tmp_path / "empty-cache").iterdir()) == []  # nothing was downloaded or cached
