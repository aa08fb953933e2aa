"""LangChain Deep Agents: a `BaseSandbox` whose sandbox is a run's workspace in the console.

    from agenticos_sandbox.deepagents import AgenticosSandboxClient
    client = AgenticosSandboxClient(url, token, agent_id=AGENT)
    backend = client.create()          # opens a run of the agent
    backend.execute("echo hi")         # POST /api/v1/runs/{id}/workspace/exec
    client.delete(backend.id)          # finishes the run

`execute` runs the command through the run's command route; `upload_files` and
`download_files` move bytes as `agenticos_sandbox.transfer` says (the file routes under
`/workspace`, the command route elsewhere); everything else (`read`, `write`, `edit`, `ls`,
`grep`, `glob`) is `BaseSandbox`'s own, built on those three. Each has a native async twin.
Every call is one or more operations of the run, recorded in the console's operation log.
"""

from __future__ import annotations

from typing import Any, Mapping

from deepagents.backends.protocol import (
    ExecuteResponse,
    FileDownloadResponse,
    FileUploadResponse,
)
from deepagents.backends.sandbox import BaseSandbox

from . import transfer
from .client import AsyncConsole, Console, ExecResult, Token

MAX_TIMEOUT_SECONDS = 3600


def _exec_timeout(timeout: int | None) -> int | None:
    if timeout is None or timeout <= 0:
        return None
    return min(int(timeout), MAX_TIMEOUT_SECONDS)


def _response(result: ExecResult, timeout: int | None) -> ExecuteResponse:
    output = result.stdout + result.stderr
    if result.timed_out:
        output += f"\n[timed out after {timeout or 120} seconds]"
    return ExecuteResponse(output=output, exit_code=result.exit_code, truncated=result.output_limited)


class AgenticosSandbox(BaseSandbox):
    """A run's workspace as a Deep Agents sandbox backend.

    `write`, `glob` and the other file methods are `BaseSandbox`'s, so they keep deepagents'
    protocol exactly (0.7.32: `write` creates or overwrites; `glob` answers regular files only,
    with absolute paths, which `FilesystemMiddleware`'s `deny` rules match); see docs/agents.md
    for where the conformance suite langchain-tests 1.1.9 still states the older protocol.
    """

    def __init__(
        self,
        console: Console,
        run_id: str,
        *,
        aconsole: AsyncConsole | None = None,
    ) -> None:
        self._console = console
        self._aconsole = aconsole or AsyncConsole(
            console.base_url, console._token, timeout=console.timeout, retries=console.retries
        )
        self._run_id = run_id

    def __repr__(self) -> str:
        return f"AgenticosSandbox(run_id={self._run_id!r}, console={self._console.base_url!r})"

    @property
    def id(self) -> str:
        return self._run_id

    def execute(self, command: str, *, timeout: int | None = None) -> ExecuteResponse:
        t = _exec_timeout(timeout)
        return _response(self._console.exec(self._run_id, command, timeout_seconds=t), t)

    async def aexecute(self, command: str, *, timeout: int | None = None) -> ExecuteResponse:  # noqa: ASYNC109
        t = _exec_timeout(timeout)
        return _response(await self._aconsole.exec(self._run_id, command, timeout_seconds=t), t)

    def upload_files(self, files: list[tuple[str, bytes]]) -> list[FileUploadResponse]:
        return [
            FileUploadResponse(path=p, error=transfer.run_sync(self._console, transfer.upload(self._run_id, p, d)))
            for p, d in files
        ]

    async def aupload_files(self, files: list[tuple[str, bytes]]) -> list[FileUploadResponse]:
        out = []
        for p, d in files:
            error = await transfer.run_async(self._aconsole, transfer.upload(self._run_id, p, d))
            out.append(FileUploadResponse(path=p, error=error))
        return out

    def download_files(self, paths: list[str]) -> list[FileDownloadResponse]:
        out = []
        for p in paths:
            content, error = transfer.run_sync(self._console, transfer.download(self._run_id, p))
            out.append(FileDownloadResponse(path=p, content=content, error=error))
        return out

    async def adownload_files(self, paths: list[str]) -> list[FileDownloadResponse]:
        out = []
        for p in paths:
            content, error = await transfer.run_async(self._aconsole, transfer.download(self._run_id, p))
            out.append(FileDownloadResponse(path=p, content=content, error=error))
        return out


class AgenticosSandboxClient:
    """Opens, reattaches and finishes runs of one agent, each as an `AgenticosSandbox`.

    `create` opens a run (`POST /api/v1/runs`; `conversation_id`, `manifest`, `snapshot_id` or
    `session_state` as the API takes them), `get` returns the sandbox of an existing run (404
    for another organization's or an unknown run, 409 for a finished one is raised by its first
    operation), `delete` finishes the run (`POST /api/v1/runs/{id}/finish`) and returns the
    finished run with its `session_state`.
    """

    def __init__(
        self,
        base_url: str,
        token: str | Token,
        *,
        agent_id: str,
        timeout: float = 60.0,
    ) -> None:
        self.agent_id = agent_id
        self.console = Console(base_url, token, timeout=timeout)
        self.aconsole = AsyncConsole(base_url, self.console._token, timeout=timeout)

    def __repr__(self) -> str:
        return f"AgenticosSandboxClient(agent_id={self.agent_id!r}, console={self.console.base_url!r})"

    def _sandbox(self, run_id: str) -> AgenticosSandbox:
        return AgenticosSandbox(self.console, run_id, aconsole=self.aconsole)

    def create(self, **run: Any) -> AgenticosSandbox:
        return self._sandbox(self.console.create_run(self.agent_id, **run)["id"])

    async def acreate(self, **run: Any) -> AgenticosSandbox:
        return self._sandbox((await self.aconsole.create_run(self.agent_id, **run))["id"])

    def get(self, run_id: str) -> AgenticosSandbox:
        return self._sandbox(self.console.get_run(run_id)["id"])

    async def aget(self, run_id: str) -> AgenticosSandbox:
        return self._sandbox((await self.aconsole.get_run(run_id))["id"])

    def delete(self, run_id: str) -> Mapping[str, Any]:
        return self.console.finish_run(run_id)

    async def adelete(self, run_id: str) -> Mapping[str, Any]:
        return await self.aconsole.finish_run(run_id)

    def close(self) -> None:
        self.console.close()
