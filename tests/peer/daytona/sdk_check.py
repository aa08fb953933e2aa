#!/usr/bin/env python3
"""Contract check 2: Daytona's own client against the FAKE Daytona (fake_daytona.py).

The official Python SDK (`daytona==0.226.1`, tests/peer/daytona-requirements.txt) is pointed at the
fake and does what issue 28's backend will do: create a sandbox by name with labels, get it by name,
list by labels, run commands, upload and download files, and delete it; then it meets what the
fake's test hooks produce (a failed build, a start that fails, an old daemon's empty error bodies, a
stopped sandbox). Where the SDK and the fake disagree, the fake is wrong. Exits non-zero, saying which step failed, on any disagreement.

    sdk_check.py                      reads DAYTONA_API_URL and DAYTONA_API_KEY
    sdk_check.py API_URL API_KEY

The SDK runs in polling mode (`use_deprecated_polling`): its default also opens a Socket.IO
connection for state events, which is not in the OpenAPI documents and which the fake does not
serve; the SDK's own polling fallback is what a REST client does.
"""

from __future__ import annotations

import json
import os
import sys
import urllib.request
import traceback
import uuid
import warnings

warnings.simplefilter("ignore", DeprecationWarning)

from daytona import (  # noqa: E402
    CreateSandboxFromImageParams,
    CreateSandboxFromSnapshotParams,
    Daytona,
    DaytonaConfig,
    DaytonaConflictError,
    DaytonaError,
    DaytonaNotFoundError,
    ListSandboxesQuery,
)
from daytona.common.errors import (  # noqa: E402
    DaytonaAuthenticationError,
    DaytonaBadRequestError,
    DaytonaForbiddenError,
    DaytonaRateLimitError,
)

FAILURES: list[str] = []


def check(what: str, ok: bool, detail: object = ""):
    print(("ok   " if ok else "FAIL ") + what + (f": {detail}" if detail != "" and not ok else ""))
    if not ok:
        FAILURES.append(f"{what}: {detail}")


def control(path: str, body: dict, root: str) -> dict:
    """The fake's own test hooks (fake_daytona.py header)."""
    req = urllib.request.Request(root + path, data=json.dumps(body).encode(), method="POST",
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as r:
        return json.loads(r.read())


def hooks(body: dict, root: str) -> dict:
    return control("/_fake/hooks", body, root)


def set_sandbox(id_or_name: str, body: dict, root: str) -> dict:
    return control(f"/_fake/sandbox/{id_or_name}", body, root)


def what_daytona_answers(daytona: Daytona, name: str, root: str):
    """The answers read from Daytona's server source (fake_daytona.py cites each), as the SDK
    meets them: a stopped, archived and deleted sandbox's toolbox, recover, the fake clock's
    auto-stop, throttling with its headers, key permissions and suspension."""
    sb = daytona.create(CreateSandboxFromSnapshotParams(name=f"{name}-life", auto_stop_interval=15), timeout=60)
    control("/_fake/clock", {"advance_seconds": 16 * 60}, root)
    sb.refresh_data()
    check("the fake clock 16 minutes on: auto-stopped", sb.state == "stopped", sb.state)
    try:
        sb.process.exec("true", timeout=5)
        check("exec in a stopped sandbox: 400 not running", False, "it ran")
    except DaytonaBadRequestError as e:
        check("exec in a stopped sandbox: the SDK's bad request with Daytona's words",
              "no IP address found. Is the Sandbox started?" in str(e), str(e))
    sb.start(timeout=30)
    sb.stop(timeout=30)
    sb.archive()
    control("/_fake/clock", {"advance_seconds": 1}, root)  # past the fake's archiving
    sb.refresh_data()
    check("archived", sb.state == "archived", sb.state)
    try:
        sb.fs.list_files(".")
        check("list files in an archived sandbox: 400", False, "it listed")
    except DaytonaBadRequestError as e:
        check("list files in an archived sandbox: failed to get runner info", "failed to get runner info" in str(e), str(e))
    sb.start(timeout=30)
    check("an archived sandbox starts again", sb.state == "started", sb.state)
    set_sandbox(sb.id, {"state": "error", "errorReason": "disk detached", "recoverable": True}, root)
    sb.refresh_data()
    check("a recoverable error", (sb.state, sb.recoverable) == ("error", True), (sb.state, sb.recoverable))
    sb.recover(timeout=30)
    check("recover: started", sb.state == "started", sb.state)
    hooks({"fail": [{"route": "GET /sandbox/{sandboxIdOrName}", "status": 429, "throttler": "sandbox-lifecycle",
                     "retryAfter": 7}]}, root)
    try:
        daytona.get(sb.id)
        check("throttled: the SDK's rate-limit error", False, "answered")
    except DaytonaRateLimitError as e:
        check("throttled: the SDK's rate-limit error with Retry-After-sandbox-lifecycle",
              {k.lower(): v for k, v in e.headers.items()}.get("retry-after-sandbox-lifecycle") == "7", e.headers)
    hooks({"fail": None, "keyPermissions": ["write:sandboxes"]}, root)
    try:
        daytona.delete(sb)
        check("delete without delete:sandboxes: forbidden", False, "deleted")
    except DaytonaForbiddenError as e:
        check("delete without delete:sandboxes: forbidden", "Forbidden resource" in str(e), str(e))
    hooks({"keyPermissions": None, "suspended": True}, root)
    try:
        daytona.create(CreateSandboxFromSnapshotParams(name=f"{name}-susp"), timeout=30)
        check("a suspended organization cannot create", False, "created")
    except DaytonaForbiddenError as e:
        check("a suspended organization cannot create", "Organization is suspended" in str(e), str(e))
    hooks({"suspended": None}, root)
    sb_id = sb.id
    daytona.delete(sb, wait=True, timeout=30)
    try:
        sb.fs.list_files(".")
        check("a deleted sandbox's toolbox: authentication error", False, "it listed")
    except DaytonaAuthenticationError as e:
        check("a deleted sandbox's toolbox: 401", getattr(e, "status_code", None) == 401, f"{sb_id}: {e}")


def main() -> int:
    api_url = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("DAYTONA_API_URL")
    api_key = sys.argv[2] if len(sys.argv) > 2 else os.environ.get("DAYTONA_API_KEY")
    if not api_url or not api_key:
        print("sdk_check: give API_URL and API_KEY (or DAYTONA_API_URL, DAYTONA_API_KEY)", file=sys.stderr)
        return 2
    if not api_url.startswith("http://127.0.0.1:"):
        print(f"sdk_check: refusing {api_url}: this check runs only against the local fake", file=sys.stderr)
        return 2
    daytona = Daytona(DaytonaConfig(api_key=api_key, api_url=api_url, target="us", use_deprecated_polling=True))
    run = uuid.uuid4().hex[:8]
    name = f"sdk-check-{run}"
    labels = {"agenticos.io/deployment": f"sdk-check-{run}", "agenticos.io/scope": "conversation"}

    # Create by name, with labels and intervals, from the default snapshot.
    sandbox = daytona.create(
        CreateSandboxFromSnapshotParams(name=name, labels=dict(labels), auto_stop_interval=15,
                                        auto_archive_interval=60, auto_delete_interval=-1),
        timeout=60,
    )
    check("create: started", sandbox.state == "started", sandbox.state)
    check("create: the name given", sandbox.name == name, sandbox.name)
    check("create: labels kept (plus the SDK's language label)",
          all(sandbox.labels.get(k) == v for k, v in labels.items())
          and sandbox.labels.get("code-toolbox-language") == "python", sandbox.labels)
    check("create: intervals", (sandbox.auto_stop_interval, sandbox.auto_archive_interval,
                                sandbox.auto_delete_interval) == (15, 60, -1),
          (sandbox.auto_stop_interval, sandbox.auto_archive_interval, sandbox.auto_delete_interval))

    # The same name again: 409, which the SDK maps to its conflict error.
    try:
        daytona.create(CreateSandboxFromSnapshotParams(name=name), timeout=30)
        check("create: a second sandbox by the same name is refused", False, "it was created")
    except DaytonaConflictError:
        check("create: a second sandbox by the same name is refused (409)", True)
    except DaytonaError as e:
        check("create: a second sandbox by the same name is refused (409)", False, f"{type(e).__name__}: {e}")

    # Get by name.
    got = daytona.get(name)
    check("get by name: the same sandbox", got.id == sandbox.id, (got.id, sandbox.id))
    check("get by name: its toolbox URL", bool(got.toolbox_proxy_url), got.toolbox_proxy_url)

    # A second sandbox with other labels, so the filter has something to exclude; a page size of 1
    # makes the SDK follow the cursor.
    other = daytona.create(CreateSandboxFromSnapshotParams(name=f"{name}-other",
                                                           labels={"agenticos.io/deployment": f"sdk-check-{run}",
                                                                   "agenticos.io/scope": "run"}), timeout=60)
    found = list(daytona.list(ListSandboxesQuery(labels=dict(labels))))
    check("list by labels: exactly the one", [s.id for s in found] == [sandbox.id], [s.name for s in found])
    both = list(daytona.list(ListSandboxesQuery(labels={"agenticos.io/deployment": f"sdk-check-{run}"}, limit=1)))
    check("list by labels, one per page (cursor): both", sorted(s.id for s in both) == sorted([sandbox.id, other.id]),
          [s.name for s in both])

    # Commands.
    r = sandbox.process.exec("echo hello-from-the-fake", timeout=30)
    check("exec echo: exit 0", r.exit_code == 0, r.exit_code)
    check("exec echo: output", r.result == "hello-from-the-fake\n", repr(r.result))
    r = sandbox.process.exec("echo out; echo err >&2; exit 3", timeout=30)
    check("exec: exit code kept", r.exit_code == 3, r.exit_code)
    check("exec: stdout and stderr combined", "out" in r.result and "err" in r.result, repr(r.result))
    r = sandbox.process.exec("printf %s \"$GREETING\"", env={"GREETING": "hi there"}, timeout=30)
    check("exec: env", r.result == "hi there", repr(r.result))
    try:
        r = sandbox.process.exec("echo partial; sleep 5", timeout=1)
        check("exec past its timeout fails", False, f"answered {r.exit_code} {r.result!r}")
    except DaytonaError as e:
        check("exec past its timeout fails (408)", getattr(e, "status_code", None) == 408,
              f"{type(e).__name__} {getattr(e, 'status_code', None)}: {e}")

    # Files: upload (parents created), read back through the SDK and through a command.
    sandbox.fs.upload_file(b"line one\nline two\n", "notes/deep/a.txt")
    data = sandbox.fs.download_file("notes/deep/a.txt")
    check("upload then download: same bytes", data == b"line one\nline two\n", data)
    r = sandbox.process.exec("cat notes/deep/a.txt | wc -l", timeout=30)
    check("a command sees the uploaded file", r.result.strip() == "2", repr(r.result))
    blob = bytes(range(256)) * 64
    sandbox.fs.upload_file(blob, "bin/blob.dat")
    check("binary upload/download round trip", sandbox.fs.download_file("bin/blob.dat") == blob)
    big = bytes(range(251)) * 2000  # streamed up with chunked transfer encoding
    sandbox.fs.upload_file_stream(big, "stream/big.bin")
    check("streamed upload, streamed download", b"".join(sandbox.fs.download_file_stream("stream/big.bin")) == big)
    sandbox.process.exec("mkdir -p made && printf made-by-exec > made/x.txt", timeout=30)
    check("download of a file a command wrote", sandbox.fs.download_file("made/x.txt") == b"made-by-exec")
    names = sorted(f.name for f in sandbox.fs.list_files("notes/deep"))
    check("list_files", names == ["a.txt"], names)
    info = sandbox.fs.get_file_info("notes/deep/a.txt")
    check("get_file_info", (info.size, info.is_dir) == (18, False), (info.size, info.is_dir))
    sandbox.fs.create_folder("empty/dir", "755")
    check("create_folder", sandbox.fs.get_file_info("empty/dir").is_dir)
    sandbox.fs.delete_file("notes", recursive=True)
    try:
        sandbox.fs.download_file("notes/deep/a.txt")
        check("a deleted file is gone", False, "downloaded")
    except DaytonaNotFoundError:
        check("a deleted file is gone (not found)", True)
    except DaytonaError as e:
        check("a deleted file is gone (not found)", False, f"{type(e).__name__}: {e}")

    # Stop and start.
    sandbox.stop(timeout=30)
    check("stop: stopped", sandbox.state == "stopped", sandbox.state)
    sandbox.start(timeout=30)
    check("start: started", sandbox.state == "started", sandbox.state)
    check("files survive stop/start", sandbox.fs.download_file("made/x.txt") == b"made-by-exec")
    sandbox.set_autostop_interval(30)  # 201 on Daytona, 200 in the documents: the SDK takes both
    check("set_autostop_interval", daytona.get(sandbox.id).auto_stop_interval == 30)

    # From an image: the create answers pending_build and the SDK polls until started.
    built = daytona.create(CreateSandboxFromImageParams(name=f"{name}-img", image="python:3.12-slim"), timeout=60)
    check("create from an image: started", built.state == "started", built.state)
    daytona.delete(built)

    # What the fake's hooks produce, as the SDK sees it (the hooks are the fake's, not Daytona's).
    root = api_url.removesuffix("/api")
    hooks({"names": {f"{name}-bad": {"buildSeconds": 0.3, "buildFail": "FROM image not found"},
                     f"{name}-nostart": {"buildSeconds": 0.1, "buildFail": "no runner available"}}}, root)
    try:
        daytona.create(CreateSandboxFromImageParams(name=f"{name}-bad", image="nope:1"), timeout=30)
        check("a failing build fails the create", False, "it was created")
    except DaytonaError as e:
        check("a failing build fails the create, with its reason", "FROM image not found" in str(e), str(e))
    bad = daytona.get(f"{name}-bad")
    check("the failed build: build_failed with errorReason", (bad.state, bad.error_reason)
          == ("build_failed", "FROM image not found"), (bad.state, bad.error_reason))
    daytona.delete(bad, wait=True, timeout=30)
    try:
        daytona.create(CreateSandboxFromSnapshotParams(name=f"{name}-nostart"), timeout=30)
        check("a snapshot create that fails to start fails", False, "it was created")
    except DaytonaError as e:
        check("a snapshot create that fails to start: 400 Sandbox failed to start",
              getattr(e, "status_code", None) == 400 and "Sandbox failed to start: no runner available" in str(e),
              f"{getattr(e, 'status_code', None)}: {e}")
    daytona.delete(daytona.get(f"{name}-nostart"), wait=True, timeout=30)
    hooks({"names": None, "oldDaemon": True}, root)
    old = daytona.create(CreateSandboxFromSnapshotParams(name=f"{name}-old"), timeout=60)
    hooks({"oldDaemon": None}, root)
    try:
        old.fs.get_file_info("missing.txt")
        check("old daemon: a missing file (empty 404 body) is not found", False, "found")
    except DaytonaNotFoundError:
        check("old daemon: a missing file (empty 404 body) is not found", True)
    except DaytonaError as e:
        check("old daemon: a missing file (empty 404 body) is not found", False, f"{type(e).__name__}: {e}")
    set_sandbox(old.id, {"state": "stopped"}, root)
    again_old = daytona.get(old.id)
    check("a sandbox the hook stopped reads as stopped", again_old.state == "stopped", again_old.state)
    again_old.start(timeout=30)
    check("and the SDK starts it", again_old.state == "started", again_old.state)
    daytona.delete(again_old, wait=True, timeout=30)

    what_daytona_answers(daytona, name, root)

    # Delete: the name is free at once; get answers not found once destroyed.
    daytona.delete(sandbox, wait=True, timeout=30)
    try:
        daytona.get(name)
        check("get after delete: not found", False, "still there")
    except DaytonaNotFoundError:
        check("get after delete: not found", True)
    try:
        daytona.get(sandbox.id)
        check("get by id after delete: not found", False, "still there")
    except DaytonaNotFoundError:
        check("get by id after delete: not found", True)
    again = daytona.create(CreateSandboxFromSnapshotParams(name=name), timeout=60)
    check("the name is free again after a delete", again.name == name and again.id != sandbox.id, again.id)
    daytona.delete(again, wait=True, timeout=30)
    daytona.delete(other, wait=True, timeout=30)
    left = list(daytona.list(ListSandboxesQuery(labels={"agenticos.io/deployment": f"sdk-check-{run}"})))
    check("nothing left listed", left == [], [s.name for s in left])

    if FAILURES:
        print(f"sdk_check: {len(FAILURES)} failure(s):", file=sys.stderr)
        for f in FAILURES:
            print("  " + f, file=sys.stderr)
        return 1
    print("sdk_check: the SDK and the fake agree")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Exception:  # an SDK exception is a disagreement too: show where
        traceback.print_exc()
        print("sdk_check: FAILED with an exception (above)", file=sys.stderr)
        sys.exit(1)
