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
- The session's `exec`, `read` and `write` are the run's command and file routes.
- Snapshots are the console's: `persist_workspace` (the SDK calls it at close when `snapshot=` is
  given) takes a console snapshot of the run's workspace (`POST /api/v1/workspaces/{id}/snapshots`:
  listed on the workspace's page, restorable there) and hands the SDK's snapshot store only a
  reference to it, as the SDK's E2B and Modal providers do with their native snapshots. `create`
  with a snapshot holding such a reference opens the run from it (`snapshot_id` at
  `POST /api/v1/runs`: the console writes its files at the run's first operation); a resumed
  session restores one by its archive (`GET /api/v1/snapshots/{id}/archive`). A snapshot of
  another provider (a tar archive) is still restored, through the command route.
- `serialize_session_state` / `deserialize_session_state` / `resume(state)` reattach another
  process to the same run (the state holds the run id, never the token); a state whose run is
  finished or gone raises `WorkspaceRootNotFoundError`.
- `delete(session)` finishes the run: a `run`-scoped workspace is purged on its host then.
- No PTY (`supports_pty` is false: the SDK's shell tool runs one-shot commands), no exposed ports.
"""

from __future__ import annotations

import base64
import io
import json
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
CONSOLE_SNAPSHOT_MAGIC = b"AGENTICOS_CONSOLE_SNAPSHOT_V1\n"
"""What a reference to a console snapshot starts with, in the SDK's snapshot store (like the SDK's
E2B and Modal providers' native snapshot references)."""


def console_snapshot_ref(snapshot_id: str) -> bytes:
    """The bytes the SDK's snapshot store keeps for a console snapshot: a reference, not files."""
    return CONSOLE_SNAPSHOT_MAGIC + json.dumps({"snapshot_id": snapshot_id}, separators=(",", ":")).encode()


def console_snapshot_id(raw: bytes) -> str | None:
    """The console snapshot a stored payload names, or None for anything else (a tar archive)."""
    if not raw.startswith(CONSOLE_SNAPSHOT_MAGIC):
        return None
    try:
        body = json.loads(raw[len(CONSOLE_SNAPSHOT_MAGIC) :])
    except ValueError:
        return None
    value = body.get("snapshot_id") if isinstance(body, dict) else None
    return value if isinstance(value, str) and value else None


class AgenticosSandboxClientOptions(BaseSandboxClientOptions):
    """Which console agent a new session is a run of."""

    type: Literal["agenticos"] = "agenticos"
    agent_id: str
    conversation_id: str | None = None
    started_by: str = "api"
    user_id: str | None = None
    """Whom the run acts for (a person of the organization; what a `user`-scoped agent's
    workspace is chosen by). The scope itself is the console agent's: a run cannot choose it."""
    snapshot_id: str | None = None
    """A console snapshot of the agent's workspaces the run starts from (as `snapshot=` holding a
    reference to it does)."""
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
    opened_from_snapshot_id: str | None = None
    """The console snapshot the run was opened from, until the session's first start."""


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
        """A console snapshot of the run's workspace, as a reference for the SDK's store."""
        try:
            workspace = await self._console.workspace_state(self.state.run_id)
            taken = await self._console.take_snapshot(workspace["workspace_id"])
        except errors.ConsoleError as e:
            raise OSError(f"the console could not snapshot the workspace: {e}") from None
        return io.BytesIO(console_snapshot_ref(taken["id"]))

    async def _restore_snapshot_into_workspace_on_resume(self) -> None:
        if self.state.opened_from_snapshot_id is not None:
            # The run was opened from this console snapshot (`snapshot_id` at POST /api/v1/runs):
            # the console writes its files at the run's first operation, so there is nothing to
            # clear or to write again.
            self.state.opened_from_snapshot_id = None
            return
        await super()._restore_snapshot_into_workspace_on_resume()

    async def hydrate_workspace(self, data: io.IOBase) -> None:
        raw = data.read()
        if isinstance(raw, str):
            raw = raw.encode("utf-8")
        snapshot_id = console_snapshot_id(bytes(raw))
        if snapshot_id is not None:
            try:
                raw = await self._console.snapshot_archive(snapshot_id)
            except errors.ConsoleError as e:
                raise OSError(f"the console snapshot {snapshot_id} could not be read: {e}") from None
        name = f"/tmp/agenticos-hydrate-{uuid.uuid4().hex}.tar"
        error = await transfer.run_async(self._console, transfer.upload(self.state.run_id, name, bytes(raw)))
        if error is not None:
            raise OSError(f"hydrating the workspace failed: {error}")
        # `tar -xf` reads a gzip archive (a console snapshot's) as well as a plain one.
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
        session_id = uuid.uuid4()
        resolved = resolve_snapshot(snapshot, str(session_id))
        from_snapshot = await self._console_snapshot_of(resolved)
        if from_snapshot is not None and options.snapshot_id not in (None, from_snapshot):
            raise _refuse("snapshot= names another console snapshot than options.snapshot_id", snapshot_id=options.snapshot_id)
        run = await self._console.create_run(
            options.agent_id,
            conversation_id=options.conversation_id,
            started_by=options.started_by,
            user_id=options.user_id,
            manifest=ours if ours["entries"] else None,
            snapshot_id=from_snapshot or options.snapshot_id,
            session_state=options.session_state,
        )
        state = AgenticosSandboxSessionState(
            session_id=session_id,
            manifest=manifest.model_copy(update={"entries": {}}, deep=True),
            snapshot=resolved,
            run_id=run["id"],
            agent_id=options.agent_id,
            exact_output=options.exact_output,
            opened_from_snapshot_id=from_snapshot,
        )
        return self._wrap_session(AgenticosSandboxSession(state=state, console=self._console))

    async def _console_snapshot_of(self, snapshot: SnapshotBase) -> str | None:
        """The console snapshot a restorable SDK snapshot refers to, if it holds a reference."""
        dependencies = self._resolve_dependencies()
        if not await snapshot.restorable(dependencies=dependencies):
            return None
        stream = await snapshot.restore(dependencies=dependencies)
        try:
            head = stream.read(len(CONSOLE_SNAPSHOT_MAGIC) + 4096)
        finally:
            stream.close()
        return console_snapshot_id(head if isinstance(head, bytes) else bytes(head, "utf-8"))

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
