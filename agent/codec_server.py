"""``agent codec-server``: Temporal's remote codec API over this process's ``AGENT_PAYLOAD_KEYS``,
so the Temporal CLI (``temporal workflow show --codec-endpoint URL``) and the Web UI show
encrypted payloads in plain text to those allowed to reach it.

The API is Temporal's (docs.temporal.io "Codec Server"): ``POST /encode`` and ``POST /decode``
take and answer ``{"payloads": [...]}``, ``temporal.api.common.v1.Payloads`` in proto JSON
(metadata values and data in base64). The UI calls it from the browser, so it answers CORS for
the origins given (allowing the headers the UI sends: ``Authorization, Content-Type,
X-Namespace``, and their preflight ``OPTIONS``). With a token set, a request without
``Authorization: Bearer TOKEN`` gets 401. It binds 127.0.0.1 unless told otherwise: whoever
reaches it can decrypt every payload, so put it behind your access control.
"""

from __future__ import annotations

import argparse
import hmac
import sys
from collections.abc import Sequence

from google.protobuf import json_format
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from temporalio.api.common.v1 import Payloads

from agent.command_line import add_command
from agent.inbox.server import InboxServer
from core.codec import EncryptionCodec, MissingPayloadKeyError, PayloadDecryptionError
from core.converter import payload_codec
from runtime.signals import stop_requested

#: ``agent codec-server``'s default port (the one Temporal's samples use).
DEFAULT_PORT = 8081
#: The headers the Temporal UI sends to a codec server.
ALLOWED_HEADERS = ("Authorization", "Content-Type", "X-Namespace")


def create_codec_app(codec: EncryptionCodec, origins: Sequence[str] = (), token: str | None = None) -> Starlette:
    """The codec server's app.

    :param codec: Encrypts ``/encode``'s payloads under its first key; decrypts ``/decode``'s.
    :param origins: Browser origins allowed by CORS (the Temporal UI's, e.g. ``http://localhost:8233``).
    :param token: When set, every POST must carry ``Authorization: Bearer TOKEN`` (else 401).
    """

    def authorized(request: Request) -> bool:
        if token is None:
            return True
        scheme, _, given = request.headers.get("authorization", "").partition(" ")
        return scheme.lower() == "bearer" and hmac.compare_digest(given.strip().encode(), token.encode())

    async def convert(request: Request, encode: bool) -> Response:
        if not authorized(request):
            return JSONResponse({"message": "a bearer token is required"}, status_code=401)
        try:
            payloads = json_format.Parse(await request.body(), Payloads())
        except (json_format.ParseError, UnicodeDecodeError) as exc:
            return JSONResponse({"message": f"not a Payloads JSON body: {exc}"}, status_code=400)
        try:
            done = await (codec.encode(payloads.payloads) if encode else codec.decode(payloads.payloads))
        except (MissingPayloadKeyError, PayloadDecryptionError) as exc:
            return JSONResponse({"message": str(exc)}, status_code=400)
        body = json_format.MessageToJson(Payloads(payloads=done), indent=None)
        return Response(body, media_type="application/json")

    async def encode(request: Request) -> Response:
        return await convert(request, encode=True)

    async def decode(request: Request) -> Response:
        return await convert(request, encode=False)

    middleware = [
        Middleware(
            CORSMiddleware,
            allow_origins=list(origins),
            allow_methods=["POST", "OPTIONS"],
            allow_headers=list(ALLOWED_HEADERS),
            allow_credentials=True,
        )
    ]
    routes = [Route("/encode", encode, methods=["POST"]), Route("/decode", decode, methods=["POST"])]
    return Starlette(routes=routes, middleware=middleware)


async def start_codec_server(
    codec: EncryptionCodec, port: int, origins: Sequence[str] = (), token: str | None = None, host: str = "127.0.0.1"
) -> InboxServer:
    """Serve :func:`create_codec_app` in the running loop; returns once it listens.

    :raises agent.inbox.server.InboxBindError: If the port is taken.
    """
    app = create_codec_app(codec, origins, token)
    return await InboxServer(app, host=host, port=port, name="codec server").start()


def add_commands(sub: argparse._SubParsersAction) -> None:
    """Register ``agent codec-server`` on the CLI's subcommands."""
    parser = add_command(
        sub,
        "codec-server",
        "serve Temporal's codec API with AGENT_PAYLOAD_KEYS, so the Temporal UI and CLI show plain text",
        "Serve POST /encode and POST /decode (Temporal's remote codec API) on 127.0.0.1 with the keys of "
        "AGENT_PAYLOAD_KEYS. Whoever reaches it can read every payload: set --token, or keep it behind your "
        "access control. Point the CLI at it with `temporal workflow show --codec-endpoint URL`, the UI with "
        "its codec endpoint setting (`temporal server start-dev --ui-codec-endpoint URL`, or the UI's settings).",
        "examples:\n  agent codec-server\n"
        '  agent codec-server --port 8081 --cors-origin http://localhost:8233 --token "$CODEC_TOKEN"',
    )
    parser.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"port (default {DEFAULT_PORT}; 0: a free one)")
    parser.add_argument(
        "--cors-origin",
        action="append",
        default=[],
        metavar="ORIGIN",
        help="a browser origin allowed to call it, e.g. the Temporal UI's http://localhost:8233; repeatable",
    )
    parser.add_argument(
        "--token", default=None, help="require 'Authorization: Bearer TOKEN' on every request (else 401)"
    )
    parser.set_defaults(handler=cmd_codec_server, needs_client=False)


async def cmd_codec_server(args: argparse.Namespace, client: None) -> int:
    codec = payload_codec()
    if codec.encrypting_key_id is None:
        print(
            "agent codec-server: error: AGENT_PAYLOAD_KEYS is not set: there is no key to decode with", file=sys.stderr
        )
        return 2
    server = await start_codec_server(codec, args.port, args.cors_origin, args.token)
    keys = ", ".join(codec.key_ids)
    print(f"Codec server: {server.url}  (keys {keys}; encrypting with {codec.encrypting_key_id})", flush=True)
    print(f"Access:       {'bearer token required' if args.token else 'anyone who reaches it (no --token)'}")
    stop = stop_requested()
    try:
        await stop.wait()
    finally:
        await server.stop()
    return 0
