"""OpenAI Agents SDK: a `BaseSandboxClient` whose sessions are console runs.

    client = AgenticosSandboxClient(url=URL, token=TOKEN)
    options = AgenticosSandboxClientOptions(agent_id=AGENT)
    result = await Runner.run(agent, "...", run_config=RunConfig(sandbox=SandboxRunConfig(
        client=client, options=options)))

- `create(manifest=, snapshot=, options=)` opens a run of the console agent `options.agent_id`
  (`conversation_id` where its scope wants one). The SDK `Manifest`'s `File`, `Dir` and `GitRepo`
  entries become the run's console manifest (written at its first operation, each a row of the
  log); mounts are refused with `MountConfigError`, other entry kinds, users, groups and host
  path grants with `ConfigurationError`, before anything is opened.
- The session's `exec`, `read` and `write` are the run's command and file routes; `persist_workspace`
  and `hydrate_workspace` move the workspace as a tar archive through the command route, so the
  SDK's own snapshots (`snapshot=`, taken at close) save and restore it.
- `serialize_session_state` / `deserialize_session_state` / `resume(state)` reattach another
  process to the same run (the state holds the run id, never the token); a state whose run is
  finished or gone raises `WorkspaceRootNotFoundError`.
- `delete(session)` finishes the run: a `run`-scoped workspace is purged on its host then.
- No PTY (`supports_pty` is false: the SDK's shell tool runs one-shot commands), no exposed ports.
"""

from __future__ import annotations

import base64
import io
import math
import posixpath
import uuid
from pathlib import Path, PurePosixPath
from typing import Any, Literal

from agents.sandbox.entries import BaseEntry, Dir, File, GitRepo
from agents.sandbox.errors import (
    ConfigurationError,
    ErrorCode,
    ExecTimeoutError,
    ExecTransportError,
    MountConfigError,
    WorkspaceReadNotFoundError,
    WorkspaceRootNotFoundError,
)
from agents.sandbox.manifest import Manifest
from agents.sandbox.session.base_sandbox_session import BaseSandboxSession
from agents.sandbox.session.sandbox_client import BaseSandboxClient, BaseSandboxClientOptions
from agents.sandbox.session.sandbox_session import SandboxSession
from agents.sandbox.session.sandbox_session_state import SandboxSessionState
from agents.sandbox.snapshot import SnapshotBase, SnapshotSpec, resolve_snapshot
from agents.sandbox.types import ExecResult, User

from . import errors, transfer
from .client import AsyncConsole, Token

BACKEND_ID = "agenticos"
WORKSPACE_ROOT = "/workspace"


class AgenticosSandboxClientOptions(BaseSandboxClientOptions):
    """Which console agent a new session is a run of."""

    type: Literal["agenticos"] = "agenticos"
    agent_id: str
    conversation_id: str | None = None
    started_by: str = "api"
    snapshot_id: str | None = None
    """A console snapshot of the agent's workspaces the run starts from."""
    session_state: str | None = None
    """A finished console run's `session_state`: the run continues in that workspace."""
    exact_output: bool = False
    """Commands' output as its exact bytes (`output_encoding: base64`, encoded in the sandbox by
    two more processes a command); otherwise UTF-8 text, bytes that are not UTF-8 replaced."""


class AgenticosSandboxSessionState(SandboxSessionState):
    """What reattaches a process to the session: the console run (no token)."""

    type: Literal["agenticos"] = "agenticos"
    run_id: str
    agent_id: str
    exact_output: bool = False


def _refuse(message: str, **context: object) -> ConfigurationError:
    return ConfigurationError(
        message=message,
        error_code=ErrorCode.SANDBOX_CONFIG_INVALID,
        op="materialize",
        context={"backend": BACKEND_ID, **context},
    )


def console_manifest(manifest: Manifest) -> dict[str, Any]:
    """The console manifest for the SDK manifest's entries (see the module's text)."""
    if manifest.users or manifest.groups:
        raise _refuse("the console's sandboxes run as one user: manifest users and groups are not supported")
    if manifest.extra_path_grants:
        raise _refuse("the console confines files to the workspace: extra path grants are not supported")
    if manifest.root != WORKSPACE_ROOT:
        raise _refuse(f"the console's workspace root is {WORKSPACE_ROOT}", root=manifest.root)
    out: list[dict[str, Any]] = []

    def walk(entries: dict[Any, BaseEntry], base: PurePosixPath) -> None:
        for key, entry in entries.items():
            path = (base / PurePosixPath(str(key))).as_posix()
            if isinstance(entry, File):
                out.append({"kind": "file", "path": path, "content_base64": base64.b64encode(entry.content).decode()})
            elif isinstance(entry, Dir):
                out.append({"kind": "dir", "path": path})
                walk(entry.children, PurePosixPath(path))
            elif isinstance(entry, GitRepo):
                if entry.subpath:
                    raise _refuse("a git_repo subpath is not supported", path=path)
                out.append({"kind": "git_repo", "url": f"https://{entry.host}/{entry.repo}.git", "ref": entry.ref, "path": path})
            elif "mount" in type(entry).__name__.lower() or "mount" in str(getattr(entry, "type", "")):
                raise MountConfigError(
                    message=f"the console offers no mounts ({type(entry).__name__} at {path})",
                    context={"backend": BACKEND_ID, "path": path},
                )
            else:
                raise _refuse(f"{type(entry).__name__} entries are not supported", path=path)

    walk(dict(manifest.entries), PurePosixPath(""))
    return {"entries": out}


def _workspace_path(path: Path | str) -> str:
    text = str(path)
    return posixpath.normpath(text if text.startswith("/") else posixpath.join(WORKSPACE_ROOT, text))


class AgenticosSandboxSession(BaseSandboxSession):
    """One console run's workspace as an SDK sandbox session."""

    state: AgenticosSandboxSessionState

    def __init__(self, *, state: AgenticosSandboxSessionState, console: AsyncConsole) -> None:
        self.state = state
        self._console = console

    def supports_pty(self) -> bool:
        return False

    async def _ensure_backend_started(self) -> None:
        try:
            run = await self._console.get_run(self.state.run_id)
        except errors.NotFound as e:
            raise WorkspaceRootNotFoundError(path=Path(WORKSPACE_ROOT), context={"run_id": self.state.run_id}, cause=e) from None
        if run.get("status") == "finished":
            raise WorkspaceRootNotFoundError(path=Path(WORKSPACE_ROOT), context={"run_id": self.state.run_id, "finished": True})

    async def _exec_internal(self, *command: str | Path, timeout: float | None = None) -> ExecResult:
        seconds = None if timeout is None else max(1, min(3600, math.ceil(timeout)))
        encoding = "base64" if self.state.exact_output else None
        try:
            result = await self._console.exec(
                self.state.run_id, argv=[str(c) for c in command], timeout_seconds=seconds, output_encoding=encoding
            )
        except (errors.NotFound, errors.Gone) as e:
            raise WorkspaceRootNotFoundError(path=Path(WORKSPACE_ROOT), cause=e) from None
        except errors.ConsoleError as e:
            raise ExecTransportError(command=command, cause=e, message=str(e), retryable=False) from None
        if result.timed_out:
            raise ExecTimeoutError(command=command, timeout_s=timeout)
        exit_code = result.exit_code if result.exit_code is not None else 1
        if self.state.exact_output:
            stdout, stderr = base64.b64decode(result.stdout_base64 or ""), base64.b64decode(result.stderr_base64 or "")
        else:
            stdout, stderr = result.stdout.encode("utf-8"), result.stderr.encode("utf-8")
        return ExecResult(stdout=stdout, stderr=stderr, exit_code=exit_code)

    async def read(self, path: Path, *, user: str | User | None = None) -> io.IOBase:
        target = _workspace_path(path)
        content, error = await transfer.run_async(self._console, transfer.download(self.state.run_id, target))
        if error == transfer.FILE_NOT_FOUND:
            raise WorkspaceReadNotFoundError(path=Path(target))
        if error is not None:
            raise OSError(f"{target}: {error}")
        return io.BytesIO(content)

    async def write(self, path: Path, data: io.IOBase, *, user: str | User | None = None) -> None:
        payload = data.read()
        if isinstance(payload, str):
            payload = payload.encode("utf-8")
        target = _workspace_path(path)
        error = await transfer.run_async(self._console, transfer.upload(self.state.run_id, target, bytes(payload)))
        if error is not None:
            raise OSError(f"{target}: {error}")

    async def running(self) -> bool:
        try:
            state = await self._console.workspace_state(self.state.run_id)
        except errors.ApiError:
            return False
        return state.get("state") in ("open", "preparing", "not_opened")

    async def persist_workspace(self) -> io.IOBase:
        name = f"/tmp/agenticos-persist-{uuid.uuid4().hex}.tar"
        made = await self._exec_internal("/bin/sh", "-c", f'tar -C {WORKSPACE_ROOT} -cf "$1" . && echo ok', "persist", name)
        if made.exit_code != 0:
            raise OSError(f"persisting the workspace failed: {made.stderr.decode(errors='replace')[:200]}")
        try:
            content, error = await transfer.run_async(self._console, transfer.download(self.state.run_id, name))
        finally:
            await self._exec_internal("rm", "-f", name)
        if error is not None:
            raise OSError(f"persisting the workspace failed: {error}")
        return io.BytesIO(content)

    async def hydrate_workspace(self, data: io.IOBase) -> None:
        name = f"/tmp/agenticos-hydrate-{uuid.uuid4().hex}.tar"
        error = await transfer.run_async(self._console, transfer.upload(self.state.run_id, name, data.read()))
        if error is not None:
            raise OSError(f"hydrating the workspace failed: {error}")
        done = await self._exec_internal("/bin/sh", "-c", f'tar -C {WORKSPACE_ROOT} -xf "$1"; s=$?; rm -f "$1"; exit $s', "hydrate", name)
        if done.exit_code != 0:
            raise OSError(f"hydrating the workspace failed: {done.stderr.decode(errors='replace')[:200]}")


class AgenticosSandboxClient(BaseSandboxClient[AgenticosSandboxClientOptions]):
    """Sessions as runs of console agents (see the module's text)."""

    backend_id = BACKEND_ID

    def __init__(self, *, url: str, token: str | Token, timeout: float = 60.0) -> None:
        super().__init__()
        self._console = AsyncConsole(url, token if isinstance(token, Token) else Token(token), timeout=timeout)

    def __repr__(self) -> str:
        return f"AgenticosSandboxClient({self._console.base_url!r})"

    async def create(
        self,
        *,
        snapshot: SnapshotSpec | SnapshotBase | None = None,
        manifest: Manifest | None = None,
        options: AgenticosSandboxClientOptions,
    ) -> SandboxSession:
        manifest = manifest if manifest is not None else Manifest()
        self._validate_manifest_for_create(manifest)
        ours = console_manifest(manifest)
        run = await self._console.create_run(
            options.agent_id,
            conversation_id=options.conversation_id,
            started_by=options.started_by,
            manifest=ours if ours["entries"] else None,
            snapshot_id=options.snapshot_id,
            session_state=options.session_state,
        )
        session_id = uuid.uuid4()
        state = AgenticosSandboxSessionState(
            session_id=session_id,
            manifest=manifest.model_copy(update={"entries": {}}, deep=True),
            snapshot=resolve_snapshot(snapshot, str(session_id)),
            run_id=run["id"],
            agent_id=options.agent_id,
            exact_output=options.exact_output,
        )
        return self._wrap_session(AgenticosSandboxSession(state=state, console=self._console))

    async def delete(self, session: SandboxSession) -> SandboxSession:
        inner = session._inner
        if not isinstance(inner, AgenticosSandboxSession):
            raise TypeError("AgenticosSandboxClient.delete expects an AgenticosSandboxSession")
        await self._console.finish_run(inner.state.run_id)
        return session

    async def resume(self, state: SandboxSessionState) -> SandboxSession:
        if not isinstance(state, AgenticosSandboxSessionState):
            raise TypeError("AgenticosSandboxClient.resume expects an AgenticosSandboxSessionState")
        inner = AgenticosSandboxSession(state=state, console=self._console)
        await inner._ensure_backend_started()
        inner._set_start_state_preserved(True)
        return self._wrap_session(inner)

    def deserialize_session_state(self, payload: dict[str, object]) -> SandboxSessionState:
        return self._deserialize_session_state_payload(payload, AgenticosSandboxSessionState)
