"""A local webhook receiver for benchmarks: answers 200 to every POST, counts them.
``python -m bench.receiver PORT`` (runs until killed)."""

from __future__ import annotations

import sys

from aiohttp import web


def main(port: int) -> None:
    received = 0

    async def hook(_: web.Request) -> web.Response:
        nonlocal received
        received += 1
        return web.Response(text="ok")

    async def count(_: web.Request) -> web.Response:
        return web.Response(text=str(received))

    app = web.Application()
    app.router.add_post("/{tail:.*}", hook)
    app.router.add_get("/count", count)
    web.run_app(app, host="127.0.0.1", port=port, print=None, access_log=None)


if __name__ == "__main__":
    main(int(sys.argv[1]))
