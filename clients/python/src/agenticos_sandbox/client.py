"""A small typed client of the console's REST API (`/api/v1`), sync (`Console`) and async
(`AsyncConsole`), on httpx.

- Auth: an API token (`Authorization: Bearer`), kept in a `Token` whose repr is `Token(***)`;
  it is in no repr, log line or exception text of this package.
- Errors: `application/problem+json` answers raise the class of their problem type
  (`agenticos_sandbox.errors`).
- `429` and `503` are retried after their `Retry-After` (seconds, or an HTTP date), at most
  `retries` times and never past the call's deadline.
- Deadlines: every call has one (`timeout`, seconds, default 60; a call may pass its own): the
  whole call, retries and waits included, raises `DeadlineExceeded` once it passes.

Both classes build their requests with the same `_Call` values and read answers with the same
functions; only sending differs.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import time
import weakref
from dataclasses import dataclass, field
from typing import Any, Mapping
from urllib.parse import quote

import httpx

from . import errors

DEFAULT_TIMEOUT = 60.0
DEFAULT_RETRIES = 4
RETRIED_STATUSES = (429, 503)
MAX_RETRY_WAIT = 30.0


class Token:
    """An API token: its value is only read to sign a request."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        if not value or any(c in value for c in "\r\n"):
            raise ValueError("an API token is one line of text")
        self._value = value

    def reveal(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return "Token(***)"

    __str__ = __repr__

    def __reduce__(self) -> Any:
        raise TypeError("a Token is not pickled")


@dataclass(frozen=True)
class ExecResult:
    """What a command produced (`POST /api/v1/runs/{id}/workspace/exec`)."""

    exit_code: int | None
    stdout: str = ""
    stderr: str = ""
    timed_out: bool = False
    output_limited: bool = False
    stdout_base64: str | None = None
    stderr_base64: str | None = None

    @classmethod
    def from_json(cls, body: Mapping[str, Any]) -> "ExecResult":
        return cls(
            exit_code=body.get("exit_code"),
            stdout=body.get("stdout") or "",
            stderr=body.get("stderr") or "",
            timed_out=bool(body.get("timed_out")),
            output_limited=bool(body.get("output_limited")),
            stdout_base64=body.get("stdout_base64"),
            stderr_base64=body.get("stderr_base64"),
        )

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out and not self.output_limited


@dataclass(frozen=True)
class Entry:
    """A file or folder of a workspace (`ls`, `stat`)."""

    name: str
    path: str
    is_dir: bool
    size: int | None = None
    is_link: bool = False

    @classmethod
    def from_json(cls, body: Mapping[str, Any]) -> "Entry":
        return cls(
            name=body.get("name", ""),
            path=body.get("path", ""),
            is_dir=bool(body.get("is_dir")),
            size=body.get("size"),
            is_link=bool(body.get("is_link")),
        )


@dataclass
class _Call:
    """One API call: what to send and how to read the answer."""

    method: str
    path: str
    params: dict[str, Any] | None = None
    json_body: Any = None
    content: bytes | None = None
    read: str = "json"  # json | bytes | none
    timeout: float | None = None
    headers: dict[str, str] = field(default_factory=dict)


def _path(value: str) -> str:
    return quote(value, safe="")


def _run(run_id: str, sub: str) -> str:
    return f"/api/v1/runs/{_path(run_id)}/{sub}"


class _Calls:
    """The API's operations as `_Call` values, shared by both clients."""

    @staticmethod
    def me() -> _Call:
        return _Call("GET", "/api/v1/me")

    @staticmethod
    def create_run(
        agent_id: str,
        *,
        conversation_id: str | None = None,
        started_by: str = "api",
        manifest: Mapping[str, Any] | None = None,
        snapshot_id: str | None = None,
        session_state: str | None = None,
        user_id: str | None = None,
    ) -> _Call:
        body: dict[str, Any] = {"agent_id": agent_id, "started_by": started_by}
        for name, value in (
            ("conversation_id", conversation_id),
            ("manifest", manifest),
            ("snapshot_id", snapshot_id),
            ("session_state", session_state),
            ("user_id", user_id),
        ):
            if value is not None:
                body[name] = value
        return _Call("POST", "/api/v1/runs", json_body=body)

    @staticmethod
    def create_conversation(agent_id: str, title: str = "chat") -> _Call:
        return _Call("POST", "/api/v1/conversations", json_body={"agent_id": agent_id, "title": title})

    @staticmethod
    def get_run(run_id: str) -> _Call:
        return _Call("GET", f"/api/v1/runs/{_path(run_id)}")

    @staticmethod
    def finish_run(run_id: str) -> _Call:
        return _Call("POST", _run(run_id, "finish"))

    @staticmethod
    def exec(
        run_id: str,
        command: str | None = None,
        *,
        argv: list[str] | None = None,
        timeout_seconds: int | None = None,
        env: Mapping[str, str] | None = None,
        output_encoding: str | None = None,
    ) -> _Call:
        body: dict[str, Any] = {}
        if command is not None:
            body["command"] = command
        if argv is not None:
            body["argv"] = list(argv)
        if timeout_seconds is not None:
            body["timeout_seconds"] = int(timeout_seconds)
        if env:
            body["env"] = dict(env)
        if output_encoding is not None:
            body["output_encoding"] = output_encoding
        # The call waits for the command, so its deadline is the command's timeout and then some.
        wait = float(timeout_seconds or 120) + 30.0
        return _Call("POST", _run(run_id, "workspace/exec"), json_body=body, timeout=wait)

    @staticmethod
    def read_file(run_id: str, path: str) -> _Call:
        return _Call("GET", _run(run_id, "workspace/files"), params={"path": path}, read="bytes")

    @staticmethod
    def write_file(run_id: str, path: str, data: bytes) -> _Call:
        return _Call(
            "PUT",
            _run(run_id, "workspace/files"),
            params={"path": path},
            content=bytes(data),
            read="none",
            headers={"Content-Type": "application/octet-stream"},
        )

    @staticmethod
    def ls(run_id: str, path: str = "") -> _Call:
        return _Call("GET", _run(run_id, "workspace/ls"), params={"path": path})

    @staticmethod
    def stat(run_id: str, path: str) -> _Call:
        return _Call("GET", _run(run_id, "workspace/stat"), params={"path": path})

    @staticmethod
    def mkdir(run_id: str, path: str) -> _Call:
        return _Call("POST", _run(run_id, "workspace/mkdir"), json_body={"path": path}, read="none")

    @staticmethod
    def remove(run_id: str, path: str) -> _Call:
        return _Call("POST", _run(run_id, "workspace/remove"), json_body={"path": path}, read="none")

    @staticmethod
    def workspace_state(run_id: str) -> _Call:
        return _Call("GET", _run(run_id, "workspace/state"))

    @staticmethod
    def operations(**filters: Any) -> _Call:
        params = {k: v for k, v in filters.items() if v is not None}
        return _Call("GET", "/api/v1/operations", params=params)

    @staticmethod
    def create_token(name: str, role: str) -> _Call:
        return _Call("POST", "/api/v1/tokens", json_body={"name": name, "role": role})

    @staticmethod
    def revoke_token(token_id: str) -> _Call:
        return _Call("DELETE", f"/api/v1/tokens/{_path(token_id)}", read="none")

    @staticmethod
    def snapshots(workspace_id: str) -> _Call:
        return _Call("GET", f"/api/v1/workspaces/{_path(workspace_id)}/snapshots")

    @staticmethod
    def take_snapshot(workspace_id: str) -> _Call:
        return _Call("POST", f"/api/v1/workspaces/{_path(workspace_id)}/snapshots", timeout=660.0)

    @staticmethod
    def snapshot_archive(snapshot_id: str) -> _Call:
        return _Call("GET", f"/api/v1/snapshots/{_path(snapshot_id)}/archive", read="bytes", timeout=660.0)


def retry_after(response: httpx.Response, now: float | None = None) -> float:
    """The wait a 429/503 asks for: `Retry-After` in seconds or as an HTTP date (1 s without)."""
    value = response.headers.get("retry-after", "").strip()
    if not value:
        return 1.0
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value).timestamp()
    except (TypeError, ValueError):
        return 1.0
    return max(0.0, when - (time.time() if now is None else now))


def _answer(call: _Call, response: httpx.Response) -> Any:
    if response.status_code >= 400:
        try:
            body = response.json()
        except (json.JSONDecodeError, ValueError):
            body = None
        raise errors.error_for(response.status_code, body, call.method, call.path)
    if call.read == "bytes":
        return response.content
    if call.read == "none" or not response.content:
        return None
    return response.json()


def _request_kwargs(call: _Call, token: Token, timeout: float) -> dict[str, Any]:
    headers = {"Authorization": f"Bearer {token.reveal()}", "Accept-Encoding": "gzip", **call.headers}
    return {
        "method": call.method,
        "url": call.path,
        "params": call.params,
        "json": call.json_body,
        "content": call.content,
        "headers": headers,
        "timeout": timeout,
    }


class _Base:
    def __init__(self, base_url: str, token: str | Token, *, timeout: float, retries: int) -> None:
        self.base_url = base_url.rstrip("/")
        self._token = token if isinstance(token, Token) else Token(token)
        self.timeout = float(timeout)
        self.retries = int(retries)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.base_url!r})"

    def _deadline(self, call: _Call, timeout: float | None) -> float:
        return time.monotonic() + float(timeout if timeout is not None else (call.timeout or self.timeout))

    def _attempt(self, call: _Call, deadline: float, attempt: int, response: httpx.Response | None) -> float | None:
        """After an answer: the wait before trying again, or None to stop."""
        if response is None or response.status_code not in RETRIED_STATUSES or attempt >= self.retries:
            return None
        wait = min(retry_after(response), MAX_RETRY_WAIT)
        if time.monotonic() + wait >= deadline:
            return None
        return wait

    @staticmethod
    def _remaining(call: _Call, deadline: float) -> float:
        left = deadline - time.monotonic()
        if left <= 0:
            raise errors.DeadlineExceeded(f"{call.method} {call.path}: the deadline passed")
        return left

    @staticmethod
    def _transport_error(call: _Call, e: Exception) -> errors.TransportError:
        if isinstance(e, httpx.TimeoutException):
            return errors.DeadlineExceeded(f"{call.method} {call.path}: no answer before the deadline")
        return errors.TransportError(f"{call.method} {call.path}: {type(e).__name__}")


class Console(_Base):
    """The console's API, synchronously. `with Console(url, token) as c: ...` closes it."""

    def __init__(
        self,
        base_url: str,
        token: str | Token,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        retries: int = DEFAULT_RETRIES,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        super().__init__(base_url, token, timeout=timeout, retries=retries)
        self._http = httpx.Client(base_url=self.base_url, transport=transport)

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> "Console":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def call(self, call: _Call, *, timeout: float | None = None) -> Any:
        deadline = self._deadline(call, timeout)
        attempt = 0
        while True:
            left = self._remaining(call, deadline)
            try:
                response = self._http.request(**_request_kwargs(call, self._token, left))
            except httpx.HTTPError as e:
                raise self._transport_error(call, e) from None
            wait = self._attempt(call, deadline, attempt, response)
            if wait is None:
                return _answer(call, response)
            attempt += 1
            time.sleep(wait)

    # The operations, each one `_Calls` value sent.
    def me(self) -> dict[str, Any]:
        return self.call(_Calls.me())

    def create_run(self, agent_id: str, **kw: Any) -> dict[str, Any]:
        return self.call(_Calls.create_run(agent_id, **kw))

    def create_conversation(self, agent_id: str, title: str = "chat") -> dict[str, Any]:
        return self.call(_Calls.create_conversation(agent_id, title))

    def get_run(self, run_id: str) -> dict[str, Any]:
        return self.call(_Calls.get_run(run_id))

    def finish_run(self, run_id: str) -> dict[str, Any]:
        return self.call(_Calls.finish_run(run_id))

    def exec(self, run_id: str, command: str | None = None, **kw: Any) -> ExecResult:
        return ExecResult.from_json(self.call(_Calls.exec(run_id, command, **kw)))

    def read_file(self, run_id: str, path: str) -> bytes:
        return self.call(_Calls.read_file(run_id, path))

    def write_file(self, run_id: str, path: str, data: bytes) -> None:
        self.call(_Calls.write_file(run_id, path, data))

    def ls(self, run_id: str, path: str = "") -> list[Entry]:
        return [Entry.from_json(e) for e in self.call(_Calls.ls(run_id, path))]

    def stat(self, run_id: str, path: str) -> Entry:
        return Entry.from_json(self.call(_Calls.stat(run_id, path)))

    def mkdir(self, run_id: str, path: str) -> None:
        self.call(_Calls.mkdir(run_id, path))

    def remove(self, run_id: str, path: str) -> None:
        self.call(_Calls.remove(run_id, path))

    def workspace_state(self, run_id: str) -> dict[str, Any]:
        return self.call(_Calls.workspace_state(run_id))

    def operations(self, **filters: Any) -> dict[str, Any]:
        return self.call(_Calls.operations(**filters))

    def create_token(self, name: str, role: str) -> dict[str, Any]:
        return self.call(_Calls.create_token(name, role))

    def revoke_token(self, token_id: str) -> None:
        self.call(_Calls.revoke_token(token_id))

    def snapshots(self, workspace_id: str) -> list[dict[str, Any]]:
        return self.call(_Calls.snapshots(workspace_id))

    def take_snapshot(self, workspace_id: str) -> dict[str, Any]:
        return self.call(_Calls.take_snapshot(workspace_id))

    def snapshot_archive(self, snapshot_id: str) -> bytes:
        return self.call(_Calls.snapshot_archive(snapshot_id))


class AsyncConsole(_Base):
    """The console's API, asynchronously. One httpx client per event loop, made on first use
    (a pooled connection does not outlive the loop that opened it)."""

    def __init__(
        self,
        base_url: str,
        token: str | Token,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        retries: int = DEFAULT_RETRIES,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        super().__init__(base_url, token, timeout=timeout, retries=retries)
        self._transport = transport
        self._clients: "weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, httpx.AsyncClient]" = (
            weakref.WeakKeyDictionary()
        )

    def _http(self) -> httpx.AsyncClient:
        loop = asyncio.get_running_loop()
        client = self._clients.get(loop)
        if client is None:
            client = httpx.AsyncClient(base_url=self.base_url, transport=self._transport)
            self._clients[loop] = client
        return client

    async def aclose(self) -> None:
        client = self._clients.pop(asyncio.get_running_loop(), None)
        if client is not None:
            await client.aclose()

    async def __aenter__(self) -> "AsyncConsole":
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def call(self, call: _Call, *, timeout: float | None = None) -> Any:
        deadline = self._deadline(call, timeout)
        attempt = 0
        while True:
            left = self._remaining(call, deadline)
            try:
                response = await self._http().request(**_request_kwargs(call, self._token, left))
            except httpx.HTTPError as e:
                raise self._transport_error(call, e) from None
            wait = self._attempt(call, deadline, attempt, response)
            if wait is None:
                return _answer(call, response)
            attempt += 1
            await asyncio.sleep(wait)

    async def me(self) -> dict[str, Any]:
        return await self.call(_Calls.me())

    async def create_run(self, agent_id: str, **kw: Any) -> dict[str, Any]:
        return await self.call(_Calls.create_run(agent_id, **kw))

    async def create_conversation(self, agent_id: str, title: str = "chat") -> dict[str, Any]:
        return await self.call(_Calls.create_conversation(agent_id, title))

    async def get_run(self, run_id: str) -> dict[str, Any]:
        return await self.call(_Calls.get_run(run_id))

    async def finish_run(self, run_id: str) -> dict[str, Any]:
        return await self.call(_Calls.finish_run(run_id))

    async def exec(self, run_id: str, command: str | None = None, **kw: Any) -> ExecResult:
        return ExecResult.from_json(await self.call(_Calls.exec(run_id, command, **kw)))

    async def read_file(self, run_id: str, path: str) -> bytes:
        return await self.call(_Calls.read_file(run_id, path))

    async def write_file(self, run_id: str, path: str, data: bytes) -> None:
        await self.call(_Calls.write_file(run_id, path, data))

    async def ls(self, run_id: str, path: str = "") -> list[Entry]:
        return [Entry.from_json(e) for e in await self.call(_Calls.ls(run_id, path))]

    async def stat(self, run_id: str, path: str) -> Entry:
        return Entry.from_json(await self.call(_Calls.stat(run_id, path)))

    async def mkdir(self, run_id: str, path: str) -> None:
        await self.call(_Calls.mkdir(run_id, path))

    async def remove(self, run_id: str, path: str) -> None:
        await self.call(_Calls.remove(run_id, path))

    async def workspace_state(self, run_id: str) -> dict[str, Any]:
        return await self.call(_Calls.workspace_state(run_id))

    async def operations(self, **filters: Any) -> dict[str, Any]:
        return await self.call(_Calls.operations(**filters))

    async def snapshots(self, workspace_id: str) -> list[dict[str, Any]]:
        return await self.call(_Calls.snapshots(workspace_id))

    async def take_snapshot(self, workspace_id: str) -> dict[str, Any]:
        return await self.call(_Calls.take_snapshot(workspace_id))

    async def snapshot_archive(self, snapshot_id: str) -> bytes:
        return await self.call(_Calls.snapshot_archive(snapshot_id))
