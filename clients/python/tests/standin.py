"""A STAND-IN HTTP server for the client's retry and deadline tests: the console answers 429
and 503 only under load it cannot be put under on cue, so this loopback server plays those
answers from a script. Everything else is tested against the real console."""

from __future__ import annotations

import http.server
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def scripted(answers: list[tuple[int, dict[str, str], bytes]]) -> Iterator[tuple[str, list[dict]]]:
    """Serves `answers` in order (the last one again once they run out); yields its URL and the
    requests it saw (time, method, path, headers)."""
    seen: list[dict] = []
    lock = threading.Lock()

    class Handler(http.server.BaseHTTPRequestHandler):
        def _answer(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            if length:
                self.rfile.read(length)
            with lock:
                seen.append({"at": time.monotonic(), "method": self.command, "path": self.path, "headers": dict(self.headers)})
                status, headers, body = answers[min(len(seen), len(answers)) - 1]
            if status == 0:  # never answer (until the client gives up)
                time.sleep(float(headers.get("hold", "5")))
                return
            self.send_response(status)
            for k, v in headers.items():
                self.send_header(k, v)
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_POST = do_PUT = do_DELETE = _answer

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", seen
    finally:
        server.shutdown()
        server.server_close()
