"""Serve the example AG-UI page (this folder) and pass ``/ag-ui/*`` on to the inbox of ``agent dev``,
so that page and endpoint share one origin (as a reverse proxy in front of ``agent inbox`` would).

    agent dev --agent examples.quickstart:agent          # shell 1: serves POST /ag-ui/agent
    bash examples/agui_frontend/build.sh                 # once: bundles @ag-ui/client for the page
    python -m examples.agui_frontend.serve               # shell 2: http://127.0.0.1:8780/?agent=agent

Requests and answers pass unchanged (the event stream too, as it arrives); the inbox's identity
applies (``agent dev``'s is its ``--inbox-identity``).
"""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path

import httpx
import uvicorn
from starlette.applications import Starlette
from starlette.background import BackgroundTask
from starlette.requests import Request
from starlette.responses import FileResponse, Response, StreamingResponse
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

HERE = Path(__file__).parent
#: Request headers passed on to the inbox (the identity it may read among them).
PASSED_HEADERS = ("content-type", "accept", "authorization", "cookie", "x-forwarded-user")


def create_app(inbox_url: str, bundle: Path = HERE / "agui-client.js") -> Starlette:
    """The page, the client bundle, and ``POST /ag-ui/{name}`` passed on to ``inbox_url``.

    :param inbox_url: The inbox, e.g. ``http://127.0.0.1:8765``.
    :param bundle: The bundled ``@ag-ui/client`` (``build.sh`` writes it).
    """
    upstream = httpx.AsyncClient(base_url=inbox_url, timeout=httpx.Timeout(10.0, read=None))

    async def agui(request: Request) -> Response:
        headers = {k: v for k, v in request.headers.items() if k.lower() in PASSED_HEADERS}
        sent = upstream.build_request("POST", request.url.path, content=await request.body(), headers=headers)
        answer = await upstream.send(sent, stream=True)
        return StreamingResponse(
            answer.aiter_raw(),
            status_code=answer.status_code,
            media_type=answer.headers.get("content-type"),
            headers={"Cache-Control": "no-cache"},
            background=BackgroundTask(answer.aclose),
        )

    async def client_bundle(request: Request) -> Response:
        if not bundle.exists():
            return Response(f"{bundle} is missing: run examples/agui_frontend/build.sh", status_code=404)
        return FileResponse(bundle, media_type="text/javascript")

    return Starlette(
        routes=[
            Route("/ag-ui/{name}", agui, methods=["POST"]),
            Route("/agui-client.js", client_bundle),
            Mount("/", StaticFiles(directory=HERE, html=True)),
        ]
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--inbox", default="http://127.0.0.1:8765", help="the inbox of agent dev / agent inbox")
    parser.add_argument("--port", type=int, default=8780, help="port on 127.0.0.1 (default 8780)")
    args = parser.parse_args()
    print(f"AG-UI example: http://127.0.0.1:{args.port}/?agent=agent  (endpoint: {args.inbox}/ag-ui/...)")
    asyncio.run(uvicorn.Server(uvicorn.Config(create_app(args.inbox), host="127.0.0.1", port=args.port)).serve())


if __name__ == "__main__":
    main()
