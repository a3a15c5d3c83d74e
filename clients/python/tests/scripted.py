"""A scripted HTTP server for tests that need answers a real daemon does not give on demand:
it answers each request from a script, records what it was sent, and can drop a connection."""

from __future__ import annotations

import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def error(code: str, message: str = "m", obj: str | None = "run r1") -> bytes:
    return json.dumps({"error": {"code": code, "message": message, "object": obj}}).encode()


class Scripted:
    """Answers requests from a script of (status, headers, body), or "drop" (close the
    connection without answering), or "stale" (answer, then close the idle connection without
    saying so); records each request."""

    def __init__(self, script: list[Any]) -> None:
        self.script = list(script)
        self.requests: list[dict[str, Any]] = []
        scripted = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                del format, args

            def _any(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                scripted.requests.append(
                    {
                        "at": time.monotonic(),
                        "method": self.command,
                        "path": self.path,
                        "headers": dict(self.headers),
                        "body": body,
                    }
                )
                step = scripted.script.pop(0) if scripted.script else (500, {}, error("internal"))
                if step == "drop":
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return
                stale = step[0] == "stale"
                status, headers, payload = step[1] if stale else step
                self.send_response(status)
                for k, v in {"Content-Type": "application/json", **headers}.items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)
                if stale:
                    self.close_connection = True

            do_GET = do_PUT = do_POST = _any

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def ok(body: dict[str, Any], status: int = 200) -> tuple[int, dict[str, str], bytes]:
    return (status, {}, json.dumps(body).encode())
