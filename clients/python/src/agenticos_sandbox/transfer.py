"""Moving files in and out of a run's workspace, written once for the sync and async clients.

Each operation is a generator of `_Call`s: it yields a call, is sent its answer (or thrown the
call's `ApiError`), and returns its result. `run_sync` and `run_async` drive one with a
`Console` or an `AsyncConsole`.

Paths are absolute, as the frameworks' sandboxes use them. Under `/workspace` (the workspace
root, as the console's routes and, on sandboxd, the sandbox's shell both see it; a Daytona
sandbox's shell sees it as its working directory) a file goes through the file
routes (`PUT`/`GET /workspace/files`, recorded as `write`/`read`). Any other absolute path is
outside the workspace: the console's file routes refuse it (they stay confined to the workspace),
so it goes through the run's command route instead, as fixed scripts of ours in the sandbox's
shell (bytes base64 both ways, in chunks; recorded as `execute` rows). That reaches only what a
command of the run could reach anyway. A relative path is `invalid_path`.
"""

from __future__ import annotations

import base64
import posixpath
import re
from dataclasses import dataclass
from typing import Any, Generator

from . import errors
from .client import AsyncConsole, Console, ExecResult, _Call, _Calls

WORKSPACE_ROOT = "/workspace"

FILE_ROUTE_LIMIT = 8 * 1024 * 1024
"""The console's largest file write or read; bigger files go through the shell in chunks."""

UPLOAD_ARG_BYTES = 90_000
"""Raw bytes per argument of an upload command (120,000 base64 characters: under the 131,071
bytes one argument may have)."""

UPLOAD_ARGS_PER_CALL = 7
"""Arguments per upload command: about 840 KB of JSON, under the console's 1 MiB body limit.
Where the host runs a command as one `sh -c` string (Daytona's `process/execute`), that whole
string is one argument, so a command there carries one (`SINGLE_STRING_BACKENDS`)."""

SINGLE_STRING_BACKENDS = ("daytona",)
"""Backends whose host receives a command as one string for `sh -c` (the console quotes argv
into it), so one command may carry at most 131,071 bytes in all."""

DOWNLOAD_CHUNK_BYTES = 4 * 1024 * 1024
"""Raw bytes per download command (5.6 MB of base64, under the host's 10 MiB output limit)."""

INVALID_PATH = "invalid_path"
FILE_NOT_FOUND = "file_not_found"
PERMISSION_DENIED = "permission_denied"
IS_DIRECTORY = "is_directory"

UPLOAD_SCRIPT = r"""
p=$1; mode=$2; shift 2
part="$p.agenticos-upload"
if [ -d "$p" ]; then echo is_directory; exit 3; fi
case "$mode" in
  first|only)
    mkdir -p -- "$(dirname -- "$p")" 2>/dev/null || { echo permission_denied; exit 3; }
    : > "$part" 2>/dev/null || { echo permission_denied; exit 3; } ;;
esac
printf %s "$@" | base64 -d >> "$part" 2>/dev/null || { rm -f -- "$part"; echo permission_denied; exit 3; }
case "$mode" in
  last|only) mv -f -- "$part" "$p" 2>/dev/null || { rm -f -- "$part"; echo permission_denied; exit 3; } ;;
esac
"""

DOWNLOAD_SCRIPT = r"""
p=$1; off=$2; n=$3
if [ ! -e "$p" ]; then echo "ERR file_not_found"; exit 0; fi
if [ -d "$p" ]; then echo "ERR is_directory"; exit 0; fi
if [ ! -r "$p" ]; then echo "ERR permission_denied"; exit 0; fi
size=$(wc -c < "$p" 2>/dev/null) || { echo "ERR permission_denied"; exit 0; }
echo "OK $((size))"
tail -c +$((off + 1)) -- "$p" 2>/dev/null | head -c "$n" | base64
"""


@dataclass(frozen=True)
class Target:
    """Where an absolute path is: `workspace` (through the file routes) or `outside`."""

    where: str
    path: str


def target(path: str) -> Target | None:
    """The normalised target of `path`, or None when it is not absolute."""
    if not isinstance(path, str) or not path.startswith("/") or "\x00" in path:
        return None
    norm = posixpath.normpath(re.sub("/+", "/", path))
    if norm == WORKSPACE_ROOT or norm.startswith(WORKSPACE_ROOT + "/"):
        return Target("workspace", norm)
    return Target("outside", norm)


Plan = Generator[_Call, Any, Any]


def upload(run_id: str, path: str, data: bytes) -> Plan:
    """Writes `data` at `path`; returns None, or a file error code."""
    t = target(path)
    if t is None:
        return INVALID_PATH
    if t.where == "workspace" and len(data) <= FILE_ROUTE_LIMIT:
        try:
            yield _Calls.write_file(run_id, t.path, data)
        except (errors.BadRequest, errors.InvalidInput):
            return INVALID_PATH
        except errors.NotFound as e:
            if not _missing_file(e):
                raise
            return FILE_NOT_FOUND
        except errors.Forbidden as e:
            if _role_refused(e):
                raise
            return PERMISSION_DENIED
        return None
    return (yield from _upload_through_shell(run_id, t.path, data))


def _upload_through_shell(run_id: str, path: str, data: bytes) -> Plan:
    per_call = UPLOAD_ARG_BYTES
    if len(data) > UPLOAD_ARG_BYTES:
        # More than one argument's worth: how many a command may carry is the host's matter.
        state = yield _Calls.workspace_state(run_id)
        if state.get("backend") not in SINGLE_STRING_BACKENDS:
            per_call = UPLOAD_ARG_BYTES * UPLOAD_ARGS_PER_CALL
    pieces = [data[i : i + per_call] for i in range(0, len(data), per_call)] or [b""]
    for n, piece in enumerate(pieces):
        if len(pieces) == 1:
            mode = "only"
        else:
            mode = "first" if n == 0 else ("last" if n == len(pieces) - 1 else "more")
        args = [
            base64.b64encode(piece[i : i + UPLOAD_ARG_BYTES]).decode("ascii")
            for i in range(0, len(piece), UPLOAD_ARG_BYTES)
        ]
        argv = ["/bin/sh", "-c", UPLOAD_SCRIPT, "agenticos-upload", path, mode, *args]
        result = ExecResult.from_json((yield _Calls.exec(run_id, argv=argv)))
        if result.exit_code != 0:
            said = result.stdout.strip()
            return said if said in (IS_DIRECTORY, PERMISSION_DENIED) else f"upload failed: {said or result.stderr.strip()}"
    return None


def download(run_id: str, path: str) -> Plan:
    """Reads `path`; returns (bytes, None) or (None, a file error code)."""
    t = target(path)
    if t is None:
        return None, INVALID_PATH
    if t.where == "workspace":
        try:
            return (yield _Calls.read_file(run_id, t.path)), None
        except errors.NotFound as e:
            if not _missing_file(e):
                raise
            return None, FILE_NOT_FOUND
        except errors.Forbidden as e:
            if _role_refused(e):
                raise
            return None, PERMISSION_DENIED
        except (errors.BadRequest, errors.InvalidInput) as e:
            return None, IS_DIRECTORY if "folder" in e.detail.lower() or "directory" in e.detail.lower() else INVALID_PATH
        except errors.PayloadTooLarge:
            pass  # over the file route's limit: read it in chunks through the shell
    return (yield from _download_through_shell(run_id, t.path))


def _download_through_shell(run_id: str, path: str) -> Plan:
    out = bytearray()
    size = None
    while size is None or len(out) < size:
        argv = ["/bin/sh", "-c", DOWNLOAD_SCRIPT, "agenticos-download", path, str(len(out)), str(DOWNLOAD_CHUNK_BYTES)]
        result = ExecResult.from_json((yield _Calls.exec(run_id, argv=argv)))
        head, _, body = result.stdout.partition("\n")
        if head.startswith("ERR "):
            return None, head[4:].strip()
        if result.exit_code != 0 or not head.startswith("OK "):
            return None, f"download failed: {(result.stderr or head).strip()}"
        size = int(head[3:])
        chunk = base64.b64decode("".join(body.split()))
        if not chunk and len(out) < size:
            return None, "download failed: the file changed while it was read"
        out += chunk
    return bytes(out[:size]), None


def _missing_file(e: errors.ApiError) -> bool:
    """A 404 about the file ("No such file or folder."), not the run (gone, another
    organization's), which is raised."""
    return "no such file" in e.detail.lower()


def _role_refused(e: errors.ApiError) -> bool:
    """A 403 for the token's role (raised), not a file the sandbox may not read."""
    return e.type.endswith("/forbidden") and "role" in e.detail.lower()


def run_sync(console: Console, plan: Plan) -> Any:
    try:
        call = next(plan)
        while True:
            try:
                answer = console.call(call)
            except errors.ApiError as e:
                call = plan.throw(e)
                continue
            call = plan.send(answer)
    except StopIteration as done:
        return done.value


async def run_async(console: AsyncConsole, plan: Plan) -> Any:
    try:
        call = next(plan)
        while True:
            try:
                answer = await console.call(call)
            except errors.ApiError as e:
                call = plan.throw(e)
                continue
            call = plan.send(answer)
    except StopIteration as done:
        return done.value
