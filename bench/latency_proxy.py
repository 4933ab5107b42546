"""A delaying TCP proxy: what S3 far away costs, in front of moto on loopback (``--s3-latency MS``).

Every byte a client sends reaches the server ``delay`` seconds later (a pipeline delay, as a
network's: chunks keep their order and do not add up), and answers come back at once. So each
request (a PUT, a GET, a HEAD) costs ``delay`` more than on loopback, however many packets it
takes, which is what a request to real S3 from a worker in another place looks like (20-50 ms).
It runs on its own event loop in a daemon thread, so a busy benchmark loop does not add to it.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Iterator


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, delay: float) -> None:
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[tuple[float, bytes]] = asyncio.Queue()

    async def deliver() -> None:
        while True:
            due, chunk = await queue.get()
            if not chunk:
                break
            if (wait := due - loop.time()) > 0:
                await asyncio.sleep(wait)
            writer.write(chunk)
            await writer.drain()

    sender = asyncio.ensure_future(deliver())
    try:
        while chunk := await reader.read(65536):
            queue.put_nowait((loop.time() + delay, chunk))
        queue.put_nowait((0.0, b""))
        await sender
    finally:
        sender.cancel()
        with contextlib.suppress(Exception):
            writer.close()


class DelayingProxy:
    """Listens on ``127.0.0.1`` (a free port) and forwards to ``target_port`` with ``delay`` on the way there.

    :param target_port: The server's port on 127.0.0.1 (moto's).
    :param delay: Seconds added to each request; 0 forwards at once.
    :raises ValueError: On a negative delay.
    """

    def __init__(self, target_port: int, delay: float) -> None:
        if delay < 0:
            raise ValueError(f"delay must be at least 0 seconds, got {delay}.")
        self.target_port = target_port
        self.delay = delay
        self.port = 0
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._serve, name="s3-latency-proxy", daemon=True)
        self._stop: asyncio.Event | None = None

    async def _handle(self, client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter) -> None:
        try:
            server_reader, server_writer = await asyncio.open_connection("127.0.0.1", self.target_port)
        except OSError:
            client_writer.close()
            return
        await asyncio.gather(
            _pipe(client_reader, server_writer, self.delay),
            _pipe(server_reader, client_writer, 0.0),
            return_exceptions=True,
        )

    async def _main(self) -> None:
        self._stop = asyncio.Event()
        server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        self.port = server.sockets[0].getsockname()[1]
        self._ready.set()
        async with server:
            await self._stop.wait()
        # Connections a client keeps alive: end them here, before the loop closes.
        pending = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)

    def _serve(self) -> None:
        try:
            self._loop.run_until_complete(self._main())
        finally:
            self._loop.close()

    @property
    def endpoint_url(self) -> str:
        """What to put in ``AWS_ENDPOINT_URL_S3``."""
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> DelayingProxy:
        self._thread.start()
        if not self._ready.wait(10):
            raise RuntimeError("The S3 latency proxy did not start within 10 s.")
        return self

    def stop(self) -> None:
        if self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(timeout=10)


@contextlib.contextmanager
def delaying_proxy(target_port: int, delay: float) -> Iterator[DelayingProxy]:
    """A started :class:`DelayingProxy`, stopped after the block."""
    proxy = DelayingProxy(target_port, delay).start()
    try:
        yield proxy
    finally:
        proxy.stop()
