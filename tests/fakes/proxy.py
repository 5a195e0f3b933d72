"""A TCP proxy in front of a test server that can cut every connection through it and
refuse new ones, then let them through again: a lost network, as a browser sees it,
without touching the server."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from urllib.parse import urlsplit

CHUNK_BYTES = 65_536


class Proxy:
    def __init__(self, target_host: str, target_port: int) -> None:
        self._target = (target_host, target_port)
        self._open: set[asyncio.StreamWriter] = set()
        self.cut = False
        self._answer: bytes | None = None

    def drop(self, *, answer_status: int | None = None) -> None:
        """Close every connection now and refuse new ones until `restore`: by closing them,
        or, given `answer_status`, by answering each request with that bare status (a
        server that is up but refusing, which makes a browser's EventSource give up)."""
        self.cut = True
        self._answer = None
        if answer_status is not None:
            head = f"HTTP/1.1 {answer_status} Refused\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
            self._answer = head.encode()
        for writer in list(self._open):
            writer.transport.abort()
        self._open.clear()

    def restore(self) -> None:
        self.cut = False

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self.cut:
            if self._answer is not None:
                await reader.readuntil(b"\r\n\r\n")
                writer.write(self._answer)
                await writer.drain()
            writer.transport.abort()
            return
        up_reader, up_writer = await asyncio.open_connection(*self._target)
        self._open.update((writer, up_writer))
        try:
            async with asyncio.TaskGroup() as group:
                group.create_task(self._pipe(reader, up_writer))
                group.create_task(self._pipe(up_reader, writer))
        except* (ConnectionError, OSError):
            pass
        finally:
            for end in (writer, up_writer):
                self._open.discard(end)
                end.transport.abort()

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while chunk := await reader.read(CHUNK_BYTES):
            writer.write(chunk)
            await writer.drain()
        writer.transport.abort()


@contextlib.asynccontextmanager
async def proxy_to(url: str) -> AsyncIterator[tuple[str, Proxy]]:
    """A proxy in front of `url` (http://host:port); yields its own URL and the proxy."""
    parts = urlsplit(url)
    assert parts.hostname is not None and parts.port is not None
    proxy = Proxy(parts.hostname, parts.port)
    server = await asyncio.start_server(proxy.handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}", proxy
    finally:
        proxy.drop()
        server.close()
        await server.wait_closed()
