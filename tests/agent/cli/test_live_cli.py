"""``agent watch`` and ``agent chat`` print the answer as its tokens arrive: subprocesses against
the test stack and the scripted model streaming slowly, their stdout read while the model call is
still going."""

from __future__ import annotations

import asyncio
from datetime import timedelta

from agent import Agent, ChatMessage
from agent.live_view import retry_marker
from tests import tools as t
from tests.agent.cli.test_cli import spawn_cli
from tests.support.cli_agents import MODEL_ENV
from tests.support.live import ANSWER, REWIND_REASON, REWOUND_ANSWER, parked_for_rewind, slowly

WAIT_SECONDS = 60


class Running:
    """An ``agent`` subprocess whose stdout is read as it comes."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process
        self.out = ""

    @classmethod
    async def start(cls, *args: str, env: dict[str, str] | None = None) -> Running:
        process = await spawn_cli(*args, env=env)
        return cls(process)

    async def until(self, text: str) -> str:
        """Read stdout until it holds ``text``; returns what was read by then."""

        async def read() -> None:
            while text not in self.out:
                chunk = await self.process.stdout.read(256)
                assert chunk, f"stdout ended before {text!r} showed: {self.out!r}"
                self.out += chunk.decode()

        await asyncio.wait_for(read(), WAIT_SECONDS)
        return self.out

    async def finish(self, stdin: bytes = b"") -> tuple[int, str, str]:
        out, err = await asyncio.wait_for(self.process.communicate(stdin), WAIT_SECONDS)
        self.out += out.decode()
        return self.process.returncode, self.out, err.decode()


async def ask_and_see_it_stream(chatting, turn: int) -> tuple[int, str, str]:
    """Type the question into ``agent chat``, see the answer's start before its end (it streams),
    wait for turn ``turn`` to end, and close the chat; returns its exit code, stdout and stderr."""
    chatting.process.stdin.write(b"how did the deploy go?\n")
    await chatting.process.stdin.drain()
    early = await chatting.until("assistant: The deploy")
    assert ANSWER not in early
    await chatting.until(f"[turn {turn} ended: exit_reason text]")
    return await chatting.finish()


async def test_watch_prints_the_answer_while_the_model_still_streams_it(
    client, worker, scripted, model, run_id, tmp_path
):
    go = tmp_path / "go"  # the model starts answering once the watcher is up
    scripted.script(model, [slowly(ANSWER, hold_until=str(go))])
    handle = await Agent(model=model, stream_tokens=True).start(
        client, [ChatMessage.from_user("status?")], run_id=run_id, task_queue=worker
    )
    watching = await Running.start("watch", run_id, "--plain")
    await watching.until(f"watching run {run_id}")
    go.touch()

    early = await watching.until("model call 1 answered: The deploy")
    assert ANSWER not in early  # the first words are on screen; the model has not sent the rest
    assert not (await handle.status()).done
    code, out, err = await watching.finish()

    assert code == 0, err + out
    assert f"  model call 1 answered: {ANSWER}\n" in out
    assert out.count("The deploy") == 2  # the streamed line, and the final answer line
    assert f"final answer: {ANSWER}" in out


async def test_chat_prints_each_answer_as_it_streams(client, worker, scripted, model, run_id):
    scripted.script(model, [{"text": "Hello, which service?"}, slowly(ANSWER)])
    agent = Agent(model=model, tools=[t.add], stream_tokens=True)
    handle = await agent.start(
        client, [ChatMessage.from_user("hi")], run_id=run_id, task_queue=worker, wait_for_user=timedelta(minutes=5)
    )
    await handle.wait_turn(1)
    chatting = await Running.start("chat", run_id, "--sender", "ann")
    code, out, err = await ask_and_see_it_stream(chatting, turn=2)
    assert code == 0, err
    lines = [line for line in out.splitlines() if line.startswith(("assistant:", "[turn"))]
    assert lines == [f"assistant: {ANSWER}", "[turn 2 ended: exit_reason text]"], out
    await handle.cancel("test over")


async def test_chat_started_with_a_streaming_agent(client, worker, scripted, model, run_id):
    scripted.script(model, [slowly(ANSWER)])
    chatting = await Running.start(
        "chat",
        run_id,
        "--agent",
        "tests.support.cli_agents:make_streaming_chat_agent",
        "--task-queue",
        worker,
        env={MODEL_ENV: model},
    )
    code, out, err = await ask_and_see_it_stream(chatting, turn=1)
    assert code == 0, err
    assert f"assistant: {ANSWER}\n" in out
    await client.get_workflow_handle(run_id).cancel()


async def test_watch_restarts_an_answer_whose_stream_broke_after_a_marker(client, worker, scripted, model, run_id):
    scripted.script(model, [slowly(ANSWER, pace=0.02, break_after=5), slowly(ANSWER, pace=0.02)])
    handle = await Agent(model=model, stream_tokens=True).start(
        client, [ChatMessage.from_user("status?")], run_id=run_id, task_queue=worker
    )
    await handle.result()
    code, out, err = await (await Running.start("watch", run_id, "--plain")).finish()

    assert code == 0, err + out
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("  model call 1 answered:"))
    broken, marker, retried = lines[start : start + 3]
    label = "  model call 1 answered: "
    # the broken attempt's text stays as it was, cut short; the new attempt starts on its own line
    assert broken.startswith(label) and ANSWER.startswith(broken[len(label) :]) and len(broken) < len(label + ANSWER)
    assert (marker, retried) == (retry_marker(2), label + ANSWER), out


async def test_watch_attached_before_a_rewind_prints_it_and_follows_the_new_run(
    client, worker, scripted, model, run_id
):
    handle = await parked_for_rewind(client, worker, scripted, model, run_id)
    watching = await Running.start("watch", run_id, "--plain")
    await watching.until("model call 1 asked for: add")
    await handle.rewind(0, REWIND_REASON)
    code, out, err = await watching.finish()

    assert code == 0, err + out
    lines = out.splitlines()
    [rewound] = [line for line in lines if line.startswith("  run rewound")]
    assert rewound.endswith(f"): rewind to step 0: {REWIND_REASON}"), lines
    after = lines[lines.index(rewound) + 1 :]
    # the new run's step 0 is model call 1 again, and its answer ends the run
    assert f"  model call 1 answered: {REWOUND_ANSWER}" in after, lines
    assert f"final answer: {REWOUND_ANSWER}" in after
    assert not any("asked for" in line for line in after)
