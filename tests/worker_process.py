"""A worker in its own process, for tests that kill it (``kill -9``) and start another.

    python -m tests.worker_process --task-queue Q [--address HOST:PORT] [--namespace NS] [--tools module.LIST]

Address and namespace default to ``TEMPORAL_ADDRESS``/``TEMPORAL_NAMESPACE``, the task queue to
``AGENT_TASK_QUEUE``, the tools to ``tests.tools.TEST_TOOLS``; the model endpoint comes from
``OPENAI_BASE_URL``. Prints ``worker ready <pid>`` on stdout once it polls, and runs until
SIGTERM/SIGINT (or SIGKILL).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import sys

from agent.client import connect
from hooks.serialization import import_object
from worker import create_worker


async def serve(args: argparse.Namespace) -> None:
    client = await connect(args.address, args.namespace)
    tools = list(import_object(args.tools))
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    async with create_worker(client, tools=tools, task_queue=args.task_queue):
        print(f"worker ready {os.getpid()}", flush=True)
        await stop.wait()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--address", default=os.environ.get("TEMPORAL_ADDRESS"))
    parser.add_argument("--namespace", default=os.environ.get("TEMPORAL_NAMESPACE"))
    parser.add_argument("--task-queue", default=os.environ.get("AGENT_TASK_QUEUE", "agent"))
    parser.add_argument("--tools", default="tests.tools.TEST_TOOLS", help="import path of a list of @tool functions")
    asyncio.run(serve(parser.parse_args(sys.argv[1:] if argv is None else argv)))


if __name__ == "__main__":
    main()
