"""A scripted OpenAI-compatible model server, on loopback, for tests and the demo.

It is a real HTTP server speaking the Chat Completions wire format, so the real ``openai``
SDK talks to it. It does not think: it plays back, per model name, a list of scripted
replies. Everything it returns is labelled (``model: "scripted:<name>"``,
``system_fingerprint: "scripted-model"``) so no one mistakes it for a real model.

Script entries (JSON):
  {"text": "..."}                                         a text reply
  {"tool_calls": [{"name": "t", "arguments": {...}}]}     tool calls ("arguments" may be a raw string;
                                                           "id" defaults to a fresh call id)
  {"error": {"status": 429, "message": "...", "retry_after": 0.1}}   an HTTP error
  {"raw": {"status": 200, "content_type": "text/html", "body": "..."}}   any body at all (a proxy's page)
  any entry + {"times": N}                                repeat it N times
  any entry + {"finish_reason": "length"}                 override the finish reason
  any entry + {"hold_until": "/path"}                     answer only once that file exists (at most
                                                           HOLD_LIMIT_SECONDS): a call kept in flight

Streaming: a request with ``"stream": true`` gets the same reply as chat-completion chunks
(server-sent events, chunked transfer encoding; usage in a last chunk when
``stream_options.include_usage`` is set), text in pieces of ``chunk_chars`` characters. Pace it
per entry or for the whole server (``ScriptedModelServer(stream_pace=..., stream_ttfb=...)``):
  any entry + {"ttfb": 0.3}                               wait this many seconds before the first byte
  any entry + {"pace": 0.02}                              and this many between two chunks
  any entry + {"chunk_chars": 4}                          characters of text a chunk
  any entry + {"break_after": N}                          send N chunks, then drop the connection
                                                           (a stream broken mid-way)
``ScriptedModelServer.sent_chunks(model)`` lists when each text chunk left (``time.time()``) and its text.

A model whose script is empty calls each offered tool once with placeholder arguments, then
answers with a labelled summary of the tool results.

Control endpoints: ``PUT /_scripted/scripts/<model>`` (body ``{"responses": [...]}``) and
``GET /_scripted/requests/<model>`` (the recorded request bodies).
"""

from __future__ import annotations

import argparse
import itertools
import json
import threading
import time
from collections import defaultdict
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

LABEL = "scripted-model"
#: Longest a ``hold_until`` entry holds its reply.
HOLD_LIMIT_SECONDS = 60.0


def _hold(path: str) -> None:
    """Wait (polling) until ``path`` exists or :data:`HOLD_LIMIT_SECONDS` pass."""
    from pathlib import Path

    give_up_at = time.monotonic() + HOLD_LIMIT_SECONDS
    while not Path(path).exists() and time.monotonic() < give_up_at:
        time.sleep(0.02)


class _Script:
    """The replies left for one model name, and the requests it received."""

    def __init__(self, stream_pace: float = 0.0, stream_ttfb: float = 0.0, chunk_chars: int = 4) -> None:
        self.lock = threading.Lock()
        self.responses: dict[str, list[dict[str, Any]]] = defaultdict(list)
        self.requests: dict[str, list[dict[str, Any]]] = defaultdict(list)
        self.sent: dict[str, list[tuple[float, str]]] = defaultdict(list)
        self.call_ids = itertools.count(1)
        self.stream_defaults = {"pace": stream_pace, "ttfb": stream_ttfb, "chunk_chars": chunk_chars}

    def set(self, model: str, responses: list[dict[str, Any]]) -> None:
        expanded: list[dict[str, Any]] = []
        for entry in responses:
            times = int(entry.get("times", 1))
            expanded.extend([{k: v for k, v in entry.items() if k != "times"}] * times)
        with self.lock:
            self.responses[model] = expanded
            self.requests[model] = []

    def next(self, model: str, body: dict[str, Any]) -> dict[str, Any] | None:
        with self.lock:
            self.requests[model].append(body)
            queue = self.responses.get(model)
            return queue.pop(0) if queue else None


def _estimate_tokens(value: Any) -> int:
    return max(1, len(json.dumps(value)) // 4)


def _unscripted_reply(model: str, body: dict[str, Any]) -> dict[str, Any]:
    """A model with no script left: call each offered tool once with placeholder arguments
    taken from the user's words, then summarise the results (so ``agent run`` works offline)."""
    messages = body.get("messages", [])
    if not body.get("tools") or any(m.get("role") == "tool" for m in messages):
        results = [m.get("content", "") for m in messages if m.get("role") == "tool"]
        summary = "; ".join(results) if results else "nothing to do"
        return {"text": f"[{LABEL}: no script for '{model}'] Done. Tool results: {summary}"}
    user_text = next((m.get("content") or "" for m in reversed(messages) if m.get("role") == "user"), "")
    calls = []
    for t in body["tools"]:
        function = t["function"]
        props = function.get("parameters", {}).get("properties", {})
        required = function.get("parameters", {}).get("required", list(props))
        args = {
            name: (user_text[:60] if props[name].get("type") == "string" else 1) for name in required if name in props
        }
        calls.append({"name": function["name"], "arguments": args})
    return {"tool_calls": calls}


def _completion(
    model: str, entry: dict[str, Any] | None, body: dict[str, Any], call_ids: itertools.count
) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": None}
    finish_reason = "stop"
    if entry is None:
        entry = _unscripted_reply(model, body)
    if "tool_calls" in entry:
        message["tool_calls"] = [
            {
                "id": call.get("id") or f"call_{next(call_ids)}",
                "type": "function",
                "function": {
                    "name": call["name"],
                    "arguments": call["arguments"]
                    if isinstance(call.get("arguments"), str)
                    else json.dumps(call.get("arguments", {})),
                },
            }
            for call in entry["tool_calls"]
        ]
        message["content"] = entry.get("text")
        finish_reason = "tool_calls"
    else:
        message["content"] = entry.get("text", "")
    finish_reason = (entry or {}).get("finish_reason", finish_reason)
    prompt_tokens = _estimate_tokens(body.get("messages", [])) + _estimate_tokens(body.get("tools", []))
    completion_tokens = _estimate_tokens(message)
    return {
        "id": f"chatcmpl-{LABEL}-{time.monotonic_ns()}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": f"scripted:{model}",
        "system_fingerprint": LABEL,
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason, "logprobs": None}],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }


def _chunks(completion: dict[str, Any], chunk_chars: int, include_usage: bool) -> list[dict[str, Any]]:
    """``completion`` as the chat-completion chunks a streaming endpoint sends (OpenAI's shape)."""
    base = {k: completion[k] for k in ("id", "created", "model", "system_fingerprint")}
    base["object"] = "chat.completion.chunk"
    choice = completion["choices"][0]
    message = choice["message"]

    def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
        return {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason, "logprobs": None}]}

    text = message.get("content")
    out = [chunk({"role": "assistant", "content": "" if text is not None else None})]
    for start in range(0, len(text or ""), max(1, chunk_chars)):
        out.append(chunk({"content": text[start : start + max(1, chunk_chars)]}))
    for index, call in enumerate(message.get("tool_calls") or []):
        arguments = call["function"]["arguments"]
        half = len(arguments) // 2
        first = {"index": index, "id": call["id"], "type": "function"}
        out.append(
            chunk(
                {
                    "tool_calls": [
                        {**first, "function": {"name": call["function"]["name"], "arguments": arguments[:half]}}
                    ]
                }
            )
        )
        out.append(chunk({"tool_calls": [{"index": index, "function": {"arguments": arguments[half:]}}]}))
    out.append(chunk({}, choice["finish_reason"]))
    if include_usage:
        out.append({**base, "choices": [], "usage": completion["usage"]})
    return out


def _handler(script: _Script) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # quiet
            return

        def _send(
            self,
            status: int,
            payload: Any,
            headers: dict[str, str] | None = None,
            content_type: str = "application/json",
        ) -> None:
            data = payload.encode() if isinstance(payload, str) else json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            for key, value in (headers or {}).items():
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(data)

        def _body(self) -> dict[str, Any]:
            length = int(self.headers.get("Content-Length", 0))
            return json.loads(self.rfile.read(length) or b"{}")

        def do_PUT(self) -> None:
            if self.path.startswith("/_scripted/scripts/"):
                script.set(self.path.rsplit("/", 1)[1], self._body().get("responses", []))
                self._send(200, {"ok": True})
            else:
                self._send(404, {"error": {"message": f"no route {self.path}"}})

        def do_GET(self) -> None:
            if self.path.startswith("/_scripted/requests/"):
                with script.lock:
                    self._send(200, script.requests.get(self.path.rsplit("/", 1)[1], []))
            elif self.path.rstrip("/").endswith("/models"):
                self._send(200, {"object": "list", "data": [{"id": m, "object": "model"} for m in script.responses]})
            else:
                self._send(404, {"error": {"message": f"no route {self.path}"}})

        def do_POST(self) -> None:
            if not self.path.rstrip("/").endswith("/chat/completions"):
                self._send(404, {"error": {"message": f"no route {self.path}", "type": "invalid_request_error"}})
                return
            body = self._body()
            model = body.get("model", "")
            entry = script.next(model, body)
            if entry is not None and "hold_until" in entry:
                _hold(entry["hold_until"])
            if entry is not None and "error" in entry:
                error = entry["error"]
                headers = {"Retry-After": str(error["retry_after"])} if "retry_after" in error else None
                self._send(
                    int(error.get("status", 500)),
                    {"error": {"message": error.get("message", f"[{LABEL}] scripted error"), "type": "scripted_error"}},
                    headers,
                )
                return
            if entry is not None and "raw" in entry:
                raw = entry["raw"]
                self._send(int(raw.get("status", 200)), raw["body"], content_type=raw.get("content_type", "text/plain"))
                return
            completion = _completion(model, entry, body, script.call_ids)
            if body.get("stream"):
                self._stream(model, completion, {**script.stream_defaults, **(entry or {})}, body)
            else:
                self._send(200, completion)

        def _stream(self, model: str, completion: dict[str, Any], pacing: dict[str, Any], body: dict[str, Any]) -> None:
            """Send ``completion`` as server-sent events, paced; drop the connection after
            ``break_after`` chunks when the entry asks for it."""
            include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
            chunks = _chunks(completion, int(pacing["chunk_chars"]), include_usage)
            break_after = pacing.get("break_after")
            time.sleep(float(pacing["ttfb"]))
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for index, chunk in enumerate(chunks):
                if break_after is not None and index >= int(break_after):
                    self.close_connection = True  # no terminating chunk: the client sees a broken body
                    return
                if index and pacing["pace"]:
                    time.sleep(float(pacing["pace"]))
                self._write_chunk(f"data: {json.dumps(chunk)}\n\n")
                delta = chunk["choices"][0]["delta"] if chunk["choices"] else {}
                if delta.get("content"):
                    with script.lock:
                        script.sent[model].append((time.time(), delta["content"]))
            self._write_chunk("data: [DONE]\n\n")
            self.wfile.write(b"0\r\n\r\n")

        def _write_chunk(self, text: str) -> None:
            data = text.encode()
            self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
            self.wfile.flush()

    return Handler


class ScriptedModelServer:
    """The scripted model on ``127.0.0.1``; start it in-process with :meth:`start`.

    :param port: 0 picks a free port.
    :param stream_pace: Seconds between two chunks of a streamed reply (an entry's ``pace`` wins).
    :param stream_ttfb: Seconds before a streamed reply's first byte (an entry's ``ttfb`` wins).
    :param chunk_chars: Characters of text in one chunk (an entry's ``chunk_chars`` wins).
    :raises ValueError: For a negative pace or time to first byte, or ``chunk_chars < 1``.
    """

    def __init__(self, port: int = 0, stream_pace: float = 0.0, stream_ttfb: float = 0.0, chunk_chars: int = 4) -> None:
        if stream_pace < 0 or stream_ttfb < 0 or chunk_chars < 1:
            raise ValueError(
                f"stream_pace and stream_ttfb must be 0 or more and chunk_chars at least 1, got "
                f"{stream_pace!r}, {stream_ttfb!r}, {chunk_chars!r}."
            )
        self._script = _Script(stream_pace, stream_ttfb, chunk_chars)
        self._server = ThreadingHTTPServer(("127.0.0.1", port), _handler(self._script))
        self._server.daemon_threads = True
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        """The port it listens on."""
        return self._server.server_address[1]

    @property
    def base_url(self) -> str:
        """What to put in ``OPENAI_BASE_URL``."""
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> ScriptedModelServer:
        self._thread = threading.Thread(target=self._server.serve_forever, name=LABEL, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and close the socket. Idempotent; fine before :meth:`start` too."""
        if self._thread is not None:  # shutdown() waits for a serve_forever() that must be running
            self._server.shutdown()
            self._thread = None
        self._server.server_close()

    def script(self, model: str, responses: list[dict[str, Any]]) -> None:
        """Replace the replies for ``model`` (and forget its recorded requests)."""
        self._script.set(model, responses)

    def requests(self, model: str) -> list[dict[str, Any]]:
        """The request bodies received for ``model``, oldest first."""
        with self._script.lock:
            return list(self._script.requests.get(model, []))

    def sent_chunks(self, model: str) -> list[tuple[float, str]]:
        """``(time.time() when sent, text)`` of each streamed text chunk for ``model``, oldest first."""
        with self._script.lock:
            return list(self._script.sent.get(model, []))

    def __enter__(self) -> ScriptedModelServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description="Run the scripted OpenAI-compatible model server (not a real model).")
    parser.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (0: any free port)")
    parser.add_argument("--script", help="JSON file: {model_name: [entries...]}")
    parser.add_argument("--stream-pace", type=float, default=0.0, help="seconds between two chunks of a streamed reply")
    parser.add_argument("--stream-ttfb", type=float, default=0.0, help="seconds before a streamed reply's first byte")
    parser.add_argument("--chunk-chars", type=int, default=4, help="characters of text in one streamed chunk")
    args = parser.parse_args()
    server = ScriptedModelServer(args.port, args.stream_pace, args.stream_ttfb, args.chunk_chars)
    if args.script:
        with open(args.script) as f:
            for model, responses in json.load(f).items():
                server.script(model, responses)
    print(f"[{LABEL}] listening at {server.base_url}", flush=True)
    try:
        server._server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
