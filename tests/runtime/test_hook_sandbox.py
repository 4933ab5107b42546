"""A hook module that Temporal's workflow sandbox refuses (it imports a Haystack Chat Generator at
its top) is refused by ``Agent(...)``, and a worker that meets it says the same thing."""

from __future__ import annotations

import asyncio
import time

import pytest
from temporalio.client import WorkflowFailureError

from agent import Agent, ChatMessage
from agent.client import start_run
from core.spec import AgentSpec
from tests.support import continue_as_new_hooks, sandbox_passed_through_hooks, sandbox_refused_hooks

REFUSED = "Hook module 'tests.support.sandbox_refused_hooks' cannot be imported inside Temporal's workflow sandbox: "
ACCESS = "which accesses os.path"
REMEDY = "Hooks run as workflow code: keep clients (HTTP, model SDKs) out of hook modules"


@pytest.mark.parametrize("refused_hook", [sandbox_refused_hooks.note_step, sandbox_refused_hooks.NoteStepHook()])
def test_agent_refuses_a_hook_module_the_sandbox_refuses(refused_hook):
    with pytest.raises(ValueError) as refused:
        Agent(model="m", hooks={"before_llm": [refused_hook]})
    message = str(refused.value)
    assert message.startswith(REFUSED)
    assert "its import of haystack reaches haystack.utils" in message and ACCESS in message
    assert REMEDY in message and "ChatGeneratorSpec" in message and "imports_passed_through()" in message
    assert "Install" not in message


def test_a_normal_hook_module_passes_and_is_checked_once():
    started = time.perf_counter()
    Agent(model="m", hooks={"before_llm": [continue_as_new_hooks.StepMemoryHook()]})
    first = time.perf_counter() - started
    started = time.perf_counter()
    Agent(model="m", hooks={"before_llm": [continue_as_new_hooks.StepMemoryHook()]})
    again = time.perf_counter() - started
    # measured ~5 ms the first time (the module runs once more, in a sandbox), ~0.1 ms after
    assert first < 2 and again < 0.05, (first, again)


async def test_a_worker_meeting_a_refused_hook_module_says_why_and_what_to_do(client, worker, scripted, model, run_id):
    scripted.script(model, [{"text": "never reached"}])
    # As a client without the check would start it: the spec skips Agent(...)'s checks.
    spec = AgentSpec(model=model, hooks={"before_llm": [sandbox_refused_hooks.note_step]})
    handle = await start_run(spec, client, [ChatMessage.from_user("go")], run_id, worker, None, None)
    with pytest.raises(WorkflowFailureError) as failed:
        await asyncio.wait_for(handle.result(), timeout=60)
    error = failed.value.cause
    assert error.type == "AgentSpecError" and error.non_retryable
    assert error.message.startswith("This worker cannot rebuild the run's agent: " + REFUSED)
    assert ACCESS in error.message and REMEDY in error.message
    assert "Install the hooks' modules" not in error.message
    assert scripted.requests(model) == []


async def test_a_hook_module_importing_the_generator_through_the_sandbox_runs(client, worker, scripted, model, run_id):
    scripted.script(model, [{"text": "done"}])
    agent = Agent(model=model, hooks={"before_llm": [sandbox_passed_through_hooks.check_generator_class]})
    handle = await agent.start(client, [ChatMessage.from_user("go")], run_id=run_id, task_queue=worker)
    result = await asyncio.wait_for(handle.result(), timeout=60)
    assert result.last_message.text == "done"
