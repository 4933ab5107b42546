"""The model activity reads a completion's JSON straight into our reply; it says the same as the
openai SDK's ``ChatCompletion`` would, and the stored-conversation bookkeeping follows a head that
ends before the reply."""

from __future__ import annotations

import pytest
from openai.types.chat import ChatCompletion

from activities.model import from_openai_response, reply_from_completion
from core.messages import ChatMessage, ToolCall
from workflows.stored_conversation import StoredConversation

COMPLETION = {
    "id": "chatcmpl-1",
    "object": "chat.completion",
    "created": 1,
    "model": "scripted:m",
    "choices": [
        {
            "index": 0,
            "finish_reason": "tool_calls",
            "logprobs": None,
            "message": {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "add", "arguments": '{"a": 1, "b": 2}'}},
                    {"id": "c2", "type": "function", "function": {"name": "add", "arguments": '{"a": 1'}},
                    {"id": "c3", "type": "function", "function": {"name": "add", "arguments": "[1]"}},
                ],
            },
        }
    ],
    "usage": {
        "prompt_tokens": 10,
        "completion_tokens": 5,
        "total_tokens": 15,
        "prompt_tokens_details": {"cached_tokens": 2, "audio_tokens": None},
        "completion_tokens_details": None,
    },
}


def test_reply_from_the_json_is_what_the_sdk_object_gives():
    ours = reply_from_completion(COMPLETION)
    assert ours == from_openai_response(ChatCompletion.model_validate(COMPLETION))
    assert ours.usage == {
        "prompt_tokens": 10,
        "completion_tokens": 5,
        "total_tokens": 15,
        "prompt_tokens_details": {"cached_tokens": 2},
    }
    message = ours.message
    assert message.meta == {"model": "scripted:m", "finish_reason": "tool_calls", "usage": ours.usage}
    assert message.tool_calls[0] == ToolCall(tool_name="add", arguments={"a": 1, "b": 2}, id="c1")
    # unparsable or non-object arguments are kept raw for the run loop's error answer
    assert message.tool_calls[1].extra == {"invalid_arguments": '{"a": 1'}
    assert message.tool_calls[2].extra == {"invalid_arguments": "[1]"}


def test_a_text_reply_without_usage():
    body = {"model": "m", "choices": [{"finish_reason": "stop", "message": {"role": "assistant", "content": "hi"}}]}
    output = reply_from_completion(body)
    assert output.message.text == "hi" and output.message.tool_calls == [] and output.usage == {}


@pytest.mark.parametrize("body", [{}, {"choices": []}, {"choices": [{}]}, {"choices": "x"}])
def test_a_body_that_is_no_completion_raises(body):
    with pytest.raises((KeyError, IndexError, TypeError)):
        reply_from_completion(body)


def test_a_head_that_ends_before_the_reply_sends_the_reply_next():
    user, reply = ChatMessage.from_user("go"), ChatMessage.from_assistant("hi")
    conversation = StoredConversation()
    conversation.record([user], reply, "h1", covers_reply=False)
    tool = ChatMessage.from_user("more")
    assert conversation.request([user, reply, tool]) == ("h1", [reply, tool])
    # an older worker's head covers the reply
    older = StoredConversation()
    older.record([user], reply, "h0")
    assert older.request([user, reply, tool]) == ("h0", [tool])
