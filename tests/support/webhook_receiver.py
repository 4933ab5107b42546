"""A local webhook receiver for the approval notification tests: it verifies each request's
Standard Webhooks signature with the ``standardwebhooks`` library (as a real receiver would) and,
as a Slack incoming webhook would, can check the body's Block Kit shape and answer 400 otherwise."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from standardwebhooks import Webhook

#: A Standard Webhooks secret for tests (whsec_ and 32 random bytes in base64).
TEST_SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSwH5xC1m7c3Ow="

#: The Block Kit block types and what each must hold (the part of Slack's checks a message meets).
BLOCK_FIELDS = {"section": {"text"}, "context": {"elements"}, "actions": {"elements"}}


def slack_shape_problems(body: Any) -> list[str]:
    """Why ``body`` is not a message a Slack incoming webhook takes (empty when it is)."""
    problems = []
    if not isinstance(body, dict) or not isinstance(body.get("text"), str) or not body["text"]:
        return ["a message needs a non-empty 'text' (the notification's fallback)"]
    blocks = body.get("blocks")
    if not isinstance(blocks, list) or not 0 < len(blocks) <= 50:
        return ["'blocks' must be a list of 1 to 50 blocks"]
    for index, block in enumerate(blocks):
        kind = block.get("type")
        if kind not in BLOCK_FIELDS:
            problems.append(f"block {index}: unknown type {kind!r}")
            continue
        missing = BLOCK_FIELDS[kind] - set(block)
        if missing:
            problems.append(f"block {index} ({kind}): missing {sorted(missing)}")
        if kind == "section" and (
            block["text"].get("type") not in ("mrkdwn", "plain_text") or len(block["text"].get("text", "")) > 3000
        ):
            problems.append(f"block {index}: section text must be mrkdwn/plain_text of at most 3,000 characters")
        if kind == "actions":
            for element in block["elements"]:
                if element.get("type") != "button" or element["text"].get("type") != "plain_text":
                    problems.append(f"block {index}: actions hold plain_text buttons")
                if not str(element.get("url", "")).startswith(("http://", "https://")):
                    problems.append(f"block {index}: a link button needs an http(s) url")
                if element.get("style") not in (None, "primary", "danger"):
                    problems.append(f"block {index}: button style must be primary or danger")
    return problems


class WebhookReceiver:
    """Receives on 127.0.0.1 (a free port) until :meth:`close`.

    :param secret: The signing secret to verify with.
    :param failures: Answer 503 to this many first requests (to be retried).
    :param slack: Check the Slack shape and answer 400 ``invalid_blocks`` when it is wrong.
    """

    def __init__(self, secret: str = TEST_SECRET, failures: int = 0, slack: bool = False) -> None:
        self.received: list[dict[str, Any]] = []
        self.refused: list[str] = []
        self.attempts = 0
        receiver = self
        verifier = Webhook(secret)

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers["Content-Length"]))
                receiver.attempts += 1
                if receiver.attempts <= failures:
                    return self._answer(503)
                headers = {name.lower(): value for name, value in self.headers.items()}
                try:
                    body = verifier.verify(raw, headers)
                except Exception as exc:  # noqa: BLE001 - any verification failure is a refusal
                    receiver.refused.append(f"signature: {exc}")
                    return self._answer(401)
                problems = slack_shape_problems(body) if slack else []
                if problems:
                    receiver.refused.extend(problems)
                    return self._answer(400, b"invalid_blocks")
                receiver.received.append({"body": body, "id": headers["webhook-id"]})
                self._answer(200, b"ok")

            def _answer(self, status: int, text: bytes = b"") -> None:
                self.send_response(status)
                self.send_header("Content-Length", str(len(text)))
                self.end_headers()
                self.wfile.write(text)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hooks/agent"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def events(self, type: str | None = None) -> list[dict[str, Any]]:
        """The bodies received (of one ``type``, for the standard format)."""
        return [r["body"] for r in self.received if type is None or r["body"].get("type") == type]

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
