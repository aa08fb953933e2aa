"""`contract.py drive URL [KEY]`: walk a running FAKE Daytona through every route it serves, error
paths and test hooks included, asserting each answer's status (and a few bodies), so that
`contract.py check-log` then validates answers the SDK never provokes. Standard library only."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid

FAILURES: list[str] = []


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


OPENER = urllib.request.build_opener(NoRedirect)
LAST_HEADERS: dict[str, str] = {}  # the headers of the last answer `call` received, lower-cased
NO_IP = "failed to resolve container IP after 3 attempts: no IP address found. Is the Sandbox started?"


def call(method: str, url: str, key: str | None, body=None, content_type: str | None = None, raw: bytes | None = None,
         invalid: bool = False):
    headers = {"X-Fake-Expect-Invalid": "1"} if invalid else {}
    if key:
        headers["Authorization"] = f"Bearer {key}"
    data = raw
    if body is not None:
        data = json.dumps(body).encode()
        content_type = content_type or "application/json"
    if content_type:
        headers["Content-Type"] = content_type
    req = urllib.request.Request(url, data=data, method=method, headers=headers)
    try:
        with OPENER.open(req, timeout=60) as r:
            status, payload, ctype = r.status, r.read(), r.headers.get("Content-Type", "")
            LAST_HEADERS.clear()
            LAST_HEADERS.update({k.lower(): v for k, v in r.headers.items()})
    except urllib.error.HTTPError as e:
        status, payload, ctype = e.code, e.read(), e.headers.get("Content-Type", "")
        LAST_HEADERS.clear()
        LAST_HEADERS.update({k.lower(): v for k, v in e.headers.items()})
    parsed = None
    if payload and ctype.startswith("application/json"):
        parsed = json.loads(payload.decode("utf-8", "replace"))
    return status, parsed, payload


def expect(what: str, got: int, want: int, body=None):
    ok = got == want
    print(("ok   " if ok else "FAIL ") + f"{what}: {got}" + ("" if ok else f" (expected {want}) {body!r}"[:400]))
    if not ok:
        FAILURES.append(f"{what}: {got}, expected {want}")


def truth(what: str, ok: bool, detail=""):
    print(("ok   " if ok else "FAIL ") + what + ("" if ok else f": {detail!r}"[:400]))
    if not ok:
        FAILURES.append(f"{what}: {detail!r}")


def multipart(fields: list[tuple[str, str | None, bytes]]) -> tuple[bytes, str]:
    boundary = "drive" + uuid.uuid4().hex
    out = bytearray()
    for name, filename, data in fields:
        disp = f'form-data; name="{name}"' + (f'; filename="{filename}"' if filename else "")
        out += f"--{boundary}\r\nContent-Disposition: {disp}\r\n".encode()
        if filename:
            out += b"Content-Type: application/octet-stream\r\n"
        out += b"\r\n" + data + b"\r\n"
    out += f"--{boundary}--\r\n".encode()
    return bytes(out), f"multipart/form-data; boundary={boundary}"


def wait_state(api: str, key: str, sid: str, states: set[str], seconds: float = 10) -> dict:
    deadline = time.time() + seconds
    while True:
        status, sb, _ = call("GET", f"{api}/sandbox/{sid}", key)
        if status != 200:
            return {"state": f"HTTP {status}"}
        if sb["state"] in states or time.time() > deadline:
            return sb
        time.sleep(0.05)


def drive(root: str, key: str) -> int:
    root = root.rstrip("/")
    if not root.startswith("http://127.0.0.1:"):
        print(f"contract drive: refusing {root}: only the local fake")
        return 2
    api = root + "/api"
    run = uuid.uuid4().hex[:8]
    hooks = root + "/_fake/hooks"

    # Authentication.
    s, b, _ = call("GET", f"{api}/sandbox", None)
    expect("no key: 401", s, 401, b)
    s, b, _ = call("GET", f"{api}/sandbox", "wrong-key")
    expect("a wrong key: 401", s, 401, b)
    truth("401 is a NestJS body", isinstance(b, dict) and b.get("statusCode") == 401 and b.get("error") == "Unauthorized", b)

    # Snapshots.
    s, b, _ = call("GET", f"{api}/snapshots", key)
    expect("list snapshots", s, 200, b)
    default = b["items"][0]["name"]
    s, b, _ = call("GET", f"{api}/snapshots/{urllib.parse.quote(default, safe='')}", key)
    expect("get a snapshot by name", s, 200, b)
    s, b, _ = call("GET", f"{api}/snapshots/no-such-snapshot", key)
    expect("an unknown snapshot: 404", s, 404, b)

    # Create: validation.
    s, b, _ = call("POST", f"{api}/sandbox", key, {"snapshot": "no-such-snapshot"})
    expect("create from an unknown snapshot: 400", s, 400, b)
    s, b, _ = call("POST", f"{api}/sandbox", key, {"snapshot": default, "cpu": 2})
    expect("resources with a snapshot: 400", s, 400, b)
    s, b, _ = call("POST", f"{api}/sandbox", key, {"snapshot": default, "buildInfo": {"dockerfileContent": "FROM x\n"}})
    expect("a snapshot and a build: 400", s, 400, b)

    name = f"drive-{run}"
    labels = {"agenticos.io/deployment": f"drive-{run}", "agenticos.io/org": "o1"}
    s, sb, _ = call("POST", f"{api}/sandbox", key, {"name": name, "labels": labels, "snapshot": default,
                                                     "autoStopInterval": 0, "autoArchiveInterval": 60,
                                                     "autoDeleteInterval": -1, "ttlMinutes": 120})
    expect("create", s, 200, sb)
    truth("create from a snapshot answers started", sb.get("state") == "started", sb.get("state"))
    sid = sb["id"]
    s, b, _ = call("POST", f"{api}/sandbox", key, {"name": name})
    expect("the same name again: 409", s, 409, b)

    # Get and list.
    s, b, _ = call("GET", f"{api}/sandbox/{name}?verbose=true", key)
    expect("get by name", s, 200, b)
    s, b, _ = call("GET", f"{api}/sandbox/{sid}", key)
    expect("get by id", s, 200, b)
    s, b, _ = call("GET", f"{api}/sandbox/no-such-sandbox-{run}", key)
    expect("get an unknown sandbox: 404", s, 404, b)
    truth("404 message", isinstance(b, dict) and b.get("message") == f"Sandbox with ID or name no-such-sandbox-{run} not found", b)
    q = urllib.parse.urlencode({"labels": json.dumps(labels), "limit": 10})
    s, b, _ = call("GET", f"{api}/sandbox?{q}", key)
    expect("list by labels", s, 200, b)
    truth("list by labels finds it", [i["id"] for i in b["items"]] == [sid] and b["nextCursor"] is None, b)
    s, b, _ = call("GET", f"{api}/sandbox?labels=%7Bnot-json", key)
    expect("list with invalid labels JSON: 400", s, 400, b)
    s, b, _ = call("GET", f"{api}/sandbox?limit=500", key, invalid=True)
    expect("list with limit 500: 400", s, 400, b)
    s, b, _ = call("GET", f"{api}/sandbox?states=started&name=drive-", key)
    expect("list by state and name prefix", s, 200, b)

    # Intervals (201), labels, toolbox URL, keep-alive.
    for route, value in (("autostop", 30), ("autoarchive", 120), ("autodelete", -1), ("autopause", 0), ("ttl", 60)):
        s, b, _ = call("POST", f"{api}/sandbox/{sid}/{route}/{value}", key)
        expect(f"{route}/{value}: 201 (quirk)", s, 201, b)
    s, b, _ = call("POST", f"{api}/sandbox/{sid}/autostop/-5", key)
    expect("autostop/-5: 400", s, 400, b)
    s, b, _ = call("PUT", f"{api}/sandbox/{sid}/labels", key, {"labels": dict(labels, extra="1")})
    expect("replace labels", s, 200, b)
    s, b, _ = call("GET", f"{api}/sandbox/{sid}/toolbox-proxy-url", key)
    expect("toolbox proxy URL", s, 200, b)
    tb = f"{b['url']}/{sid}"
    s, b, _ = call("POST", f"{api}/sandbox/{sid}/last-activity", key)
    expect("last activity: 201", s, 201, b)

    # Toolbox.
    s, b, _ = call("GET", f"{tb}/work-dir", key)
    expect("work dir", s, 200, b)
    work = b["dir"]
    s, b, _ = call("GET", f"{tb}/user-home-dir", key)
    expect("home dir", s, 200, b)
    s, b, _ = call("GET", f"{tb}/version", key)
    expect("daemon version", s, 200, b)
    s, b, _ = call("GET", f"{tb}/files", None)
    expect("toolbox without a key: 401", s, 401, b)
    s, b, _ = call("POST", f"{root}/toolbox/no-such-id/process/execute", key, {"command": "true"})
    expect("toolbox of an unknown sandbox: 401 (the proxy's access check)", s, 401, b)
    s, b, _ = call("POST", f"{tb}/files/folder?path=d1/d2&mode=0755", key)
    expect("mkdir -p", s, 201, b)
    s, b, _ = call("POST", f"{tb}/files/folder?path=d1/d3", key, invalid=True)
    expect("mkdir without mode: 400", s, 400, b)
    raw, ctype = multipart([("files[0].path", None, b"d1/d2/a.txt"), ("files[0].file", "a.txt", b"alpha\n"),
                            ("files[1].path", None, f"{work}/up/b.bin".encode()), ("files[1].file", "b.bin", bytes(range(256)))])
    s, b, _ = call("POST", f"{tb}/files/bulk-upload", key, raw=raw, content_type=ctype)
    expect("bulk upload", s, 200, b)
    raw, ctype = multipart([("files[0].path", None, b"/etc/outside.txt"), ("files[0].file", "x", b"x")])
    s, b, _ = call("POST", f"{tb}/files/bulk-upload", key, raw=raw, content_type=ctype)
    expect("bulk upload outside the sandbox: 400", s, 400, b)
    # The daemon takes the parts in order: a file before its path is refused, nothing written
    # (srv apps/daemon/pkg/toolbox/fs/upload_files.go, "missing .path metadata").
    raw, ctype = multipart([("files[0].file", "x", b"x"), ("files[0].path", None, b"late.txt")])
    s, b, _ = call("POST", f"{tb}/files/bulk-upload", key, raw=raw, content_type=ctype, invalid=True)
    expect("bulk upload, a file before its path: 400", s, 400, b)
    truth("bulk upload, a file before its path: named", any("missing .path metadata" in e for e in b["errors"]), b)
    s, b, _ = call("GET", f"{tb}/files/info?path=late.txt", key)
    expect("bulk upload, a file before its path: not written", s, 404, b)
    s, b, _ = call("POST", f"{tb}/files/upload-v2?path=v2/c.txt", key, raw=b"gamma", content_type="application/octet-stream")
    expect("upload-v2, raw body", s, 200, b)
    raw, ctype = multipart([("file", "d.txt", b"delta")])
    s, b, _ = call("POST", f"{tb}/files/upload-v2?path=v2/d.txt", key, raw=raw, content_type=ctype)
    expect("upload-v2, multipart", s, 200, b)
    s, b, _ = call("GET", f"{tb}/files?path=d1", key)
    expect("list a folder", s, 200, b)
    truth("list a folder: d2", [e["name"] for e in b] == ["d2"], b)
    s, b, _ = call("GET", f"{tb}/files?path=.&depth=3", key)
    expect("list with depth", s, 200, b)
    s, b, _ = call("GET", f"{tb}/files?path=nope", key)
    expect("list a missing folder: 404", s, 404, b)
    s, b, _ = call("GET", f"{tb}/files/info?path=d1/d2/a.txt", key)
    expect("info", s, 200, b)
    truth("info: size and mode", b["size"] == 6 and b["mode"] == "-rw-r--r--" or b["mode"].startswith("-"), b)
    s, b, _ = call("GET", f"{tb}/files/info?path=nope.txt", key)
    expect("info of a missing file: 404", s, 404, b)
    s, b, _ = call("GET", f"{tb}/files/info?path=/etc/passwd", key)
    expect("info outside the sandbox: 403", s, 403, b)
    s, b, payload = call("GET", f"{tb}/files/download?path=d1/d2/a.txt", key)
    expect("download", s, 200, b)
    truth("download: bytes", payload == b"alpha\n", payload)
    s, b, _ = call("GET", f"{tb}/files/download?path=d1", key)
    expect("download a folder: 400", s, 400, b)
    s, b, payload = call("POST", f"{tb}/files/bulk-download", key, {"paths": ["d1/d2/a.txt", "missing.txt", "d1"]})
    expect("bulk download (a file, a missing one, a folder)", s, 200, b)
    truth("bulk download: one part per path", payload.count(b"--DAYTONA-FILE-BOUNDARY\r\n") == 3, payload[:200])
    s, b, _ = call("POST", f"{tb}/files/bulk-download", key, {"paths": []})
    expect("bulk download of nothing: 400", s, 400, b)
    s, b, _ = call("GET", f"{tb}/files/search?path=.&pattern=*.txt", key)
    expect("search", s, 200, b)
    s, b, _ = call("POST", f"{tb}/files/move?source=v2/c.txt&destination=v2/d.txt", key)
    expect("move onto an existing file: 409", s, 409, b)
    s, b, _ = call("POST", f"{tb}/files/move?source=v2/c.txt&destination=v2/e.txt", key)
    expect("move", s, 200, b)
    s, b, _ = call("DELETE", f"{tb}/files?path=d1", key)
    expect("delete a folder without recursive: 400", s, 400, b)
    s, b, _ = call("DELETE", f"{tb}/files?path=d1&recursive=true", key)
    expect("delete a folder", s, 204, b)
    s, b, _ = call("DELETE", f"{tb}/files?path=d1", key)
    expect("delete a missing file: 404", s, 404, b)
    s, b, _ = call("POST", f"{tb}/process/execute", key, {"command": "pwd; echo $X; cat v2/e.txt; exit 7",
                                                          "envs": {"X": "ex"}, "timeout": 10})
    expect("execute", s, 200, b)
    truth("execute: cwd, env, files, exit code", b == {"exitCode": 7, "result": f"{work}\nex\ngamma"}, b)
    s, b, _ = call("POST", f"{tb}/process/execute", key, {"command": "mkdir -p sub && cd sub && pwd", "cwd": ".", "timeout": 10})
    expect("execute with cwd", s, 200, b)
    s, b, _ = call("POST", f"{tb}/process/execute", key, {"command": "echo partial; sleep 5", "timeout": 1})
    expect("execute past its timeout: 408", s, 408, b)
    truth("408: no output, REQUEST_TIMEOUT", isinstance(b, dict) and b.get("code") == "REQUEST_TIMEOUT" and "partial" not in json.dumps(b), b)
    s, b, _ = call("POST", f"{tb}/process/execute", key, {"command": ""})
    expect("execute nothing: 400", s, 400, b)

    # Lifecycle: stop, stopped toolbox, archive, start, state hooks.
    s, b, _ = call("POST", f"{api}/sandbox/{sid}/stop", key)
    expect("stop", s, 200, b)
    truth("stopped", wait_state(api, key, sid, {"stopped"})["state"] == "stopped")
    s, b, _ = call("POST", f"{tb}/process/execute", key, {"command": "true", "timeout": 5})
    expect("toolbox of a stopped sandbox: 400", s, 400, b)
    truth("no IP address found. Is the Sandbox started?", (b or {}).get("message") == NO_IP
          and b.get("code") == "BAD_REQUEST", b)
    s, b, _ = call("POST", f"{api}/sandbox/{sid}/stop", key)
    expect("stop a stopped sandbox: 400", s, 400, b)
    s, b, _ = call("POST", f"{api}/sandbox/{sid}/archive", key)
    expect("archive", s, 200, b)
    truth("archived", wait_state(api, key, sid, {"archived"})["state"] == "archived")
    s, b, _ = call("GET", f"{tb}/files?path=.", key)
    expect("toolbox of an archived sandbox: 400", s, 400, b)
    truth("failed to get runner info", (b or {}).get("message", "").startswith("failed to get runner info: "), b)
    s, b, _ = call("POST", f"{api}/sandbox/{sid}/start", key)
    expect("start an archived sandbox", s, 200, b)
    truth("started again", wait_state(api, key, sid, {"started"})["state"] == "started")
    s, b, _ = call("POST", f"{api}/sandbox/{sid}/start", key)
    expect("start a started sandbox: no-op 200", s, 200, b)
    s, b, _ = call("POST", f"{root}/_fake/sandbox/{sid}", None, {"state": "error", "errorReason": "disk gone"})
    expect("hook: set state error", s, 200, b)
    s, b, _ = call("GET", f"{api}/sandbox/{sid}", key)
    truth("state error with its reason", b.get("state") == "error" and b.get("errorReason") == "disk gone", b)
    s, b, _ = call("POST", f"{api}/sandbox/{sid}/start", key)
    expect("start an errored sandbox: 400", s, 400, b)
    s, b, _ = call("POST", f"{api}/sandbox/{sid}/recover", key)
    expect("recover a sandbox that is not recoverable: 400", s, 400, b)
    call("POST", f"{root}/_fake/sandbox/{sid}", None, {"recoverable": True})
    s, b, _ = call("POST", f"{api}/sandbox/{sid}/recover", key)
    expect("recover a recoverable one: 200", s, 200, b)
    truth("recovered: started, no reason left", b.get("state") == "started" and not b.get("errorReason"), b)

    # The fake clock: auto-stop after autoStopInterval idle minutes, last-activity resets it,
    # auto-archive after autoArchiveInterval, autoDeleteInterval 0 deletes on the stop.
    clock = f"{root}/_fake/clock"
    s, b, _ = call("POST", f"{api}/sandbox/{sid}/autostop/15", key)
    call("POST", clock, None, {"advance_seconds": 10 * 60})
    s, b, _ = call("POST", f"{api}/sandbox/{sid}/last-activity", key)
    expect("last-activity", s, 201, b)
    call("POST", clock, None, {"advance_seconds": 10 * 60})
    s, b, _ = call("GET", f"{api}/sandbox/{sid}", key)
    truth("20 minutes with activity at 10: still started", b.get("state") == "started", b.get("state"))
    call("POST", clock, None, {"advance_seconds": 6 * 60})
    s, b, _ = call("GET", f"{api}/sandbox/{sid}", key)
    truth("16 minutes idle: auto-stopped", b.get("state") == "stopped", b.get("state"))
    call("POST", clock, None, {"advance_seconds": 7 * 24 * 3600})
    s, b, _ = call("GET", f"{api}/sandbox/{sid}", key)
    truth("7 days stopped: auto-archived", b.get("state") == "archived", b.get("state"))
    call("POST", hooks, None, {"autoClock": True, "startSeconds": 20})
    s, b, _ = call("POST", f"{api}/sandbox/{sid}/start", key)
    expect("start an archived sandbox: answered at once", s, 200, b)
    truth("restoring", b.get("state") == "restoring", b.get("state"))
    s, b, _ = call("GET", f"{api}/sandbox/{sid}", key)
    truth("hook autoClock: the poll finds it started", b.get("state") == "started", b.get("state"))
    call("POST", f"{api}/sandbox/{sid}/stop", key)
    wait_state(api, key, sid, {"stopped"})
    s, b, _ = call("POST", f"{api}/sandbox/{sid}/start", key)
    truth("a 20-second start is held until started", s == 200 and b.get("state") == "started", (s, b))
    call("POST", hooks, None, {"autoClock": None, "startSeconds": None})
    s, b, _ = call("POST", f"{api}/sandbox", key, {"name": f"{name}-eph", "autoDeleteInterval": 0})
    eph = b["id"]
    call("POST", clock, None, {"advance_seconds": 16 * 60})
    s, b, _ = call("GET", f"{api}/sandbox/{eph}", key)
    expect("autoDeleteInterval 0: deleted when it auto-stops", s, 404, b)
    s, b, _ = call("GET", f"{root}/toolbox/{eph}/files?path=.", key)
    expect("toolbox of a deleted sandbox: 401", s, 401, b)

    # Throttling, the proxy's empty 502, key permissions, suspension, quotas.
    call("POST", hooks, None, {"fail": [{"route": "GET /sandbox/{sandboxIdOrName}", "status": 429,
                                         "throttler": "sandbox-lifecycle", "retryAfter": 2},
                                        {"route": "GET /toolbox/{sandboxId}/files", "status": 502, "empty": True}]})
    s, b, _ = call("GET", f"{api}/sandbox/{sid}", key)
    expect("hook: throttled", s, 429, b)
    truth("Retry-After-sandbox-lifecycle: 2", LAST_HEADERS.get("retry-after-sandbox-lifecycle") == "2", LAST_HEADERS)
    s, b, payload = call("GET", f"{tb}/files?path=.", key)
    expect("hook: the proxy's 502", s, 502, b)
    truth("an empty 502", payload == b"", payload)
    call("POST", hooks, None, {"fail": None, "keyPermissions": ["write:sandboxes"]})
    s, b, _ = call("DELETE", f"{api}/sandbox/{sid}", key)
    expect("a key without delete:sandboxes: 403", s, 403, b)
    truth("Forbidden resource", (b or {}).get("message") == "Forbidden resource", b)
    call("POST", hooks, None, {"keyPermissions": []})
    s, b, _ = call("POST", f"{api}/sandbox", key, {"name": f"{name}-noperm"})
    expect("a key without write:sandboxes: 403", s, 403, b)
    s, b, _ = call("GET", f"{api}/sandbox?limit=1", key)
    expect("a key without permissions still lists", s, 200, b)
    call("POST", hooks, None, {"keyPermissions": None, "suspended": "payment overdue"})
    s, b, _ = call("POST", f"{api}/sandbox", key, {"name": f"{name}-susp"})
    expect("a suspended organization: 403", s, 403, b)
    truth("Organization is suspended: <reason>", (b or {}).get("message") == "Organization is suspended: payment overdue", b)
    call("POST", hooks, None, {"suspended": None, "quota": "disk"})
    s, b, _ = call("POST", f"{api}/sandbox", key, {"name": f"{name}-disk"})
    expect("no disk left: 400", s, 400, b)
    truth("Total disk limit exceeded", (b or {}).get("message", "").startswith("Total disk limit exceeded."), b)
    call("POST", hooks, None, {"quota": None})
    call("POST", f"{api}/sandbox/{sid}/start", key)  # the 16 minutes above stopped it too
    s, b, _ = call("GET", f"{tb}/files/download?path=.", key)
    expect("download a folder: 400", s, 400, b)
    truth("path must be a file", (b or {}).get("message") == "path must be a file", b)
    raw, ctype = multipart([("files[0].path", None, b"  spaced.txt "), ("files[0].file", "x", b"s")])
    s, b, _ = call("POST", f"{tb}/files/bulk-upload", key, raw=raw, content_type=ctype)
    truth("bulk upload trims the path's spaces", s == 200 and b["files"][0]["path"] == "spaced.txt", (s, b))
    call("POST", f"{root}/_fake/sandbox/{sid}", None, {"state": "stopped", "errorReason": None})

    # Hooks: slow and failing builds, slow snapshot start, redirect, failures, toolbox URL, old daemon.
    call("POST", hooks, None, {"names": {f"{name}-slow": {"buildSeconds": 2},
                                         f"{name}-bad": {"buildSeconds": 0.2, "buildFail": "FROM image not found"},
                                         f"{name}-badsnap": {"buildSeconds": 0.1, "buildFail": "no runner"}}})
    s, b, _ = call("POST", f"{api}/sandbox", key, {"name": f"{name}-slow", "buildInfo": {"dockerfileContent": "FROM python:3.12\n"},
                                                   "cpu": 1, "memory": 1, "disk": 3, "labels": labels})
    expect("create from an image", s, 200, b)
    truth("an image create answers pending_build", b.get("state") == "pending_build", b.get("state"))
    slow = b["id"]
    s, b, _ = call("GET", f"{api}/sandbox/{slow}", key)
    truth("still building", b.get("state") in ("pending_build", "building_snapshot", "starting"), b.get("state"))
    truth("then started", wait_state(api, key, slow, {"started", "build_failed"})["state"] == "started")
    s, b, _ = call("POST", f"{api}/sandbox", key, {"name": f"{name}-bad", "buildInfo": {"dockerfileContent": "FROM nope\n"}})
    expect("create from a bad image", s, 200, b)
    sb = wait_state(api, key, b["id"], {"started", "build_failed"})
    truth("build_failed with its reason", sb["state"] == "build_failed" and sb.get("errorReason") == "FROM image not found", sb)
    s, b, _ = call("DELETE", f"{api}/sandbox/{b['id']}", key)
    expect("delete a failed build", s, 200, b)
    s, b, _ = call("POST", f"{api}/sandbox", key, {"name": f"{name}-badsnap"})
    expect("a snapshot create that fails to start: 400", s, 400, b)
    truth("Sandbox failed to start: <reason>", (b or {}).get("message") == "Sandbox failed to start: no runner", b)
    s, b, _ = call("GET", f"{api}/sandbox/{name}-badsnap", key)
    truth("the failed sandbox exists, in error", s == 200 and b.get("state") == "error", (s, b))
    call("DELETE", f"{api}/sandbox/{name}-badsnap", key)

    call("POST", hooks, None, {"redirect": {"status": 307, "location": "http://127.0.0.1:9/elsewhere",
                                            "pathPrefix": "/api/sandbox", "times": 1}})
    s, b, _ = call("GET", f"{api}/sandbox/{sid}", key)
    expect("hook: redirect", s, 307, b)
    s, b, _ = call("GET", f"{api}/sandbox/{sid}", key)
    expect("the redirect was once", s, 200, b)
    call("POST", hooks, None, {"redirect": None, "fail": [{"route": "DELETE /sandbox/{sandboxIdOrName}", "status": 503, "times": 1},
                                                          {"route": "POST /toolbox/{sandboxId}/process/execute", "status": 500, "times": 1}]})
    s, b, _ = call("DELETE", f"{api}/sandbox/{slow}", key)
    expect("hook: a failing delete", s, 503, b)
    s, b, _ = call("POST", f"{root}/toolbox/{slow}/process/execute", key, {"command": "true", "timeout": 5})
    expect("hook: a failing execute", s, 500, b)
    s, b, _ = call("DELETE", f"{api}/sandbox/{slow}", key)
    expect("delete after the failure", s, 200, b)
    truth("delete renames and is destroying", b.get("state") == "destroying" and b.get("name", "").startswith(f"DESTROYED_{name}-slow_"), b)
    s, b, _ = call("DELETE", f"{api}/sandbox/{slow}", key)
    expect("delete while destroying: 409", s, 409, b)
    truth("destroyed: 404", wait_state(api, key, slow, {"never"})["state"] == "HTTP 404")
    s, b, _ = call("DELETE", f"{api}/sandbox/{slow}", key)
    expect("delete a destroyed sandbox: 404", s, 404, b)

    call("POST", hooks, None, {"fail": None, "toolboxProxyUrl": "http://127.0.0.1:9/toolbox", "oldDaemon": True})
    s, b, _ = call("POST", f"{api}/sandbox", key, {"name": f"{name}-old", "autoDeleteInterval": 0})
    expect("create with hooks toolboxProxyUrl and oldDaemon", s, 200, b)
    old = b["id"]
    truth("toolboxProxyUrl elsewhere", b.get("toolboxProxyUrl") == "http://127.0.0.1:9/toolbox", b.get("toolboxProxyUrl"))
    call("POST", hooks, None, {"toolboxProxyUrl": None, "oldDaemon": None})
    otb = f"{root}/toolbox/{old}"
    for method, path, want in (("GET", "/files/info?path=missing", 404), ("GET", "/files?path=missing", 404),
                               ("GET", "/files/download?path=missing", 404), ("DELETE", "/files?path=missing", 404),
                               ("POST", "/files/move?source=missing&destination=x", 404)):
        s, b, payload = call(method, otb + path, key)
        expect(f"old daemon: {method} {path.split('?')[0]}", s, want, b)
        truth(f"old daemon: {method} {path.split('?')[0]}: empty body", payload == b"", payload)
    s, b, payload = call("POST", f"{otb}/files/upload-v2?path=x", key, raw=b"x", content_type="application/octet-stream")
    expect("old daemon: no upload-v2", s, 404, b)
    s, b, _ = call("POST", f"{api}/sandbox/{old}/stop", key)
    expect("stop an ephemeral sandbox", s, 200, b)
    truth("an ephemeral sandbox is deleted when it stops", wait_state(api, key, old, {"never"})["state"] == "HTTP 404")

    call("POST", hooks, None, {"listLagSeconds": 30})
    s, b, _ = call("POST", f"{api}/sandbox", key, {"name": f"{name}-lag", "labels": {"lag": run}})
    lag = b["id"]
    s, b, _ = call("GET", f"{api}/sandbox?" + urllib.parse.urlencode({"labels": json.dumps({"lag": run})}), key)
    truth("hook listLagSeconds: a new sandbox is not listed yet", s == 200 and b["items"] == [], b)
    call("POST", hooks, None, {"listLagSeconds": None, "names": None})
    call("DELETE", f"{api}/sandbox/{lag}", key)

    # A new sandbox's home holds the default snapshot's dotfiles and the daemon's .daytona.
    s, b, _ = call("POST", f"{api}/sandbox", key, {"name": f"{name}-home", "labels": {"home": run}})
    home_id = b["id"]
    htb = f"{b['toolboxProxyUrl']}/{home_id}"
    s, b, _ = call("GET", f"{htb}/files?path=.", key)
    truth("a new home holds the snapshot's dotfiles", s == 200 and {".bashrc", ".profile", ".zshrc", ".daytona"}
          <= {e["name"] for e in b}, b)
    # A name that is not UTF-8: U+FFFD in Daytona's JSON; raw bytes only with the hook rawNames.
    s, b, _ = call("POST", f"{htb}/process/execute", key,
                   {"command": "mkdir -p odd && printf x > \"odd/bad$(printf '\\377')name\" && printf y > odd/good", "timeout": 10})
    expect("make a file whose name is not UTF-8", s, 200, b)
    s, b, payload = call("GET", f"{htb}/files?path=odd", key)
    truth("a name that is not UTF-8 arrives with U+FFFD", s == 200 and sorted(e["name"] for e in b)
          == ["bad\ufffdname", "good"] and b"\\ufffd" in payload, payload)
    call("POST", hooks, None, {"rawNames": True})
    s, b, payload = call("GET", f"{htb}/files?path=odd", key)
    truth("hook rawNames: the name's raw bytes", s == 200 and b"bad\xffname" in payload, payload)
    call("POST", hooks, None, {"rawNames": None, "bareList": True})
    s, b, _ = call("GET", f"{api}/sandbox?" + urllib.parse.urlencode({"labels": json.dumps({"home": run}), "limit": 1}), key)
    truth("hook bareList: a bare array, no cursor", s == 200 and isinstance(b, list) and [x["id"] for x in b] == [home_id], b)
    call("POST", hooks, None, {"bareList": None})
    call("DELETE", f"{api}/sandbox/{home_id}", key)

    s, b, _ = call("GET", f"{root}/_fake/requests", None)
    truth("request counts", s == 200 and b["counts"].get("POST /toolbox/{sandboxId}/process/execute", 0) >= 4
          and b["counts"].get("GET /sandbox/{sandboxIdOrName}", 0) >= 3, b)

    s, b, _ = call("DELETE", f"{api}/sandbox/{sid}", key)
    expect("delete", s, 200, b)
    truth("destroyed", wait_state(api, key, sid, {"never"})["state"] == "HTTP 404")
    s, b, _ = call("POST", f"{api}/sandbox", key, {"name": name})
    expect("the name is free again", s, 200, b)
    call("DELETE", f"{api}/sandbox/{b['id']}", key)

    if FAILURES:
        print(f"contract drive: {len(FAILURES)} failure(s):")
        for f in FAILURES:
            print("  " + f)
        return 1
    print("contract drive: every route answered as expected")
    return 0
