"""``Agent(output_type=...)``: the schema asked for as ``response_format``, each final answer
checked by the model activity, one correction, then a clear failure; ``result().output`` typed."""

from __future__ import annotations

import asyncio
import json
import uuid
from datetime import timedelta

import pytest
from pydantic import BaseModel
from temporalio.client import Client, WorkflowFailureError

from agent import Agent, ChatMessage, get_run
from agent.dev.scripted_model import ScriptedModelServer
from tests import tools as t


class Verdict(BaseModel):
    approved: bool
    reason: str


GOOD = json.dumps({"approved": True, "reason": "fine"})


def run_id() -> str:
    return f"typed-{uuid.uuid4().hex[:10]}"


async def test_a_valid_answer_is_the_typed_output(
    client: Client, worker: str, scripted: ScriptedModelServer, model: str
) -> None:
    scripted.script(model, [{"text": GOOD}])
    handle = await Agent(model=model, output_type=Verdict).start(
        client, [ChatMessage.from_user("judge")], run_id=run_id(), task_queue=worker
    )
    result = await asyncio.wait_for(handle.result(), 60)
    assert result.output == Verdict(approved=True, reason="fine")
    request = scripted.requests(model)[0]
    assert request["response_format"]["json_schema"]["schema"] == Verdict.model_json_schema()
    assert (await get_run(client, handle.run_id).result()).output == {"approved": True, "reason": "fine"}


async def test_an_invalid_answer_is_sent_back_once_for_a_correction(
    client: Client, worker: str, scripted: ScriptedModelServer, model: str
) -> None:
    scripted.script(model, [{"text": '{"approved": "maybe"}'}, {"text": GOOD}])
    handle = await Agent(model=model, output_type=Verdict).start(
        client, [ChatMessage.from_user("judge")], run_id=run_id(), task_queue=worker
    )
    result = await asyncio.wait_for(handle.result(), 60)
    assert result.output.approved is True
    second = scripted.requests(model)[1]["messages"]
    assert second[-2] == {"role": "assistant", "content": '{"approved": "maybe"}'}
    assert "does not match the required JSON schema" in second[-1]["content"]
    assert [m.text for m in result.messages if m.role.value == "assistant"] == [GOOD]  # only the answer kept
    both = [r for r in scripted.requests(model)]
    assert len(both) == 2 and result.token_usage["total_tokens"] > 0


async def test_an_answer_still_invalid_after_the_correction_fails_the_run(
    client: Client, worker: str, scripted: ScriptedModelServer, model: str
) -> None:
    scripted.script(model, [{"text": "not json"}, {"text": '{"approved": true}'}])
    handle = await Agent(model=model, output_type=Verdict).start(
        client, [ChatMessage.from_user("judge")], run_id=run_id(), task_queue=worker
    )
    with pytest.raises(WorkflowFailureError) as failure:
        await asyncio.wait_for(handle.result(), 60)
    message = str(failure.value.cause)
    assert "does not match the agent's output_type (Verdict), even after one correction" in message
    assert "'reason' is a required property" in message
    assert len(scripted.requests(model)) == 2  # not retried by Temporal: retrying cannot fix it


async def test_tool_calls_pass_and_each_turn_of_a_session_is_checked(
    client: Client, worker: str, scripted: ScriptedModelServer, model: str
) -> None:
    scripted.script(
        model,
        [
            {"tool_calls": [{"name": "echo", "arguments": {"text": "x"}}]},
            {"text": GOOD},
            {"text": "no"},
            {"text": GOOD},
        ],
    )
    agent = Agent(model=model, tools=[t.echo], output_type=Verdict)
    handle = await agent.start(
        client, [ChatMessage.from_user("one")], run_id=run_id(), task_queue=worker, wait_for_user=timedelta(minutes=5)
    )
    assert (await asyncio.wait_for(handle.wait_turn(1), 60)).last_message.text == GOOD
    receipt = await handle.send_message("two")
    turn = await asyncio.wait_for(handle.wait_turn(receipt.turn), 60)
    assert turn.last_message.text == GOOD and len(scripted.requests(model)) == 4
    await handle.cancel(reason="test over")


async def test_a_sub_agents_typed_output_is_its_tool_result(
    client: Client, worker: str, scripted: ScriptedModelServer, model: str
) -> None:
    judge = Agent(model=f"{model}-judge", output_type=Verdict)
    lead = Agent(model=model, tools=[judge.as_tool("judge", "Judge one thing")])
    scripted.script(
        model, [{"tool_calls": [{"name": "judge", "id": "j1", "arguments": {"input": "x"}}]}, {"text": "ok"}]
    )
    scripted.script(f"{model}-judge", [{"text": GOOD}])
    result = await asyncio.wait_for(
        (await lead.start(client, [ChatMessage.from_user("go")], run_id=run_id(), task_queue=worker)).result(), 60
    )
    answer = next(m.tool_call_result for m in result.messages if m.tool_call_result)
    assert Verdict.model_validate_json(answer.result) == Verdict(approved=True, reason="fine")


def test_output_type_must_be_a_model_or_a_schema() -> None:
    with pytest.raises(TypeError, match="output_type must be a pydantic model class"):
        Agent(model="m", output_type=int)
    assert Agent(model="m", output_type=Verdict).to_dict()["output_schema"]["title"] == "Verdict"
    assert "output_schema" not in Agent(model="m").to_dict()
