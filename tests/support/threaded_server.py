"""A FastAPI app served by uvicorn on a free loopback port in a background thread (test stubs)."""

from __future__ import annotations

import socket
import threading
import time
from typing import Any

import uvicorn


class ThreadedServer:
    """``start()`` serves ``self.app()`` on ``self.port``; ``stop()`` ends it."""

    port: int = 0
    _server: uvicorn.Server | None = None
    _thread: threading.Thread | None = None

    def app(self) -> Any:
        raise NotImplementedError

    def start(self) -> Any:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self._server = uvicorn.Server(
            uvicorn.Config(self.app(), host="127.0.0.1", port=self.port, log_level="warning")
        )
        self._thread = threading.Thread(target=self._server.run, daemon=True)
        self._thread.start()
        for _ in range(100):
            if self._server.started:
                break
            time.sleep(0.05)
        return self

    def stop(self) -> None:
        if self._server:
            self._server.should_exit = True
        if self._thread:
            self._thread.join(timeout=10)
