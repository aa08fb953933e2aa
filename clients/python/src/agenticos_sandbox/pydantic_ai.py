"""Pydantic AI: `AgenticosWorkspace`, a capability that supplies a console run's workspace as
the agent run's `ctx.workspace` (alongside `pydantic_ai_backends`' `SandboxdWorkspace` in shape),
for `ConsoleCapability`'s tools or any other that uses the workspace.

    agent = Agent(model, capabilities=[AgenticosWorkspace(url=URL, token=TOKEN, agent_id=AGENT),
                                       ConsoleCapability()])

- A run without a ref opens a console run of the agent on its first operation
  (`POST /api/v1/runs`); that run's id is the `WorkspaceRef` (`provider="agenticos"`).
- A later agent run with the ref continues in the same console run, so it sees the same files;
  a ref whose run is finished, unknown or another organization's raises
  `WorkspaceUnavailableError`.
- `destroy(ref)` finishes the console run (a `run`-scoped workspace is purged then; the other
  scopes keep their files for their next run, as the console's scopes say).
- Commands go through the run's command route, files through its file routes: every
  operation is a row of the console's operation log. Paths are the sandbox's: `/workspace/...`
  (or relative to it); the console refuses anything outside the workspace (`ValueError`).
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import anyio
from pydantic_ai import RunContext
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.workspaces import (
    CommandResult,
    FileEntry,
    SupportsCommands,
    SupportsFilesystem,
    WorkspaceBackend,
    WorkspaceCommand,
    WorkspaceOutputLimitError,
    WorkspaceRef,
    WorkspaceTimeoutError,
    WorkspaceUnavailableError,
)

from . import errors
from .client import AsyncConsole, Entry, Token
from .transfer import WORKSPACE_ROOT

AGENTICOS_PROVIDER = "agenticos"
"""`WorkspaceRef.provider` of a console run's workspace."""


def _absolute(path: str) -> str:
    return posixpath.normpath(posixpath.join(WORKSPACE_ROOT, path))


def _entry(e: Entry) -> FileEntry:
    path = WORKSPACE_ROOT if not e.path else _absolute(e.path)
    return FileEntry(name=e.name or posixpath.basename(path), path=path, is_dir=e.is_dir, size=e.size)


def _builtin(e: errors.ApiError, path: str) -> Exception:
    """The builtin error for a file operation's problem, or a workspace error for the run's."""
    detail = e.detail
    if isinstance(e, errors.Gone) or (isinstance(e, errors.Conflict) and "finished" in detail.lower()):
        return WorkspaceUnavailableError(f"console run: {detail}")
    if isinstance(e, errors.NotFound):
        if "no such file" in detail.lower():
            return FileNotFoundError(f"{path}: {detail}")
        return WorkspaceUnavailableError(f"console run: {detail}")
    if isinstance(e, errors.BadRequest):
        if "folder" in detail.lower():
            return IsADirectoryError(f"{path}: {detail}")
        if "not a directory" in detail.lower() or "not a folder" in detail.lower():
            return NotADirectoryError(f"{path}: {detail}")
        return ValueError(f"{path}: {detail}")
    if isinstance(e, errors.Conflict) and "already" in detail.lower():
        return FileExistsError(f"{path}: {detail}")
    if isinstance(e, errors.Forbidden) and "role" not in detail.lower():
        return PermissionError(f"{path}: {detail}")
    return e


class AgenticosWorkspaceBackend(WorkspaceBackend, SupportsCommands, SupportsFilesystem):
    """One console run's workspace; no I/O until its first operation."""

    def __init__(
        self,
        console: AsyncConsole,
        *,
        agent_id: str,
        ref: WorkspaceRef | None = None,
        run: Mapping[str, Any] | None = None,
        env: Mapping[str, str] | None = None,
    ) -> None:
        if ref is not None and ref.provider != AGENTICOS_PROVIDER:
            raise ValueError(f"expected an {AGENTICOS_PROVIDER!r} workspace ref, got {ref.provider!r}")
        self._console = console
        self._agent_id = agent_id
        self._ref = ref
        self._run = dict(run or {})
        self._env = dict(env or {})
        self._lock = anyio.Lock()

    @property
    def ref(self) -> WorkspaceRef | None:
        return self._ref

    async def _run_id(self) -> str:
        if self._ref is not None:
            # Every operation after the first: no lock (an anyio lock yields to the event loop
            # twice, a tenth of the provider's own time on a call).
            return self._ref.id
        async with self._lock:
            if self._ref is None:
                with anyio.CancelScope(shield=True):
                    created = await self._console.create_run(self._agent_id, **self._run)
                    self._ref = WorkspaceRef(provider=AGENTICOS_PROVIDER, id=created["id"])
            return self._ref.id

    async def _call(self, path: str, op: str, *args: Any, **kw: Any) -> Any:
        run_id = await self._run_id()
        try:
            return await getattr(self._console, op)(run_id, *args, **kw)
        except errors.ApiError as e:
            raise _builtin(e, path) from None

    async def working_dir(self) -> str:
        return WORKSPACE_ROOT

    async def run(
        self,
        command: WorkspaceCommand,
        *,
        shell: bool = False,
        env: Mapping[str, str] | None = None,
        timeout: float | None = None,
    ) -> CommandResult:
        if timeout is not None and timeout <= 0:
            raise ValueError("timeout must be a positive finite number or None")
        if shell:
            if not isinstance(command, str):
                raise TypeError("shell=True takes a command line (a str)")
            kw: dict[str, Any] = {"command": command}
        else:
            if isinstance(command, str):
                raise TypeError("a str command needs shell=True; pass argv as a sequence")
            kw = {"argv": list(command)}
        merged = {**self._env, **(env or {})}
        seconds = None if timeout is None else max(1, min(3600, int(-(-timeout // 1))))
        result = await self._call("", "exec", **kw, env=merged or None, timeout_seconds=seconds)
        if result.timed_out:
            raise WorkspaceTimeoutError(
                f"the command passed its timeout of {seconds} s", stdout=result.stdout, stderr=result.stderr
            )
        if result.output_limited:
            raise WorkspaceOutputLimitError(
                "the command's output passed the host's limit",
                limit=10 * 1024 * 1024,
                stdout=result.stdout,
                stderr=result.stderr,
            )
        return CommandResult(exit_code=int(result.exit_code or 0), stdout=result.stdout, stderr=result.stderr)

    async def read_bytes(self, path: str) -> bytes:
        return await self._call(path, "read_file", _absolute(path))

    async def write_bytes(self, path: str, data: bytes) -> None:
        await self._call(path, "write_file", _absolute(path), data)

    async def stat(self, path: str) -> FileEntry:
        return _entry(await self._call(path, "stat", _absolute(path)))

    async def list_dir(self, path: str) -> Sequence[FileEntry]:
        return [_entry(e) for e in await self._call(path, "ls", _absolute(path))]

    async def make_dir(self, path: str) -> None:
        if _absolute(path) != WORKSPACE_ROOT:
            await self._call(path, "mkdir", _absolute(path))

    async def remove(self, path: str) -> None:
        await self._call(path, "remove", _absolute(path))

    async def exists(self, path: str) -> bool:
        try:
            await self.stat(path)
        except (FileNotFoundError, NotADirectoryError):
            return False
        return True


@dataclass(kw_only=True)
class AgenticosWorkspace(AbstractCapability[object]):
    """Supply a console run's workspace as the agent run's workspace (see the module's text)."""

    url: str
    """The console's base URL."""

    token: str = field(repr=False)
    """An API token of the organization (operator role or above to run commands)."""

    agent_id: str
    """The console agent whose runs these are (its backend, host, scope and manifest apply)."""

    run: Mapping[str, Any] | None = None
    """More fields for `POST /api/v1/runs`: `conversation_id`, `manifest`, `snapshot_id`,
    `session_state`, `started_by` (default `api`)."""

    env: Mapping[str, str] | None = field(default=None, repr=False)
    """Variables every command gets, under any a call passes."""

    timeout: float = 60.0
    """Seconds each API call may take (a command: its own timeout and then some)."""

    _console: AsyncConsole | None = field(default=None, init=False, repr=False, compare=False)

    def console(self) -> AsyncConsole:
        if self._console is None:
            self._console = AsyncConsole(self.url, Token(self.token), timeout=self.timeout)
        return self._console

    def backend(self, ref: WorkspaceRef | None = None) -> AgenticosWorkspaceBackend:
        return AgenticosWorkspaceBackend(self.console(), agent_id=self.agent_id, ref=ref, run=self.run, env=self.env)

    def get_workspace(self, ctx: RunContext[object], *, ref: WorkspaceRef | None) -> WorkspaceBackend | None:
        del ctx
        if ref is not None and ref.provider != AGENTICOS_PROVIDER:
            return None
        return self.backend(ref)

    async def destroy(self, ref: WorkspaceRef) -> None:
        """Finish the console run `ref` names (already finished is fine)."""
        if ref.provider != AGENTICOS_PROVIDER:
            raise ValueError(f"expected an {AGENTICOS_PROVIDER!r} workspace ref, got {ref.provider!r}")
        await self.console().finish_run(ref.id)
