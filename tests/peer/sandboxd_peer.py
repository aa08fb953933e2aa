"""Run the real sandboxd service (pydantic-ai-backend, see requirements.txt) without Docker.

This is glue only: the HTTP routes, auth, session bookkeeping, limits, native
file operations and workspace archive reads are all the library's own
`create_app`. What this file supplies is the one thing the service delegates,
the sandbox builder (`create_app(config, sandbox_builder=...)`), with sandboxes
that run each command as a local subprocess in the session's workspace.

Configuration is the library's own: every `SANDBOXD_*` variable is parsed by
`pydantic_ai_backends.remote.env.config_from_env`, and the bind address by
`bind_from_env` (`SANDBOXD_HOST`, `SANDBOXD_PORT`). These variables are this
peer's own:

- `PEER_MOUNT_NS` = `auto` (default) | `on` | `off`. With a mount namespace each
  command runs with the session's host workspace bind-mounted at the service's
  `work_dir` (default `/workspace`), so commands, `pwd -P`, the native file
  routes and `realpath` all agree on `/workspace/...` paths, as with Docker.
  Needs `unshare --mount` to work (root, or user namespaces) and `work_dir` to
  exist or be creatable. Without it commands run with their cwd set to the host
  directory, and only relative paths mean the same thing to both sides.
- `PEER_LOG_LEVEL` = uvicorn log level, default `info`.
- `PEER_DROP_ROUTES` = comma-separated route paths, written as the service's
  index lists them (`/workspaces/trees,/sessions/{session_id}/files/read`).
  Every route with one of these paths (all its methods) is removed from the app
  before it serves, so the service answers them with FastAPI's own
  `404 {"detail":"Not Found"}` and leaves them out of `GET /` `endpoints` and
  `/openapi.json`: what an older sandboxd without those routes looks like. A
  path the app does not have stops the peer (exit 2), so a typo cannot leave a
  test talking to a complete service.
- `PEER_BUILD_DELAY_SECONDS` = N (seconds, default 0). Starting a sandbox of a
  runtime the service reports it builds (`builds: true` in `/policy`, e.g.
  `SANDBOXD_RUNTIMES=slow=@coding`) takes N seconds first, every time, on the
  service's worker thread as a Docker image build would: the `POST /sessions`
  that opens such a session answers after N seconds. Other runtimes start at
  once.
- `PEER_BUILD_FAIL` = comma-separated runtime aliases whose build fails (after
  the delay): `POST /sessions` on them answers the service's own
  `502 Could not start sandbox: …`.

NOT A SECURITY BOUNDARY: commands run as the user that started the peer, with
the host's PATH and network. Bind it to localhost and use it for tests only.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

from importlib import metadata

from pydantic_ai_backends.protocol import SandboxUnavailableError
from pydantic_ai_backends.remote.env import SandboxdConfigError, bind_from_env, config_from_env
from pydantic_ai_backends.remote.server import SandboxdConfig, SandboxRuntime, create_app
from pydantic_ai_backends.types import CommandOutcome, SandboxUsage


PARTIAL_STREAM_BYTES = 64 * 1024
"""Bytes of each stream a stopped (timed-out / over-limit) command reports, as DockerSandbox does."""

FALLBACK_OUTPUT_LIMIT = 10 * 1024 * 1024
"""Only used if the caller passes no limit; the service always passes its own."""

STREAM_GRACE_SECONDS = 2.0
"""After the command exits, how long to keep reading pipes a background child may hold."""

KILL_GRACE_SECONDS = 2.0
"""Between SIGTERM and SIGKILL of a command's process group."""

# Runs the command in a private mount namespace with the session workspace bound
# at the work dir. Written for this peer; `$0` names the shell in error messages.
_MOUNT_SCRIPT = 'mount --bind -- "$1" "$2" && cd -- "$2" && shift 2 && exec "$@"'
_PLAIN_SCRIPT = 'exec "$@"'


def _signal_exit(returncode: int) -> int:
    """A negative asyncio return code (killed by signal N) as a shell reports it: 128 + N."""
    return 128 - returncode if returncode < 0 else returncode


def _kill_group(pgid: int, sig: int) -> bool:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def _group_alive(pgid: int) -> bool:
    return _kill_group(pgid, 0)


def _terminating_group(pgid: int) -> Iterator[float]:
    """TERM a process group, then KILL what is left after a grace period.

    Yields each pause to take before looking again whether the group is gone,
    so that one sequence serves the blocking and the async caller alike.
    """
    if not _kill_group(pgid, signal.SIGTERM):
        return
    deadline = time.monotonic() + KILL_GRACE_SECONDS
    while time.monotonic() < deadline:
        if not _group_alive(pgid):
            return
        yield 0.05
    _kill_group(pgid, signal.SIGKILL)


def _terminate_group_blocking(pgid: int) -> None:
    for pause in _terminating_group(pgid):
        time.sleep(pause)


async def _exit_status(proc: asyncio.subprocess.Process) -> int:
    """The process's exit status, as soon as it has exited.

    Not `proc.wait()`: before Python 3.12 that also waits for every holder of
    the stdout/stderr pipes to close them, so `sleep 60 &` in a command held the
    request for the whole minute. The return code itself is set the moment the
    child is reaped, so it is polled instead.
    """
    delay = 0.002
    while proc.returncode is None:
        await asyncio.sleep(delay)
        delay = min(delay * 2, 0.05)
    return proc.returncode


async def _terminate_group(pgid: int) -> None:
    for pause in _terminating_group(pgid):
        await asyncio.sleep(pause)


def _proc_groups_usage(pgids: set[int]) -> tuple[int, int]:
    """(processes, resident bytes) of every process whose group is in `pgids`."""
    if not pgids:
        return 0, 0
    count = rss = 0
    page = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            raw = Path("/proc", entry, "stat").read_text()
        except OSError:
            continue
        fields = raw[raw.rfind(")") + 2 :].split()
        # fields[0] is state, [2] pgrp, [21] rss (pages), per proc(5).
        try:
            if int(fields[2]) in pgids:
                count += 1
                rss += int(fields[21]) * page
        except (IndexError, ValueError):
            continue
    return count, rss


class LocalSandbox:
    """One session's sandbox: a host directory, and commands run as subprocesses in it.

    Implements what the service asks of a sandbox: `start`, `stop` (accepting
    `remove=`), `is_alive`, `last_activity`/`touch`/`idle_timeout` for idle
    reaping, `resource_usage` for `?usage=true`, and the `CommandRunner`
    protocol (`run_command`, `stop_command`) that `/run` and `/runs/{id}/stop`
    call.

    The "container" is a per-session scratch directory holding `HOME` and
    `TMPDIR` (and the workspace itself when the service keeps none on disk).
    It is deleted when the sandbox stops, like a container's write layer, and
    deleting it from outside makes the sandbox report itself dead, like
    `docker rm -f` would: that is how to provoke the service's 410/heal paths.
    """

    def __init__(
        self,
        session_id: str,
        runtime: SandboxRuntime,
        *,
        host_workspace: Path,
        scratch: Path,
        work_dir: str,
        idle_timeout: int,
        mount_ns: bool,
        base_path: str,
        build: tuple[float, str | None] = (0.0, None),
    ) -> None:
        self.session_id = session_id
        self._build_delay, self._failing_build = build
        self.runtime = runtime
        self.host_workspace = host_workspace
        self.scratch = scratch
        self.work_dir = work_dir
        self._idle_timeout = idle_timeout
        self._mount_ns = mount_ns
        self._base_path = base_path
        self._started = False
        self._stopped = False
        self._last_activity = time.time()
        self._runs: dict[str, asyncio.subprocess.Process] = {}
        self._groups: set[int] = set()
        self._lock = threading.Lock()

    # -- lifecycle, as SessionManager and the service use it -------------------

    def start(self) -> None:
        # Called on the service's worker thread, where a Docker image build would run.
        if self._build_delay:
            time.sleep(self._build_delay)
        if self._failing_build is not None:
            raise BuildFailed(f"building runtime '{self._failing_build}' failed (PEER_BUILD_FAIL)")
        self.host_workspace.mkdir(parents=True, exist_ok=True)
        (self.scratch / "home").mkdir(parents=True, exist_ok=True)
        (self.scratch / "tmp").mkdir(parents=True, exist_ok=True)
        # The service's workspace sweep reads the session directory's mtime as
        # "last opened"; the Docker builder touches it the same way.
        with contextlib.suppress(OSError):
            os.utime(self.host_workspace.parent)
        self._started = True
        self._stopped = False
        self.touch()

    def stop(self, remove: bool = False) -> None:
        """Kill every process group this sandbox started and discard its scratch."""
        self._stopped = True
        with self._lock:
            groups = list(self._groups)
            self._groups.clear()
        for pgid in groups:
            _terminate_group_blocking(pgid)
        shutil.rmtree(self.scratch, ignore_errors=True)
        del remove  # the scratch is discarded either way; the service purges the workspace

    def is_alive(self) -> bool:
        return self._started and not self._stopped and self.scratch.is_dir()

    @property
    def last_activity(self) -> float:
        return self._last_activity

    def touch(self) -> None:
        self._last_activity = time.time()

    @property
    def idle_timeout(self) -> int:
        return self._idle_timeout

    def resource_usage(self) -> SandboxUsage | None:
        with self._lock:
            groups = {pgid for pgid in self._groups if _group_alive(pgid)}
            self._groups = groups | {p.pid for p in self._runs.values()}
        pids, rss = _proc_groups_usage(groups)
        return SandboxUsage(memory_bytes=rss, pids=pids)

    # -- CommandRunner ---------------------------------------------------------

    def _environment(self, extra: Mapping[str, str] | None) -> dict[str, str]:
        """A clean environment: nothing of the peer's own (its token included) leaks in."""
        home = str(self.scratch / "home")
        env = {
            "PATH": self._base_path,
            "HOME": home,
            "TMPDIR": str(self.scratch / "tmp"),
            "LANG": "C.UTF-8",
            "LC_ALL": "C.UTF-8",
        }
        env.update(extra or {})
        return env

    def _argv(self, argv: Sequence[str]) -> tuple[list[str], str]:
        if self._mount_ns:
            return (
                [
                    "unshare",
                    "--mount",
                    "--propagation",
                    "private",
                    "sh",
                    "-c",
                    _MOUNT_SCRIPT,
                    "sh",
                    str(self.host_workspace),
                    self.work_dir,
                    *argv,
                ],
                "/",
            )
        return (["sh", "-c", _PLAIN_SCRIPT, "sh", *argv], str(self.host_workspace))

    async def run_command(
        self,
        argv: Sequence[str],
        *,
        run_id: str,
        env: Mapping[str, str] | None = None,
        timeout: float | None = None,
        output_limit: int | None = None,
    ) -> CommandOutcome:
        if not argv:
            raise ValueError("argv must name a program")
        if not self.is_alive():
            raise SandboxUnavailableError(f"local sandbox of session {self.session_id} is gone")
        if not self.host_workspace.is_dir():
            raise SandboxUnavailableError(
                f"workspace of session {self.session_id} is gone: {self.host_workspace}"
            )
        self.touch()
        limit = output_limit if output_limit is not None else FALLBACK_OUTPUT_LIMIT
        command, cwd = self._argv(argv)
        try:
            proc = await asyncio.create_subprocess_exec(
                *command,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                cwd=cwd,
                env=self._environment(env),
                start_new_session=True,
            )
        except OSError as exc:
            raise SandboxUnavailableError(f"could not start a local process: {exc}") from exc

        self._runs[run_id] = proc
        with self._lock:
            self._groups.add(proc.pid)
        out = bytearray()
        err = bytearray()
        over = asyncio.Event()

        async def pump(stream: asyncio.StreamReader, sink: bytearray) -> None:
            while chunk := await stream.read(65536):
                sink += chunk
                if len(out) + len(err) > limit:
                    over.set()
                    return

        assert proc.stdout is not None and proc.stderr is not None
        pumps = [
            asyncio.ensure_future(pump(proc.stdout, out)),
            asyncio.ensure_future(pump(proc.stderr, err)),
        ]
        exited = asyncio.ensure_future(_exit_status(proc))
        overflowed = asyncio.ensure_future(over.wait())
        finished = False
        try:
            done, _ = await asyncio.wait(
                {exited, overflowed}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED
            )
            if exited in done and not over.is_set():
                # Exited: drain what it wrote. A background child that inherited
                # the pipes may hold them open; stop reading after a grace.
                await asyncio.wait(pumps, timeout=STREAM_GRACE_SECONDS)
            finished = exited.done() and not over.is_set()
            if not finished:
                timed_out = not over.is_set()
                return CommandOutcome(
                    stdout=bytes(out[:PARTIAL_STREAM_BYTES]).decode("utf-8", "replace"),
                    stderr=bytes(err[:PARTIAL_STREAM_BYTES]).decode("utf-8", "replace"),
                    timed_out=timed_out,
                    output_limited=not timed_out,
                )
        finally:
            if not finished:
                with contextlib.suppress(Exception):
                    await asyncio.shield(_terminate_group(proc.pid))
            for task in (*pumps, overflowed, exited):
                if not task.done():
                    task.cancel()
            self._runs.pop(run_id, None)
            if not _group_alive(proc.pid):
                with self._lock:
                    self._groups.discard(proc.pid)
            self.touch()

        assert proc.returncode is not None
        return CommandOutcome(
            stdout=bytes(out).decode("utf-8", "replace"),
            stderr=bytes(err).decode("utf-8", "replace"),
            exit_code=_signal_exit(proc.returncode),
        )

    async def stop_command(self, run_id: str) -> None:
        proc = self._runs.get(run_id)
        if proc is None or proc.returncode is not None:
            return
        await _terminate_group(proc.pid)


class BuildFailed(RuntimeError):
    """A build `PEER_BUILD_FAIL` names: the service answers 502 `Could not start sandbox: …`."""


class LocalSandboxBuilder:
    """The `sandbox_builder` handed to `create_app`: `(session_id, runtime) -> LocalSandbox`."""

    def __init__(
        self,
        config: SandboxdConfig,
        *,
        mount_ns: bool,
        scratch_root: Path,
        build_delay: float = 0.0,
        failing_builds: frozenset[str] = frozenset(),
    ) -> None:
        self._config = config
        self._mount_ns = mount_ns
        self._scratch_root = scratch_root
        self._base_path = os.environ.get("PATH") or "/usr/local/bin:/usr/bin:/bin"
        self._build_delay = build_delay
        self._failing_builds = failing_builds

    def __call__(self, session_id: str, runtime: SandboxRuntime) -> LocalSandbox:
        # Read at build time, so a PUT /policy change applies to the next sandbox,
        # as it does for the Docker builder.
        config = self._config
        scratch = self._scratch_root / f"{session_id}-{time.time_ns()}"
        if config.workspace_root is not None:
            host_workspace = Path(config.workspace_root) / session_id / "workspace"
        else:
            # No workspace kept on disk: the files live and die with the
            # sandbox, as in a container's write layer.
            host_workspace = scratch / "workspace"
        return LocalSandbox(
            session_id,
            runtime,
            host_workspace=host_workspace,
            scratch=scratch,
            work_dir=config.work_dir,
            idle_timeout=config.idle_timeout,
            mount_ns=self._mount_ns,
            base_path=self._base_path,
            build=self._build_of(runtime),
        )

    def _build_of(self, runtime: SandboxRuntime) -> tuple[float, str | None]:
        """How long starting a sandbox of `runtime` builds first, and the alias whose build fails."""
        if not runtime.builds:
            return 0.0, None
        aliases = [alias for alias, entry in self._config.runtimes.items() if entry is runtime]
        failing = next((alias for alias in aliases if alias in self._failing_builds), None)
        return self._build_delay, failing


def build_settings(environ: Mapping[str, str]) -> tuple[float, frozenset[str]]:
    """`PEER_BUILD_DELAY_SECONDS` and `PEER_BUILD_FAIL`; a bad delay raises `ValueError`."""
    raw = environ.get("PEER_BUILD_DELAY_SECONDS", "").strip() or "0"
    delay = float(raw)
    if not delay >= 0:
        raise ValueError(f"PEER_BUILD_DELAY_SECONDS must be a number of seconds >= 0, not {raw!r}")
    failing = frozenset(a.strip() for a in environ.get("PEER_BUILD_FAIL", "").split(",") if a.strip())
    return delay, failing


def resolve_mount_ns(setting: str, work_dir: str) -> tuple[bool, str]:
    """Whether commands get a mount namespace, and a line saying why."""
    setting = (setting or "auto").strip().lower()
    if setting in ("off", "0", "false", "no"):
        return False, "mount namespace off (PEER_MOUNT_NS=off)"
    reason = ""
    if shutil.which("unshare") is None:
        reason = "no unshare binary"
    else:
        try:
            Path(work_dir).mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            reason = f"cannot create work_dir {work_dir}: {exc}"
    if not reason:
        probe = Path(tempfile.mkdtemp(prefix="sandboxd-peer-probe-"))
        try:
            (probe / ".probe").write_text("ok")
            result = subprocess.run(
                ["unshare", "--mount", "--propagation", "private", "sh", "-c",
                 _MOUNT_SCRIPT, "sh", str(probe), work_dir, "cat", ".probe"],
                capture_output=True, text=True, timeout=10, check=False,
            )
            if result.returncode != 0 or result.stdout != "ok":
                reason = f"unshare --mount failed: {result.stderr.strip() or result.returncode}"
        except (OSError, subprocess.SubprocessError) as exc:
            reason = f"unshare --mount failed: {exc}"
        finally:
            shutil.rmtree(probe, ignore_errors=True)
    if not reason:
        return True, f"mount namespace: session workspace bound at {work_dir}"
    if setting in ("on", "1", "true", "yes"):
        raise SystemExit(f"PEER_MOUNT_NS=on but {reason}")
    return False, f"plain subprocess, cwd = host workspace ({reason})"


def drop_routes(app: object, spec: str) -> list[str]:
    """Remove the routes whose path is listed in `spec` (comma-separated).

    Returns the paths removed. Raises `ValueError` naming any listed path the
    app does not serve.
    """
    wanted = {part.strip() for part in spec.split(",") if part.strip()}
    if not wanted:
        return []
    router = app.router  # type: ignore[attr-defined]
    present = {getattr(route, "path", None) for route in router.routes}
    unknown = sorted(wanted - present)
    if unknown:
        raise ValueError(
            f"PEER_DROP_ROUTES names routes this service does not have: {', '.join(unknown)}"
        )
    router.routes[:] = [r for r in router.routes if getattr(r, "path", None) not in wanted]
    # The schema is built on first request; make sure a cached one is not reused.
    app.openapi_schema = None  # type: ignore[attr-defined]
    return sorted(wanted)


def main() -> int:
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    try:
        config = config_from_env(os.environ)
        host, port = bind_from_env(os.environ)
    except SandboxdConfigError as exc:
        print(f"sandboxd peer: {exc}", file=sys.stderr)
        return 2

    try:
        build_delay, failing_builds = build_settings(os.environ)
    except ValueError as exc:
        print(f"sandboxd peer: {exc}", file=sys.stderr)
        return 2
    mount_ns, how = resolve_mount_ns(os.environ.get("PEER_MOUNT_NS", "auto"), config.work_dir)
    scratch_root = Path(tempfile.mkdtemp(prefix="sandboxd-peer-scratch-"))
    app = create_app(
        config,
        sandbox_builder=LocalSandboxBuilder(
            config,
            mount_ns=mount_ns,
            scratch_root=scratch_root,
            build_delay=build_delay,
            failing_builds=failing_builds,
        ),
    )
    try:
        dropped = drop_routes(app, os.environ.get("PEER_DROP_ROUTES", ""))
    except ValueError as exc:
        shutil.rmtree(scratch_root, ignore_errors=True)
        print(f"sandboxd peer: {exc}", file=sys.stderr, flush=True)
        return 2

    import uvicorn

    server = uvicorn.Server(
        uvicorn.Config(app, host=host, port=port, log_level=os.environ.get("PEER_LOG_LEVEL", "info"))
    )

    def request_stop(signum: int, frame: object) -> None:
        server.should_exit = True

    # uvicorn turns SIGTERM/SIGINT into a graceful shutdown (the service's
    # lifespan stops every sandbox, killing their process groups), then restores
    # the handlers it found and re-raises the signal. Finding these, the re-raise
    # is a no-op, so the process ends with status 0 instead of dying by signal;
    # a signal before uvicorn takes over still stops it.
    signal.signal(signal.SIGTERM, request_stop)
    signal.signal(signal.SIGINT, request_stop)

    print(
        f"sandboxd peer: http://{host}:{port} "
        f"(pydantic-ai-backend {metadata.version('pydantic-ai-backend')})",
        flush=True,
    )
    if dropped:
        print(f"sandboxd peer: routes dropped: {', '.join(dropped)}", flush=True)
    if build_delay or failing_builds:
        print(
            f"sandboxd peer: builds take {build_delay:g} s"
            + (f"; failing: {','.join(sorted(failing_builds))}" if failing_builds else ""),
            flush=True,
        )
    print(
        f"sandboxd peer: runtimes={','.join(sorted(config.runtimes))} "
        f"workspace_root={config.workspace_root} commands: {how}",
        flush=True,
    )
    try:
        server.run()
    finally:
        shutil.rmtree(scratch_root, ignore_errors=True)
    if not server.started:
        print("sandboxd peer: did not start (see the log above)", file=sys.stderr, flush=True)
        return 1
    print("sandboxd peer: stopped", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
