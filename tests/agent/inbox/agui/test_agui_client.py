"""The AG-UI endpoint driven by the official client (npm ``@ag-ui/client``'s ``HttpAgent``), as a
frontend drives it: answers streamed token by token, turns on one thread, tool calls, approvals
as interrupts resumed with approve and reject, bad input, and a dropped stream picked up again."""

from __future__ import annotations

import uuid

from agent import get_run
from agent.inbox import IdentityConfig
from agent.inbox.agui_runs import thread_status
from tests.agent.inbox.agui.support import drive, text_of, types
from tests.agent.inbox.support import IDENTITY_HEADER, tool_calls_of

ALICE = {IDENTITY_HEADER: "alice"}


def thread() -> str:
    return f"agui-{uuid.uuid4().hex[:10]}"


async def test_a_streamed_answer_then_a_second_turn_on_the_same_thread(
    client, scripted, model, agui_url, agui_client_dir
):
    # Paced, so that the answer leaves the model in several batches of tokens.
    scripted.script(
        model, [{"text": "Hello there, how can I help?", "pace": 0.05}, {"text": "Checkout runs 3 replicas."}]
    )
    run_id = thread()
    first, second = await drive(
        agui_client_dir,
        agui_url,
        run_id,
        [{"say": "hi", "messageId": "m-1"}, {"say": "how many replicas?", "messageId": "m-2"}],
        headers=ALICE,
    )
    assert "error" not in first, first
    assert types(first)[0] == "RUN_STARTED" and types(first)[-1] == "RUN_FINISHED"
    middle = types(first)[1:-1]
    assert middle[0] == "TEXT_MESSAGE_START" and middle[-1] == "TEXT_MESSAGE_END"
    assert set(middle[1:-1]) == {"TEXT_MESSAGE_CONTENT"} and len(middle) - 2 >= 2, middle
    assert text_of(first) == "Hello there, how can I help?"
    assert first["events"][0]["threadId"] == run_id
    assert first["messages"][-1] == {
        "id": f"{run_id}:1:0",
        "role": "assistant",
        "content": "Hello there, how can I help?",
    }
    assert text_of(second) == "Checkout runs 3 replicas."
    assert [m["id"] for m in second["messages"]] == ["m-1", f"{run_id}:1:0", "m-2", f"{run_id}:2:0"]
    # One durable session: the thread is the run, each message delivered once, by its sender.
    handle = get_run(client, run_id)
    status = await handle.status()
    assert status.turn == 2 and status.waiting_for_user
    received = [e async for e in _until_turn_end(handle, 2) if e.kind == "message_received"]
    assert [(e.data["message_id"], e.data["sender"]) for e in received] == [("m-1", "alice"), ("m-2", "alice")]


async def _until_turn_end(handle, turn):
    async for event in handle.events():
        yield event
        if event.kind == "turn_ended" and event.turn == turn:
            return


async def test_a_tool_call_streams_its_call_and_the_result_the_model_got(scripted, model, agui_url, agui_client_dir):
    scripted.script(
        model,
        [
            {"tool_calls": [{"id": "call_logs", "name": "fetch_logs", "arguments": {"service": "api", "lines": 2}}]},
            {"text": "The logs look fine."},
        ],
    )
    run_id = thread()
    (step,) = await drive(agui_client_dir, agui_url, run_id, [{"say": "show api logs"}], headers=ALICE)
    assert "error" not in step, step
    calls = [e for e in step["events"] if e["type"].startswith("TOOL_CALL")]
    assert [e["type"] for e in calls] == ["TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END", "TOOL_CALL_RESULT"]
    assert calls[0]["toolCallId"] == "call_logs" and calls[0]["toolCallName"] == "fetch_logs"
    assert calls[0]["parentMessageId"] == f"{run_id}:1:0"
    assert calls[1]["delta"] == '{"service": "api", "lines": 2}'
    assert calls[3]["content"] == "api line 0: request served in 0 ms\napi line 1: request served in 1 ms\n"
    # The result comes before the answer it led to.
    assert types(step).index("TOOL_CALL_RESULT") < types(step).index("TEXT_MESSAGE_START")
    assert text_of(step) == "The logs look fine."
    assert [m["role"] for m in step["messages"]] == ["user", "assistant", "tool", "assistant"]
    assert step["messages"][1]["toolCalls"][0]["function"]["name"] == "fetch_logs"


async def test_an_approval_is_an_interrupt_resumed_with_approve_then_with_reject(
    client, scripted, model, agui_url, agui_client_dir
):
    deploy = {"name": "deploy_service", "arguments": {"service": "checkout", "replicas": 3}}
    scripted.script(
        model,
        [
            {"tool_calls": [{"id": "call_a", **deploy}]},
            {"text": "Deployed checkout."},
            {"tool_calls": [{"id": "call_b", **deploy}]},
            {"text": "Understood, not deploying."},
        ],
    )
    run_id = thread()
    asked, approved, asked_again, rejected = await drive(
        agui_client_dir,
        agui_url,
        run_id,
        [
            {"say": "deploy checkout x3"},
            {"resume": {"action": "approve", "argumentsSha256": "from-interrupt"}},
            {"say": "deploy it again"},
            {"resume": {"action": "reject", "feedback": "not on a Friday"}},
        ],
        headers=ALICE,
    )
    # The waiting call ends the AG-UI run with an interrupt the client keeps as pending.
    assert types(asked)[-4:] == ["TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END", "RUN_FINISHED"]
    (interrupt,) = asked["pendingInterrupts"]
    assert (
        interrupt["id"] == "call_a" and interrupt["reason"] == "tool_approval" and interrupt["toolCallId"] == "call_a"
    )
    assert interrupt["metadata"]["toolName"] == "deploy_service"
    assert interrupt["metadata"]["arguments"] == {"service": "checkout", "replicas": 3}
    assert len(interrupt["metadata"]["argumentsSha256"]) == 64
    assert asked["events"][-1]["outcome"]["type"] == "interrupt"
    # Approved: the tool runs, its result and the answer stream, the run goes on to the turn's end.
    assert "error" not in approved, approved
    assert types(approved) == [
        "RUN_STARTED",
        "TOOL_CALL_RESULT",
        "TEXT_MESSAGE_START",
        *types(approved)[3:-2],
        "TEXT_MESSAGE_END",
        "RUN_FINISHED",
    ]
    assert approved["events"][1]["content"] == "deployed checkout x3 in eu-west-1"
    assert text_of(approved) == "Deployed checkout." and approved["pendingInterrupts"] == []
    # Rejected: the rejection's text is the call's result (no tool_finished event exists for it).
    assert asked_again["pendingInterrupts"][0]["id"] == "call_b"
    assert "error" not in rejected, rejected
    result = next(e for e in rejected["events"] if e["type"] == "TOOL_CALL_RESULT")
    assert result["toolCallId"] == "call_b" and "not on a Friday" in result["content"]
    assert text_of(rejected) == "Understood, not deploying."
    # The decisions went by the validated Update, with the inbox's identity as approver.
    decisions = [e async for e in _until_turn_end(get_run(client, run_id), 2) if e.kind == "decision"]
    assert [(e.data["action"], e.data["approver"], e.data["via"]) for e in decisions] == [
        ("confirm", "alice", "update"),
        ("reject", "alice", "update"),
    ]


async def test_a_dropped_stream_is_picked_up_where_it_broke_without_calling_the_model_again(
    scripted, model, agui_url, agui_client_dir
):
    answer = "One, two, three, four, five, six, seven, eight, nine, ten."
    scripted.script(model, [{"text": answer, "pace": 0.1}])
    run_id = thread()
    dropped, reattached = await drive(
        agui_client_dir,
        agui_url,
        run_id,
        [{"say": "count to ten", "messageId": "m-count", "dropAfter": 1}, {"reattach": True}],
        headers=ALICE,
    )
    partial = dropped["messages"][-1]["content"]
    assert "RUN_FINISHED" not in types(dropped) and 0 < len(partial) < len(answer), dropped
    # The new connection sends the rest of the same message, under its id, and the turn's end.
    assert "error" not in reattached, reattached
    assert types(reattached)[:2] == ["RUN_STARTED", "TEXT_MESSAGE_START"]
    assert types(reattached)[-2:] == ["TEXT_MESSAGE_END", "RUN_FINISHED"]
    assert reattached["events"][1]["messageId"] == f"{run_id}:1:0"
    assert partial + text_of(reattached) == answer
    assert [(m["id"], m["content"]) for m in reattached["messages"]] == [
        ("m-count", "count to ten"),
        (f"{run_id}:1:0", answer),
    ]
    assert len(scripted.requests(model)) == 1


async def test_a_reattach_after_the_turn_sends_a_snapshot_of_what_the_client_lacks(
    scripted, model, agui_url, agui_client_dir
):
    scripted.script(model, [{"text": "Hello."}])
    run_id = thread()
    await drive(agui_client_dir, agui_url, run_id, [{"say": "hi", "messageId": "m-hi"}], headers=ALICE)
    # A page loaded afresh knows only the thread id.
    (fresh,) = await drive(agui_client_dir, agui_url, run_id, [{"reattach": True}], headers=ALICE)
    assert types(fresh) == ["RUN_STARTED", "MESSAGES_SNAPSHOT", "RUN_FINISHED"], fresh
    assert [(m["id"], m["content"]) for m in fresh["messages"]] == [("m-hi", "hi"), (f"{run_id}:1:0", "Hello.")]
    assert len(scripted.requests(model)) == 1


async def test_bad_input_is_refused_before_anything_is_sent_or_decided(
    client, scripted, model, agui_url, agui_client_dir
):
    scripted.script(
        model,
        [
            {
                "tool_calls": [
                    {"id": "call_x", "name": "deploy_service", "arguments": {"service": "web", "replicas": 1}}
                ]
            },
            {"text": "Deployed web."},
        ],
    )
    run_id = thread()
    valid = {"threadId": run_id, "runId": "r1", "messages": [{"id": "u1", "role": "user", "content": "hi"}]}
    steps = await drive(
        agui_client_dir,
        agui_url,
        run_id,
        [
            {"raw": {"body": valid, "contentType": "text/plain"}},
            {"raw": {"body": "{not json"}},
            {"raw": {"body": {"threadId": run_id, "runId": "r1", "messages": [{"id": "u1", "role": "user"}]}}},
            {"raw": {"body": {**valid, "messages": []}}},
            {"say": "deploy web"},
            # the validator refuses a hash that is not the call's: 422, nothing runs, the call still waits
            {"resume": {"action": "approve", "argumentsSha256": "0" * 64}},
            {"resume": {"action": "launch"}},
            {"resume": {"action": "approve", "argumentsSha256": "from-interrupt"}},
        ],
        headers=ALICE,
    )
    wrong_type, not_json, schema, no_message, asked, wrong_hash, bad_action, approved = steps
    assert wrong_type["status"] == 415 and "application/json" in wrong_type["body"]
    assert not_json["status"] == 400 and "not JSON" in not_json["body"]
    assert schema["status"] == 422 and '"field":"messages[0].user.content"' in schema["body"].replace(" ", "")
    assert no_message["status"] == 422 and '"field":"messages"' in no_message["body"].replace(" ", "")
    assert asked["pendingInterrupts"][0]["id"] == "call_x"
    assert wrong_hash["status"] == 422 and "arguments" in wrong_hash["error"], wrong_hash
    assert bad_action["status"] == 422 and "approve, reject or modify" in bad_action["error"]
    assert "error" not in approved and text_of(approved) == "Deployed web.", approved
    decisions = [e async for e in _until_turn_end(get_run(client, run_id), 1) if e.kind == "decision"]
    assert len(decisions) == 1


async def test_identity_comes_from_the_inbox_and_an_unknown_agent_is_404(
    client, scripted, model, agui_url, agui_client_dir
):
    scripted.script(model, [{"text": "Hi."}])
    run_id = thread()
    body = {"threadId": run_id, "runId": "r1", "messages": [{"id": "u1", "role": "user", "content": "hi"}]}
    (anonymous,) = await drive(agui_client_dir, agui_url, run_id, [{"raw": {"body": body}}])
    assert anonymous["status"] == 401 and "X-Forwarded-User" in anonymous["body"]
    (elsewhere,) = await drive(
        agui_client_dir,
        agui_url.replace("/ag-ui/chat", "/ag-ui/other"),
        run_id,
        [{"raw": {"body": body}}],
        headers=ALICE,
    )
    assert elsewhere["status"] == 404 and "/ag-ui/chat" in elsewhere["body"]
    assert await thread_status(client, run_id) is None  # nothing was started
    # A name in the input is not who speaks: the inbox's identity is.
    (named,) = await drive(
        agui_client_dir, agui_url, run_id, [{"say": "hi", "messageId": "u2"}], headers={IDENTITY_HEADER: "bob"}
    )
    assert "error" not in named
    received = [e async for e in _until_turn_end(get_run(client, run_id), 1) if e.kind == "message_received"]
    assert received[0].data["sender"] == "bob"


async def test_a_read_only_inbox_refuses_with_403(scripted, model, serve_agui, agui_client_dir):
    run_id = thread()
    body = {"threadId": run_id, "runId": "r1", "messages": [{"id": "u1", "role": "user", "content": "hi"}]}
    async with serve_agui(model, identity=IdentityConfig()) as url:
        (refused,) = await drive(agui_client_dir, url, run_id, [{"raw": {"body": body}}], headers=ALICE)
    assert refused["status"] == 403 and "read-only" in refused["body"]


async def test_modify_runs_the_call_with_new_arguments_and_two_waiting_calls_are_two_interrupts(
    scripted, model, agui_url, agui_client_dir
):
    scripted.script(
        model,
        [
            {
                "tool_calls": [
                    {"id": "call_1", "name": "deploy_service", "arguments": {"service": "api", "replicas": 9}},
                    {"id": "call_2", "name": "deploy_service", "arguments": {"service": "db", "replicas": 2}},
                ]
            },
            {"text": "Done as modified."},
        ],
    )
    run_id = thread()
    asked, modified = await drive(
        agui_client_dir,
        agui_url,
        run_id,
        [
            {"say": "deploy api x9 and db x2"},
            {"resume": {"action": "modify", "arguments": {"service": "api", "replicas": 1}}, "onlyFirst": True},
        ],
        headers=ALICE,
    )
    assert [i["id"] for i in asked["pendingInterrupts"]] == ["call_1", "call_2"]
    assert "error" not in modified, modified
    results = {e["toolCallId"]: e["content"] for e in modified["events"] if e["type"] == "TOOL_CALL_RESULT"}
    assert results["call_1"] == "deployed api x1 in eu-west-1"
    # The cancelled interrupt rejected call_2: its result is the rejection text the model got.
    assert results["call_2"] == "Tool execution for 'deploy_service' was rejected by the user."
    assert [(c["service"], c["replicas"]) for c in tool_calls_of(run_id)] == [("api", 1)]
    assert text_of(modified) == "Done as modified."


async def test_a_long_result_is_sent_whole_and_a_failed_run_ends_with_run_error(
    scripted, model, agui_url, agui_client_dir
):
    scripted.script(
        model,
        [
            {"tool_calls": [{"id": "call_long", "name": "fetch_logs", "arguments": {"service": "api", "lines": 40}}]},
            {"error": {"status": 400, "message": "the model refuses this request"}},
        ],
    )
    (step,) = await drive(agui_client_dir, agui_url, thread(), [{"say": "all the logs"}], headers=ALICE)
    (result,) = [e for e in step["events"] if e["type"] == "TOOL_CALL_RESULT"]
    # longer than a live event's preview (500 characters): read whole from the model call's input
    assert len(result["content"]) > 1000 and result["content"].endswith("api line 39: request served in 39 ms\n")
    assert types(step)[-1] == "RUN_ERROR", types(step)
    assert "failed" in step["events"][-1]["message"] and "refuses" in step["events"][-1]["message"]


async def test_a_page_reloaded_while_a_call_waits_gets_its_interrupt_again(scripted, model, agui_url, agui_client_dir):
    scripted.script(
        model,
        [
            {
                "tool_calls": [
                    {"id": "call_w", "name": "deploy_service", "arguments": {"service": "web", "replicas": 4}}
                ]
            },
            {"text": "Deployed."},
        ],
    )
    run_id = thread()
    asked, reloaded, approved = await drive(
        agui_client_dir,
        agui_url,
        run_id,
        [{"say": "deploy web x4"}, {"reattach": True}, {"resume": {"action": "approve"}}],
        headers=ALICE,
    )
    assert asked["pendingInterrupts"][0]["id"] == "call_w"
    # the reloaded page holds the conversation: it is sent nothing again, only the interrupt
    assert types(reloaded) == ["RUN_STARTED", "RUN_FINISHED"], reloaded
    assert [i["id"] for i in reloaded["pendingInterrupts"]] == ["call_w"]
    assert text_of(approved) == "Deployed." and tool_calls_of(run_id)[0]["replicas"] == 4
