"""The benchmarks' production latencies and their bare floor: the S3 delaying proxy, the scripted
model's time to first byte, and the hand-written loop (bench/bare_floor.py) on the real stack.

The delays are checked from below only (a request cannot be faster than the delay it is given),
so nothing here depends on how loaded the machine is.
"""

from __future__ import annotations

import argparse
import time
import uuid

import boto3
import httpx
import pytest
from temporalio.client import Client

from agent.dev.s3_server import DUMMY_AWS_CREDENTIALS
from agent.dev.scripted_model import ScriptedModelServer
from bench.bare_floor import bare_worker, start_bare
from bench.common import add_latency_arguments, latency_label
from bench.latency_proxy import DelayingProxy, delaying_proxy


def test_latency_arguments_default_off_and_take_the_production_figures_when_bare():
    parser = argparse.ArgumentParser()
    add_latency_arguments(parser)
    assert vars(parser.parse_args([])) == {"s3_latency": 0.0, "model_latency": 0.0}
    assert vars(parser.parse_args(["--s3-latency", "--model-latency"])) == {"s3_latency": 30.0, "model_latency": 500.0}
    assert vars(parser.parse_args(["--s3-latency", "5"])) == {"s3_latency": 5.0, "model_latency": 0.0}
    assert latency_label(0, 0) == "loopback latencies"
    assert latency_label(30, 500) == "S3 +30 ms a request, model +500 ms to first byte"


def test_negative_latencies_are_refused():
    with pytest.raises(ValueError, match="at least 0"):
        DelayingProxy(1, -0.1)
    with pytest.raises(ValueError, match="at least 0"):
        ScriptedModelServer(latency=-1)


def test_the_scripted_model_answers_after_its_latency():
    with ScriptedModelServer(latency=0.3) as server:
        server.script("m", [{"text": "a"}, {"text": "b"}])
        with httpx.Client() as http:
            started = time.perf_counter()
            for _ in range(2):
                reply = http.post(f"{server.base_url}/chat/completions", json={"model": "m", "messages": []})
                assert reply.status_code == 200
            assert time.perf_counter() - started >= 0.6


def test_every_s3_request_through_the_proxy_costs_its_delay(stack):
    with delaying_proxy(stack.s3.port, 0.2) as proxy:
        s3 = boto3.client("s3", endpoint_url=proxy.endpoint_url, region_name="us-east-1", **_credentials())
        bucket = stack.payloads_bucket
        started = time.perf_counter()
        s3.put_object(Bucket=bucket, Key="proxy-test", Body=b"x" * 100_000)  # several packets, one delay
        assert s3.get_object(Bucket=bucket, Key="proxy-test")["Body"].read() == b"x" * 100_000
        s3.head_object(Bucket=bucket, Key="proxy-test")
        assert time.perf_counter() - started >= 0.6


def _credentials() -> dict[str, str]:
    return {
        "aws_access_key_id": DUMMY_AWS_CREDENTIALS["AWS_ACCESS_KEY_ID"],
        "aws_secret_access_key": DUMMY_AWS_CREDENTIALS["AWS_SECRET_ACCESS_KEY"],
    }


async def test_the_bare_floor_loops_until_text_sending_the_whole_conversation(stack, scripted):
    model = f"bare-{uuid.uuid4().hex[:8]}"
    scripted.script(
        model, [{"tool_calls": [{"name": "big_text", "arguments": {"size": 40}}], "times": 2}, {"text": "done"}]
    )
    plain = await Client.connect(stack.temporal.address)
    queue = f"bare-{uuid.uuid4().hex[:6]}"
    async with bare_worker(plain, queue):
        handle = await start_bare(plain, queue, f"run-{model}", model)
        assert await handle.result() == 3
    last = scripted.requests(model)[-1]["messages"]
    assert [m["role"] for m in last] == ["user", "assistant", "tool", "assistant", "tool"]
    assert last[-1]["content"] == ("0123456789abcdef" * 3)[:40]
