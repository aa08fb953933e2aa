#!/usr/bin/env python3
"""A FAKE Daytona for tests: not Daytona, not derived from its server code.

One local HTTP server (Python 3.11 standard library only) that answers the subset of Daytona's main
API and per-sandbox toolbox that issue 28 needs, shaped after the OpenAPI documents in
`tests/peer/daytona/specs/` (api.json, toolbox.json; `daytona/clients@v0.205.1`) and the behaviour
`docs/daytona.md` collects from the SDK and the old server source. Its contract is checked
two ways: `contract.py` (every request it received matches a documented operation; every answer it
sent validates against the documented schema) and `sdk_check.py` (the official Python SDK,
`daytona==0.226.1`, drives it). Where this fake guesses (nothing in the documents or the sources
says), the code says "guess".

Start:  fake_daytona.py [PORT]      (or env PORT; 0 or nothing = a free port)
Prints: DAYTONA_URL=http://127.0.0.1:PORT        the server root
        DAYTONA_API_URL=http://127.0.0.1:PORT/api  what the SDK calls api_url
        DAYTONA_API_KEY=<key>
then serves until standard input reaches end of file (the process holding the other end exits).

Layout (like Daytona Cloud's `https://app.daytona.io/api` and `https://proxy.app.daytona.io/toolbox`):
  {root}/api/...                          main API (api.json paths; `GET /config` names the
                                          default snapshot)
  {root}/toolbox/{sandboxId}/...          each sandbox's toolbox (toolbox.json paths); every
                                          sandbox's `toolboxProxyUrl` is `{root}/toolbox`
  {root}/_fake/...                        test hooks (below); not Daytona, never logged or counted

Environment:
  DAYTONA_FAKE_API_KEY     the one accepted key (default `fake-daytona-key`); `Authorization:
                           Bearer <key>` on every API and toolbox request, else 401
  DAYTONA_FAKE_ORG_ID      the organization of that key (default `fake-org-0001`)
  DAYTONA_FAKE_SNAPSHOTS   comma-separated snapshot names that exist (default
                           `daytonaio/sandbox:fake,fake-python`); the first is the org's default
  DAYTONA_FAKE_ROOT        where sandboxes' folders go (default: a new temp dir, removed at exit)
  DAYTONA_FAKE_LOG         a JSONL file: one line per API/toolbox request with its answer
                           (method, path, query, contentType, body or multipart field names,
                           status, response content type and body); contract.py checks it

Sandboxes: names are unique per organization among sandboxes not destroyed (409). A create from a
snapshot passes `creating` -> `starting` -> `started`; the API waits up to 30 s for `started` before
it answers (as Daytona does), and answers 400 `Sandbox failed to start: <errorReason>` if the start
fails (the sandbox then exists, in `error`). A create from an image (`buildInfo`) answers at once in
`pending_build`, then passes `building_snapshot` -> `starting` -> `started` (or `build_failed`).
Delete renames the sandbox to `DESTROYED_<name>_<epoch ms>` (the name is free again at once), sets
`desiredState: destroyed`, state `destroying`, then `destroyed` (404 from then on; its folder is
removed). Stop of a sandbox with `autoDeleteInterval: 0` deletes it (ephemeral). Each sandbox has a
real folder; its work dir and home are that folder's real absolute path (the toolbox reports it at
`/work-dir`, `/user-home-dir`), holding what the default snapshot's home holds (`HOME_FILES`:
dotfiles and the daemon's `.daytona/`), relative paths resolve there, and paths outside it are refused (403;
a real sandbox would allow them). `process/execute` really runs `sh -c <command>` there (Daytona
pipes the command to the first of zsh/bash/sh: the fake always uses sh).

The fake has a clock of its own: the real time plus what tests moved it by (`POST /_fake/clock`).
Transitions, `lastActivityAt` and the intervals run on it: a started sandbox idle
`autoStopInterval` minutes stops, a stopped one idle `autoDeleteInterval` minutes (0 = at once) is
deleted, else idle `autoArchiveInterval` minutes (0 = 30 days) is archived, all measured from
`lastActivityAt` (srv apps/api/src/sandbox/managers/sandbox.manager.ts). Activity is a toolbox
request (the proxy records it) or `POST /sandbox/{id}/last-activity`; a process left running is not.
Create, start and recover hold their answer until the sandbox is `started`, at most 30 s of the fake
clock (srv sandbox.controller.ts waitForSandboxStarted); an archived sandbox's start answers at once
(`restoring`).

A toolbox request to a sandbox that is not running is answered as Daytona's proxy and runner do
(`not_running` below): stopped/starting/error 400 `failed to resolve container IP after 3 attempts:
no IP address found. Is the Sandbox started?`; archived/restoring 400 `failed to get runner info:
Sandbox with ID <id> does not have a runner`; deleted or unknown 401 `authentication failed: Bearer
token is invalid`.

Not modelled: TTL never fires; no Socket.IO events (clients poll; the SDK check runs
the SDK with `use_deprecated_polling`); quotas, suspension, key permissions and throttling only as hooks
ask (below); no sessions, git, LSP, ports, volumes or the deprecated page-numbered `GET /sandbox/paginated`.

Quirks replayed (daytona.md section in brackets):
  - main-API errors are NestJS bodies `{path,timestamp,statusCode,error,message}` [1.5]
  - interval routes (autostop/autoarchive/autodelete/autopause/ttl) answer 201, not the documented
    200 [1.2]; `last-activity` answers 201 with no body
  - `process/execute` past its `timeout` (seconds; only when > 0): the process group is killed and
    the answer is 408 ErrorResponse `REQUEST_TIMEOUT` with no partial output [1.3]
  - bulk-download answers `multipart/form-data; boundary=DAYTONA-FILE-BOUNDARY`, one `file` or
    `error` part per path; an empty request is 400 `{"error": ...}` (not ErrorResponse) [1.4]
  - bulk-upload takes `files[i].path` and `files[i].file` in that order (a file part before its
    path is `file[i]: missing .path metadata`), creates parents, writes each file through a
    temporary file renamed over it, answers `{"files":[{"path","bytes"}]}`; failures 400
    `{"errors":[...],"files":[...]}` [1.4]
  - old daemons (hook `oldDaemon`): errors of list/info/delete/download/move/mkdir have an EMPTY
    body, and `upload-v2` is 404 [1.4, 1.5]
  - toolbox errors are ErrorResponse `{statusCode,message,code,timestamp,path,method,source}` [1.5]
  - the list is cursor-paged (`limit` 1..200, default 100; `nextCursor` null at the end), filters by
    JSON `labels` containment (400 `Invalid labels JSON format`), never lists `destroyed` [1.2]

Test hooks (JSON in, JSON out; none of this exists in Daytona):
  POST /_fake/hooks  {..}      merge into the global hooks; `null` removes a key. Keys:
      buildSeconds: float      how long a create takes to reach `started` (default 0.05)
      buildFail: "reason"      creates end in `build_failed` (image) / `error` (snapshot) with
                               this `errorReason`
      startSeconds, stopSeconds, destroySeconds: float   other transitions (default 0.05)
      createWaitSeconds: float how long a snapshot create waits for `started` (default 30)
      listLagSeconds: float    sandboxes younger than this are not listed (eventual consistency)
      oldDaemon: bool          new sandboxes get daemonVersion 0.190.0 (empty error bodies, no
                               upload-v2)
      toolboxProxyUrl: "url"   new sandboxes report this `toolboxProxyUrl` instead of the fake's
      redirect: {"status": 307, "location": "http://...", "pathPrefix": "/api/sandbox",
                 "times": 1}   API requests under pathPrefix answer this redirect (times: how
                               many; absent = until removed)
      fail: [{"route": "DELETE /sandbox/{sandboxIdOrName}", "status": 503, "times": 1}]
                               the next `times` requests to that route answer that status
                               (NestJS body on the API, ErrorResponse on the toolbox); with
                               "path": "notes", only toolbox requests whose `path` query is that;
                               "empty": true answers no body (the proxy's 502); a 429 carries
                               Daytona's throttler headers for "throttler" (default
                               authenticated) with "retryAfter" seconds (default 1); "message"
                               replaces the message
      keyPermissions: [..]     the key has only these (write:sandboxes, delete:sandboxes): a
                               route needing another is 403 `Forbidden resource`
      suspended: true|"why"    create/start/recover are 403 `Organization is suspended[: why]`
      quota: "disk"|"region"   create is 400 `Total disk limit exceeded…` / 403 `Region us is not
                               available…`
      autoClock: bool          a request held for a transition (create, start, recover) or a GET
                               of a sandbox in one moves the fake clock to its end instead of
                               waiting in real time
      startSeconds, restoreSeconds, startWaitSeconds: float   a start's length (fake clock), an
                               archived sandbox's restore, how long a start is held (default 30)
      names: {"<sandbox name>": {buildSeconds, buildFail, ...}}   per-name overrides of the above
                               creation keys
      bareList: bool           `GET /sandbox` answers as a self-hosted Daytona before v0.180: a
                               bare array of every matching sandbox, no cursor
      unreadable: ["workspace/a.txt"]   files (relative to the sandbox's home) the daemon cannot
                               open: bulk-download answers an `error` part (403 FILE_ACCESS_DENIED)
                               for each, as its os.Open failing would
      rawNames: bool           NOT Daytona: `GET /files` sends names that are not UTF-8 as their
                               raw bytes (Daytona sends U+FFFD in their place), so its body is not
                               valid UTF-8
  GET  /_fake/hooks                          the hooks now
  POST /_fake/clock  {"advance_seconds": n}  move the fake clock (transitions and intervals due
                                             meanwhile fire); GET /_fake/clock reads it
  POST /_fake/sandbox/{idOrName}  {"state": "stopped"|"archived"|"error"|..., "errorReason": "..",
       "recoverable": bool, "toolboxProxyUrl": "url", "daemonVersion": ".."}   set fields now
       (cancels pending transitions); answers the sandbox
  GET  /_fake/sandboxes                      every sandbox (also destroyed) with its folder
  GET  /_fake/requests                       {"counts": {"GET /sandbox/{sandboxIdOrName}": n,
       "POST /toolbox/{sandboxId}/process/execute": n, ...}, "total": n}  (route = method and spec
       path template; the toolbox's under /toolbox/{sandboxId})
  POST /_fake/requests/reset                 zero the counts
  A request with the header `X-Fake-Expect-Invalid: 1` is logged with `expectInvalid: true`: a test
  that sends a request the documents forbid on purpose (contract.py then checks it does NOT match)
"""

from __future__ import annotations

import base64
import http.server
import json
import os
import re
import shutil
import signal
import socketserver
import stat
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import uuid
from datetime import datetime, timezone

API_KEY = os.environ.get("DAYTONA_FAKE_API_KEY", "fake-daytona-key")
ORG_ID = os.environ.get("DAYTONA_FAKE_ORG_ID", "fake-org-0001")
SNAPSHOTS = [s.strip() for s in os.environ.get("DAYTONA_FAKE_SNAPSHOTS", "daytonaio/sandbox:fake,fake-python").split(",") if s.strip()]
LOG_PATH = os.environ.get("DAYTONA_FAKE_LOG") or None
DAEMON_VERSION = "0.226.1"
OLD_DAEMON_VERSION = "0.190.0"
BOUNDARY = "DAYTONA-FILE-BOUNDARY"
TRANSITIONAL = {"creating", "starting", "stopping", "destroying", "restoring", "archiving", "pulling_snapshot",
                "building_snapshot", "resizing", "snapshotting", "forking", "pausing", "resuming"}

LOCK = threading.RLock()
# Woken whenever the fake clock moves or a sandbox changes state: a request held until a sandbox
# starts (create, start, recover) waits on it.
CHANGED = threading.Condition(LOCK)
# The fake clock: the real time plus what tests moved it by (POST /_fake/clock).
CLOCK = {"offset": 0.0}
LOG_LOCK = threading.Lock()
HOOKS: dict = {}
COUNTS: dict[str, int] = {}
SANDBOXES: dict[str, dict] = {}  # id -> sandbox record
SNAPSHOT_RECORDS: dict[str, dict] = {}
ROOT = ""
BASE_URL = ""


def now() -> float:
    """The fake clock's time (seconds since the epoch)."""
    return time.time() + CLOCK["offset"]


def advance_clock(seconds: float):
    """Moves the fake clock: transitions and intervals that fall due meanwhile fire."""
    with LOCK:
        CLOCK["offset"] += max(0.0, float(seconds))
        for sb in SANDBOXES.values():
            settle(sb)
        CHANGED.notify_all()


def now_iso(t: float | None = None) -> str:
    t = now() if t is None else t
    return datetime.fromtimestamp(t, timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class Answer(Exception):
    """An HTTP answer raised from inside a handler."""

    def __init__(self, status: int, body=None, content_type: str | None = "application/json", headers=None):
        super().__init__(status)
        self.status = status
        self.body = body
        self.content_type = content_type
        self.headers = headers or {}


REASONS = {400: "Bad Request", 401: "Unauthorized", 403: "Forbidden", 404: "Not Found", 408: "Request Timeout",
           409: "Conflict", 410: "Gone", 422: "Unprocessable Entity", 429: "Too Many Requests",
           500: "Internal Server Error", 502: "Bad Gateway", 503: "Service Unavailable"}
CODES = {400: "BAD_REQUEST", 401: "UNAUTHORIZED", 403: "FORBIDDEN", 404: "NOT_FOUND", 408: "REQUEST_TIMEOUT",
         409: "CONFLICT", 410: "GONE", 422: "UNPROCESSABLE_ENTITY", 500: "INTERNAL_SERVER_ERROR"}


def api_error(status: int, message: str, path: str) -> Answer:
    """NestJS AllExceptionsFilter body (daytona.md 1.5)."""
    return Answer(status, {"path": path, "timestamp": now_iso(), "statusCode": status,
                           "error": REASONS.get(status, "Error"), "message": message})


def suspended(path: str):
    """Hook `suspended` (true or a reason): 403 `Organization is suspended[: reason]` on create,
    start and recover (srv apps/api/src/organization/services/organization.service.ts:875
    assertOrganizationIsNotSuspended, called by sandbox.service.ts create/start/recover)."""
    reason = HOOKS.get("suspended")
    if reason:
        raise api_error(403, "Organization is suspended" + (f": {reason}" if isinstance(reason, str) else ""), path)


def quota(path: str):
    """Hook `quota` on create: "disk" is 400 `Total disk limit exceeded…` (srv
    apps/api/src/sandbox/services/sandbox.service.ts:295, with the messages of
    apps/api/src/common/constants/error-messages.ts), "region" is 403 `Region us is not available to
    the organization for class container` (sandbox.service.ts:200, no quota for a shared region)."""
    which = HOOKS.get("quota")
    if which == "disk":
        raise api_error(400, "Total disk limit exceeded. Maximum allowed: 30GiB.\n"
                        "Consider archiving your unused Sandboxes to free up available storage.\n"
                        "To increase concurrency limits, upgrade your organization's Tier by visiting "
                        "https://app.daytona.io/dashboard/limits.", path)
    if which == "region":
        raise api_error(403, "Region us is not available to the organization for class container", path)


# What a route needs of the key (srv apps/api/src/sandbox/controllers/sandbox.controller.ts:
# @RequiredOrganizationResourcePermissions): create, start, stop, archive, recover, labels and the
# intervals need write:sandboxes; delete needs delete:sandboxes; reads need neither.
WRITE_ROUTES = {"POST /sandbox", "POST /sandbox/{sandboxIdOrName}/start", "POST /sandbox/{sandboxIdOrName}/stop",
                "POST /sandbox/{sandboxIdOrName}/archive", "POST /sandbox/{sandboxIdOrName}/recover",
                "PUT /sandbox/{sandboxIdOrName}/labels", "POST /sandbox/{sandboxIdOrName}/autostop/{interval}",
                "POST /sandbox/{sandboxIdOrName}/autoarchive/{interval}",
                "POST /sandbox/{sandboxIdOrName}/autodelete/{interval}"}


def check_permissions(route: str | None, path: str):
    """Hook `keyPermissions` (a list; absent = every permission): a route the key lacks the
    permission for is 403 `Forbidden resource` (the guard returns false, srv
    apps/api/src/organization/guards/organization-auth-context.guard.ts:198, and NestJS answers its
    ForbiddenException)."""
    granted = HOOKS.get("keyPermissions")
    if granted is None or route is None:
        return
    need = "delete:sandboxes" if route == "DELETE /sandbox/{sandboxIdOrName}" else (
        "write:sandboxes" if route in WRITE_ROUTES else None)
    if need and need not in granted:
        raise api_error(403, "Forbidden resource", path)


def daemon_error(status: int, message: str, path: str, method: str, code: str | None = None,
                 source: str = "DAYTONA_DAEMON") -> Answer:
    """The toolbox's ErrorResponse (toolbox.json ErrorResponse, daytona.md 1.5)."""
    return Answer(status, {"statusCode": status, "message": message, "code": code or CODES.get(status, "BAD_REQUEST"),
                           "timestamp": now_iso(), "path": path, "method": method, "source": source})


# ---------------------------------------------------------------------------------------------
# Sandboxes
# ---------------------------------------------------------------------------------------------

def hook(name: str, key: str, default):
    per = (HOOKS.get("names") or {}).get(name) or {}
    if key in per and per[key] is not None:
        return per[key]
    value = HOOKS.get(key)
    return default if value is None else value


def schedule(sb: dict, stages: list[tuple[float, str]]):
    """Stages: (seconds from now, state) in order."""
    t = now()
    sb["stages"] = [(t + d, s) for d, s in stages]
    settle(sb)


def settle(sb: dict):
    t = now()
    changed = False
    while sb["stages"] and sb["stages"][0][0] <= t:
        at, state = sb["stages"].pop(0)
        set_state(sb, state, at)
        changed = True
    while fire_intervals(sb, t):
        changed = True
    if changed:
        with LOCK:
            CHANGED.notify_all()


# The longest auto-archive interval (minutes); `autoArchiveInterval: 0` means this
# (srv apps/api/src/sandbox/entities/sandbox.entity.ts: 0 = the maximum; `GET /config`
# maxAutoArchiveInterval).
MAX_AUTO_ARCHIVE = 43200


def fire_intervals(sb: dict, t: float) -> bool:
    """Daytona's interval checks (srv apps/api/src/sandbox/managers/sandbox.manager.ts: autoStopCheck,
    autoArchiveCheck, autoDeleteCheck, each a cron every 10 s), measured from `lastActivityAt` as
    there: a started sandbox idle `autoStopInterval` minutes (not 0) stops; a stopped one idle
    `autoDeleteInterval` minutes (>= 0; 0 = at once) is deleted, else idle `autoArchiveInterval`
    minutes (0 = the maximum) is archived. Only sandboxes not in a transition (`pending`) and whose
    desired state is their state. Activity is what the toolbox proxy and `last-activity` record; a
    process left running in the sandbox is not activity."""
    if sb["stages"] or sb["state"] == "destroyed":
        return False
    since = sb["lastActivityAt"]
    if sb["state"] == "started" and sb["desiredState"] == "started":
        due = since + 60 * sb["autoStopInterval"]
        if sb["autoStopInterval"] and t >= due:
            sb["desiredState"] = "stopped"
            set_state(sb, "stopped", due)
            return True
        return False
    if sb["state"] == "stopped" and sb["desiredState"] == "stopped":
        due = since + 60 * sb["autoDeleteInterval"]
        if sb["autoDeleteInterval"] >= 0 and t >= due:
            start_delete(sb, due)
            return True
        due = since + 60 * (sb["autoArchiveInterval"] or MAX_AUTO_ARCHIVE)
        if t >= due:
            sb["desiredState"] = "archived"
            set_state(sb, "archived", due)
            return True
    return False


def hold_until_started(sb: dict, seconds: float, path: str) -> Answer:
    """Holds the request until the sandbox is `started`, at most `seconds` of the fake clock:
    `waitForSandboxStarted(sandbox, 30)` (srv apps/api/src/sandbox/controllers/sandbox.controller.ts:1532),
    which create, start and recover call. `error`/`build_failed` meanwhile is 400 `Sandbox failed to
    start: <errorReason>`; at the deadline the sandbox is answered as it is. With the hook
    `autoClock`, the fake clock jumps to the sandbox's next transition instead of the request
    waiting for it (a test's 20-second start takes no real time)."""
    with LOCK:
        deadline = now() + seconds
        while True:
            settle(sb)
            if sb["state"] in ("error", "build_failed"):
                raise api_error(400, f"Sandbox failed to start: {sb.get('errorReason')}", path)
            if sb["state"] in ("started", "destroyed") or now() >= deadline:
                return Answer(200, sandbox_dto(sb))
            if hook(sb["name"], "autoClock", False) and sb["stages"]:
                advance_clock(min(sb["stages"][0][0], deadline) - now() + 0.001)
                continue
            CHANGED.wait(timeout=max(0.001, min(0.05, deadline - now())))


def set_state(sb: dict, state: str, at: float | None = None):
    """`at`: when it happened on the fake clock (default now). A change of state is activity
    (srv apps/api/src/sandbox/repositories/sandbox.repository.ts:118, upsertLastActivity)."""
    at = now() if at is None else at
    if sb["state"] != state:
        sb["lastActivityAt"] = at
    sb["state"] = state
    sb["updatedAt"] = at
    if state in ("build_failed", "error") and not sb.get("errorReason"):
        sb["errorReason"] = "fake failure"
    if state == "destroyed":
        sb["stages"] = []
        shutil.rmtree(sb["dir"], ignore_errors=True)
    if state == "stopped" and sb.get("autoDeleteInterval") == 0 and sb["desiredState"] != "destroyed":
        start_delete(sb, at)


def start_delete(sb: dict, at: float | None = None):
    at = now() if at is None else at
    seconds = float(hook(sb["name"], "destroySeconds", 0.05))
    sb["name"] = f"DESTROYED_{sb['name']}_{int(at * 1000)}"
    sb["desiredState"] = "destroyed"
    sb["state"] = "destroying"
    sb["updatedAt"] = at
    sb["stages"] = [(at + seconds, "destroyed")]


def live() -> list[dict]:
    out = []
    for sb in SANDBOXES.values():
        settle(sb)
        if sb["state"] != "destroyed":
            out.append(sb)
    return out


def find(id_or_name: str, path: str) -> dict:
    sb = SANDBOXES.get(id_or_name)
    if sb is not None:
        settle(sb)
        if sb["state"] != "destroyed":
            return sb
    for sb in live():
        if sb["name"] == id_or_name:
            return sb
    raise api_error(404, f"Sandbox with ID or name {id_or_name} not found", path)


def sandbox_dto(sb: dict) -> dict:
    d = {
        "id": sb["id"], "organizationId": ORG_ID, "name": sb["name"], "snapshot": sb.get("snapshot") or "",
        "user": sb["user"], "env": sb["env"], "labels": sb["labels"], "public": sb["public"],
        "networkBlockAll": sb["networkBlockAll"],
        # `kvm` is not in the v0.205.1 document, but the 0.226.1 client's Sandbox model requires it
        # (a newer API sends it): without it the SDK cannot read a sandbox.
        "kvm": False, "target": sb["target"], "cpu": sb["cpu"], "gpu": 0,
        "memory": sb["memory"], "disk": sb["disk"], "state": sb["state"], "desiredState": sb["desiredState"],
        "recoverable": sb.get("recoverable", False), "autoStopInterval": sb["autoStopInterval"],
        "autoArchiveInterval": sb["autoArchiveInterval"], "autoDeleteInterval": sb["autoDeleteInterval"],
        "autoPauseInterval": sb["autoPauseInterval"], "volumes": [], "createdAt": now_iso(sb["createdAt"]),
        "updatedAt": now_iso(sb["updatedAt"]), "lastActivityAt": now_iso(sb["lastActivityAt"]),
        "sandboxClass": "container", "daemonVersion": sb["daemonVersion"], "runnerId": "fake-runner-1",
        "toolboxProxyUrl": sb.get("toolboxProxyUrl") or f"{BASE_URL}/toolbox",
    }
    if sb.get("errorReason"):
        d["errorReason"] = sb["errorReason"]
    if sb.get("ttlMinutes"):
        d["autoDestroyAt"] = now_iso(sb["createdAt"] + 60 * sb["ttlMinutes"])
    if sb.get("buildInfo"):
        d["buildInfo"] = {"dockerfileContent": sb["buildInfo"].get("dockerfileContent", ""),
                          "contextHashes": sb["buildInfo"].get("contextHashes") or [],
                          "createdAt": now_iso(sb["createdAt"]), "updatedAt": now_iso(sb["createdAt"]),
                          "snapshotRef": f"fake-build-{sb['id'][:8]}"}
    if sb.get("networkAllowList"):
        d["networkAllowList"] = sb["networkAllowList"]
    return d


LIST_FIELDS = ("id", "organizationId", "name", "target", "runnerId", "sandboxClass", "state", "desiredState",
               "snapshot", "user", "errorReason", "recoverable", "public", "networkBlockAll", "networkAllowList",
               "cpu", "gpu", "memory", "disk", "labels", "autoStopInterval", "autoPauseInterval",
               "autoArchiveInterval", "autoDeleteInterval", "autoDestroyAt", "createdAt", "updatedAt",
               "lastActivityAt", "daemonVersion", "toolboxProxyUrl")


def list_item(sb: dict) -> dict:
    d = sandbox_dto(sb)
    return {k: d[k] for k in LIST_FIELDS if k in d}


def snapshot_dto(name: str) -> dict:
    rec = SNAPSHOT_RECORDS.get(name)
    if rec is None:
        rec = SNAPSHOT_RECORDS[name] = {"id": str(uuid.uuid5(uuid.NAMESPACE_URL, "fake-snapshot:" + name)),
                                        "created": now()}
    return {"id": rec["id"], "organizationId": ORG_ID, "general": name == SNAPSHOTS[0], "name": name,
            "imageName": name, "state": "active", "size": 1.0, "entrypoint": None, "cpu": 1, "gpu": 0, "mem": 1,
            "disk": 3, "errorReason": None, "createdAt": now_iso(rec["created"]), "updatedAt": now_iso(rec["created"]),
            "lastUsedAt": None, "sourceSandboxId": None, "regionIds": ["us"], "ref": name,
            "sandboxClass": "container"}


def find_snapshot(id_or_name: str) -> str | None:
    for name in SNAPSHOTS:
        if name == id_or_name or snapshot_dto(name)["id"] == id_or_name:
            return name
    return None


def int_field(body: dict, key: str, path: str, default=None, minimum=None):
    v = body.get(key, default)
    if v is None:
        return default
    if isinstance(v, bool) or not isinstance(v, (int, float)) or int(v) != v:
        raise api_error(400, f"{key} must be an integer number", path)
    if minimum is not None and v < minimum:
        raise api_error(400, f"{key} must not be less than {minimum}", path)
    return int(v)


# What a new sandbox's home holds before anything is written: the default snapshot's user is made
# with `useradd -m daytona` (its skeleton: .bash_logout, .bashrc, .profile) and `touch ~/.zshrc`
# (srv v0.190.0 images/sandbox/Dockerfile:78,99), and the daemon makes `~/.daytona` as it starts
# (srv v0.190.0 apps/daemon/cmd/daemon/main.go:59, its sessions' logs). The sandbox's work dir is
# that home (the runner sets DAYTONA_USER_HOME_AS_WORKDIR when the image has no WORKDIR: srv
# apps/runner/pkg/docker/container_configs.go:151; main.go:92 chdirs there).
HOME_FILES = {
    ".bash_logout": b"# ~/.bash_logout: executed by bash(1) when login shell exits.\n",
    ".bashrc": b"# ~/.bashrc: executed by bash(1) for non-login shells.\n",
    ".profile": b"# ~/.profile: executed by the command interpreter for login shells.\n",
    ".zshrc": b"",
    ".daytona/sessions/entrypoint/entrypoint_command/output.log": b"",
}


def seed_home(folder: str):
    for name, data in HOME_FILES.items():
        full = os.path.join(folder, name)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "wb") as f:
            f.write(data)


def create_sandbox(body, path: str) -> Answer:
    if not isinstance(body, dict):
        raise api_error(400, "Invalid request body", path)
    suspended(path)
    quota(path)
    for key in ("labels", "env"):
        v = body.get(key)
        if v is not None and (not isinstance(v, dict) or not all(isinstance(x, str) for x in v.values())):
            raise api_error(400, f"{key} must be an object of strings", path)
    build_info = body.get("buildInfo")
    snapshot = body.get("snapshot")
    if build_info is not None and (not isinstance(build_info, dict) or not isinstance(build_info.get("dockerfileContent"), str)):
        raise api_error(400, "buildInfo.dockerfileContent must be a string", path)
    if snapshot and build_info:
        raise api_error(400, "Cannot specify a snapshot when using a build info entry", path)
    resources = [k for k in ("cpu", "memory", "disk", "gpu") if body.get(k) is not None]
    if resources and not build_info:
        raise api_error(400, "Cannot specify Sandbox resources when using a snapshot", path)
    if not build_info:
        if snapshot:
            found = find_snapshot(snapshot)
            if found is None:
                raise api_error(400, f"Snapshot {snapshot} not found. Did you add it through the Daytona Dashboard?", path)
            snapshot = found
        else:
            snapshot = SNAPSHOTS[0]
    auto_stop = int_field(body, "autoStopInterval", path, 15, 0)
    auto_pause = int_field(body, "autoPauseInterval", path, 0, 0)
    auto_archive = int_field(body, "autoArchiveInterval", path, 10080, 0)
    auto_delete = int_field(body, "autoDeleteInterval", path, -1, -1)
    ttl = int_field(body, "ttlMinutes", path, 0, 0)
    cpu = int_field(body, "cpu", path, 1, 1)
    memory = int_field(body, "memory", path, 1, 1)
    disk = int_field(body, "disk", path, 3, 1)
    sid = str(uuid.uuid4())
    name = body.get("name") or sid
    if not isinstance(name, str):
        raise api_error(400, "name must be a string", path)
    with LOCK:
        if any(sb["name"] == name for sb in live()):
            raise api_error(409, f"Sandbox with name {name} already exists", path)
        folder = os.path.join(ROOT, sid)
        os.makedirs(folder)
        seed_home(folder)
        t = now()
        sb = {
            "id": sid, "name": name, "labels": dict(body.get("labels") or {}), "env": dict(body.get("env") or {}),
            "user": body.get("user") or "daytona", "public": bool(body.get("public", False)),
            "networkBlockAll": bool(body.get("networkBlockAll", False)), "networkAllowList": body.get("networkAllowList"),
            "target": body.get("target") or "us", "cpu": cpu, "memory": memory, "disk": disk,
            "snapshot": snapshot, "buildInfo": build_info, "state": "creating", "desiredState": "started",
            "autoStopInterval": auto_stop, "autoPauseInterval": auto_pause, "autoArchiveInterval": auto_archive,
            "autoDeleteInterval": auto_delete, "ttlMinutes": ttl, "createdAt": t, "updatedAt": t,
            "lastActivityAt": t, "dir": folder, "stages": [],
            "daemonVersion": OLD_DAEMON_VERSION if hook(name, "oldDaemon", False) else DAEMON_VERSION,
            "toolboxProxyUrl": hook(name, "toolboxProxyUrl", None),
        }
        SANDBOXES[sid] = sb
        build = float(hook(name, "buildSeconds", 0.05))
        fail = hook(name, "buildFail", None)
        if build_info:
            sb["state"] = "pending_build"
            if fail:
                sb["errorReason"] = fail
                schedule(sb, [(build / 2, "building_snapshot"), (build, "build_failed")])
            else:
                schedule(sb, [(build / 3, "building_snapshot"), (2 * build / 3, "starting"), (build, "started")])
            return Answer(200, sandbox_dto(sb))
        if fail:
            sb["errorReason"] = fail
            schedule(sb, [(build / 2, "starting"), (build, "error")])
        else:
            schedule(sb, [(build / 2, "starting"), (build, "started")])
    # A create from a snapshot waits (up to 30 s) for the sandbox to start (daytona.md 1.2).
    return hold_until_started(sb, float(hook(name, "createWaitSeconds", 30)), path)


def list_sandboxes(query: dict, path: str) -> Answer:
    def one(key):
        v = query.get(key)
        return v[-1] if v else None

    limit = one("limit")
    try:
        limit = 100 if limit is None else float(limit)
    except ValueError:
        raise api_error(400, "limit must be a number conforming to the specified constraints", path)
    if limit != int(limit) or not 1 <= limit <= 200:
        raise api_error(400, "limit must not be greater than 200, limit must not be less than 1", path)
    limit = int(limit)
    labels = {}
    if one("labels"):
        try:
            labels = json.loads(one("labels"))
        except ValueError:
            raise api_error(400, "Invalid labels JSON format", path)
        if not isinstance(labels, dict):
            raise api_error(400, "Invalid labels JSON format", path)
    states = []
    for v in query.get("states", []):
        states += [s for s in v.split(",") if s]
    offset = 0
    if one("cursor"):
        try:
            offset = int(base64.urlsafe_b64decode(one("cursor").encode()).decode().removeprefix("fake-offset:"))
        except (ValueError, UnicodeDecodeError):
            raise api_error(400, "Invalid cursor", path)
    lag = float(HOOKS.get("listLagSeconds") or 0)
    with LOCK:
        rows = []
        for sb in live():
            if now() - sb["createdAt"] < lag:
                continue
            if any(sb["labels"].get(k) != v for k, v in labels.items()):
                continue
            if states and sb["state"] not in states:
                continue
            if sb["state"] in ("error", "build_failed") and sb["desiredState"] == "destroyed" and one("includeErroredDeleted") != "true":
                continue
            if one("name") and not sb["name"].startswith(one("name")):
                continue
            if one("id") and not sb["id"].startswith(one("id")):
                continue
            rows.append(sb)
        rows.sort(key=lambda sb: (-sb["createdAt"], sb["id"]))
        page = rows[offset:offset + limit]
        more = offset + limit < len(rows)
        cursor = base64.urlsafe_b64encode(f"fake-offset:{offset + limit}".encode()).decode() if more else None
        if HOOKS.get("bareList"):
            # A self-hosted Daytona before v0.180 (hook `bareList`): every sandbox matching the
            # labels as a bare array, no `limit` or cursor (srv v0.179.0
            # apps/api/src/sandbox/controllers/sandbox.controller.ts:128-168, listSandboxes ->
            # findAllDeprecated, `type: [SandboxDto]`).
            return Answer(200, [list_item(sb) for sb in rows])
        return Answer(200, {"items": [list_item(sb) for sb in page], "nextCursor": cursor})


def api_route(method: str, parts: list[str], query: dict, body, path: str) -> tuple[str, Answer]:
    """parts: the path after /api, split. Returns (route template, answer)."""
    n = len(parts)
    if parts[:1] == ["sandbox"]:
        if n == 1 and method == "GET":
            return "GET /sandbox", list_sandboxes(query, path)
        if n == 1 and method == "POST":
            return "POST /sandbox", create_sandbox(body, path)
        if n == 2 and method == "GET":
            with LOCK:
                sb = find(parts[1], path)
                if hook(sb["name"], "autoClock", False) and sb["stages"]:
                    # Hook autoClock: a client polling a sandbox in a transition finds the fake
                    # clock moved to the transition's end (no real waiting in tests).
                    advance_clock(sb["stages"][0][0] - now() + 0.001)
                    sb = find(parts[1], path)
                return "GET /sandbox/{sandboxIdOrName}", Answer(200, sandbox_dto(sb))
        if n == 2 and method == "DELETE":
            with LOCK:
                sb = find(parts[1], path)
                if sb["state"] in TRANSITIONAL and sb["state"] != "pending_build":
                    raise api_error(409, "Sandbox state change in progress", path)
                start_delete(sb)
                return "DELETE /sandbox/{sandboxIdOrName}", Answer(200, sandbox_dto(sb))
        if n == 3 and method == "POST" and parts[2] == "start":
            with LOCK:
                sb = find(parts[1], path)
                if sb["state"] in TRANSITIONAL or sb["state"] == "pending_build":
                    raise api_error(409, "Sandbox state change in progress", path)
                suspended(path)
                if sb["state"] in ("stopped", "archived", "paused"):
                    was = sb["state"]
                    sb["desiredState"] = "started"
                    sb["state"] = "starting" if was != "archived" else "restoring"
                    default = 0.05 if was != "archived" else float(hook(sb["name"], "restoreSeconds", 0.05))
                    schedule(sb, [(float(hook(sb["name"], "startSeconds", default)), "started")])
                    if was == "archived":
                        # An archived sandbox's start is answered at once (restoring): the
                        # controller waits only for other states (srv sandbox.controller.ts:518).
                        return "POST /sandbox/{sandboxIdOrName}/start", Answer(200, sandbox_dto(sb))
                elif sb["state"] != "started":
                    raise api_error(400, "Sandbox is not in valid state", path)
                # Held up to 30 s until started (srv sandbox.controller.ts:518, waitForSandboxStarted).
                return ("POST /sandbox/{sandboxIdOrName}/start",
                        hold_until_started(sb, float(hook(sb["name"], "startWaitSeconds", 30)), path))
        if n == 3 and method == "POST" and parts[2] == "recover":
            # srv apps/api/src/sandbox/services/sandbox.service.ts:2241 recover(): only a
            # `recoverable` sandbox in `error`; then it starts again (unless skipStart) and the
            # controller holds the answer until started (sandbox.controller.ts:476).
            with LOCK:
                sb = find(parts[1], path)
                suspended(path)
                if not sb.get("recoverable"):
                    raise api_error(400, "Sandbox is not in a recoverable state", path)
                if sb["state"] != "error":
                    raise api_error(400, "Sandbox must be in error state to recover", path)
                skip = q1(query, "skipStart") == "true"
                sb["errorReason"] = None
                sb["recoverable"] = False
                sb["desiredState"] = "stopped" if skip else "started"
                sb["state"] = "starting"
                schedule(sb, [(float(hook(sb["name"], "startSeconds", 0.05)), "stopped" if skip else "started")])
                if skip:
                    return "POST /sandbox/{sandboxIdOrName}/recover", Answer(200, sandbox_dto(sb))
                return ("POST /sandbox/{sandboxIdOrName}/recover",
                        hold_until_started(sb, float(hook(sb["name"], "startWaitSeconds", 30)), path))
        if n == 3 and method == "POST" and parts[2] == "stop":
            with LOCK:
                sb = find(parts[1], path)
                if sb["state"] in TRANSITIONAL:
                    raise api_error(409, "Sandbox state change in progress", path)
                if sb["state"] not in ("started", "paused"):
                    raise api_error(400, "Sandbox is not in a stoppable state", path)
                sb["desiredState"] = "stopped"
                sb["state"] = "stopping"
                schedule(sb, [(float(hook(sb["name"], "stopSeconds", 0.05)), "stopped")])
                return "POST /sandbox/{sandboxIdOrName}/stop", Answer(200, sandbox_dto(sb))
        if n == 3 and method == "POST" and parts[2] == "archive":
            with LOCK:
                sb = find(parts[1], path)
                if sb["state"] != "stopped":
                    raise api_error(400, "Sandbox is not stopped", path)
                if sb["autoDeleteInterval"] == 0:
                    raise api_error(400, "Ephemeral sandboxes cannot be archived", path)
                sb["desiredState"] = "archived"
                sb["state"] = "archiving"
                schedule(sb, [(float(hook(sb["name"], "stopSeconds", 0.05)), "archived")])
                return "POST /sandbox/{sandboxIdOrName}/archive", Answer(200, sandbox_dto(sb))
        if n == 4 and method == "POST" and parts[2] in ("autostop", "autoarchive", "autodelete", "autopause", "ttl"):
            field = {"autostop": "autoStopInterval", "autoarchive": "autoArchiveInterval",
                     "autodelete": "autoDeleteInterval", "autopause": "autoPauseInterval", "ttl": "ttlMinutes"}[parts[2]]
            template = f"POST /sandbox/{{sandboxIdOrName}}/{parts[2]}/" + ("{ttlMinutes}" if parts[2] == "ttl" else "{interval}")
            try:
                value = int(parts[3])
            except ValueError:
                raise api_error(400, "Validation failed (numeric string is expected)", path)
            if value < (-1 if field == "autoDeleteInterval" else 0):
                raise api_error(400, f"{field} must not be negative", path)
            with LOCK:
                sb = find(parts[1], path)
                sb[field] = value
                sb["updatedAt"] = now()
                # 201, not the documented 200: the controller has no @HttpCode (daytona.md 1.2).
                return template, Answer(201, sandbox_dto(sb))
        if n == 3 and method == "PUT" and parts[2] == "labels":
            labels = body.get("labels") if isinstance(body, dict) else None
            if not isinstance(labels, dict) or not all(isinstance(v, str) for v in labels.values()):
                raise api_error(400, "labels must be an object of strings", path)
            with LOCK:
                sb = find(parts[1], path)
                sb["labels"] = dict(labels)
                return "PUT /sandbox/{sandboxIdOrName}/labels", Answer(200, {"labels": sb["labels"]})
        if n == 3 and method == "GET" and parts[2] == "toolbox-proxy-url":
            with LOCK:
                sb = find(parts[1], path)
                return "GET /sandbox/{sandboxId}/toolbox-proxy-url", Answer(200, {"url": sandbox_dto(sb)["toolboxProxyUrl"]})
        if n == 3 and method == "POST" and parts[2] == "last-activity":
            with LOCK:
                sb = find(parts[1], path)
                sb["lastActivityAt"] = now()
                return "POST /sandbox/{sandboxId}/last-activity", Answer(201, None, None)
    if parts == ["config"] and method == "GET":
        # The deployment's configuration: only what the documents require, the default snapshot
        # being the first of DAYTONA_FAKE_SNAPSHOTS (guess: the rest are plausible constants).
        return "GET /config", Answer(200, {
            "version": "0.0.0-fake", "oidc": {"issuer": "http://fake.invalid", "clientId": "fake", "audience": "fake"},
            "linkedAccountsEnabled": False, "announcements": {}, "proxyTemplateUrl": "",
            "proxyToolboxUrl": "", "defaultSnapshot": SNAPSHOTS[0], "dashboardUrl": "",
            "maxAutoArchiveInterval": 43200, "maintananceMode": False, "environment": "fake"})
    if parts[:1] == ["snapshots"]:
        if n == 1 and method == "GET":
            names = [s for s in SNAPSHOTS if not query.get("name") or query["name"][-1] in s]
            try:
                page = int(query.get("page", ["1"])[-1])
                limit = int(query.get("limit", ["100"])[-1])
            except ValueError:
                raise api_error(400, "page and limit must be numbers", path)
            if page < 1 or limit < 1:
                raise api_error(400, "page and limit must not be less than 1", path)
            items = [snapshot_dto(s) for s in names[(page - 1) * limit: page * limit]]
            return "GET /snapshots", Answer(200, {"items": items, "total": len(names), "page": page,
                                                  "totalPages": max(1, -(-len(names) // limit))})
        if n == 2 and method == "GET":
            found = find_snapshot(parts[1])
            if found is None:
                raise api_error(404, f"Snapshot with ID {parts[1]} not found", path)
            return "GET /snapshots/{id}", Answer(200, snapshot_dto(found))
    raise api_error(404, f"Cannot {method} {path}", path)


# ---------------------------------------------------------------------------------------------
# Toolbox
# ---------------------------------------------------------------------------------------------

def utf8(name: str) -> str:
    """A file name as the daemon's JSON carries it: bytes that are not UTF-8 become U+FFFD (Go's
    encoding/json replaces invalid UTF-8)."""
    return name.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def file_info(p: str) -> dict:
    st = os.lstat(p)
    mtime = datetime.fromtimestamp(st.st_mtime, timezone.utc)
    return {"name": utf8(os.path.basename(p.rstrip("/")) or "/"), "size": st.st_size, "mode": stat.filemode(st.st_mode), "modTime": mtime.strftime("%Y-%m-%d %H:%M:%S.%f +0000 UTC"),
            "modifiedAt": mtime.isoformat().replace("+00:00", "Z"), "isDir": stat.S_ISDIR(st.st_mode),
            "owner": str(st.st_uid), "group": str(st.st_gid), "permissions": "0%o" % stat.S_IMODE(st.st_mode),
            "path": utf8(p)}


class Toolbox:
    def __init__(self, sb: dict, method: str, sub: str):
        self.sb = sb
        self.method = method
        self.sub = sub  # the daemon's own path, e.g. /files/info
        self.old = sb["daemonVersion"] == OLD_DAEMON_VERSION

    def err(self, status: int, message: str, code: str | None = None, empty_on_old: bool = True) -> Answer:
        if self.old and empty_on_old:
            return Answer(status, None, None)  # old daemons: AbortWithError, empty body (daytona.md 1.5)
        return daemon_error(status, message, self.sub, self.method, code)

    def resolve(self, p: str | None, required: bool = True, name: str = "path") -> str:
        if not p:
            if required:
                raise self.err(400, f"{name} is required", "BAD_REQUEST")
            p = "."
        home = self.sb["dir"]
        full = os.path.normpath(p if os.path.isabs(p) else os.path.join(home, p))
        if full != home and not full.startswith(home + os.sep):
            raise self.err(403, f"access denied: {p} is outside the fake sandbox's folder {home}", "FILE_ACCESS_DENIED")
        return full

    def exists(self, full: str, p: str):
        if not os.path.lexists(full):
            raise self.err(404, f"file not found: {p}", "FILE_NOT_FOUND")


def q1(query: dict, key: str) -> str | None:
    v = query.get(key)
    return v[-1] if v else None


def parse_multipart(body: bytes, content_type: str) -> list[dict]:
    m = re.search(r'boundary="?([^";]+)"?', content_type or "")
    if not m:
        raise ValueError("multipart body without a boundary")
    delim = b"--" + m.group(1).encode()
    parts = []
    chunks = body.split(delim)
    for chunk in chunks[1:]:
        if chunk.startswith(b"--"):
            break
        chunk = chunk[2:] if chunk.startswith(b"\r\n") else chunk
        head, _, data = chunk.partition(b"\r\n\r\n")
        if data.endswith(b"\r\n"):
            data = data[:-2]
        headers = {}
        for line in head.decode("utf-8", "replace").split("\r\n"):
            k, _, v = line.partition(":")
            headers[k.strip().lower()] = v.strip()
        cd = headers.get("content-disposition", "")
        name = re.search(r'\bname="([^"]*)"', cd)
        filename = re.search(r'\bfilename="([^"]*)"', cd)
        parts.append({"name": name.group(1) if name else None, "filename": filename.group(1) if filename else None,
                      "contentType": headers.get("content-type"), "data": data})
    return parts


def toolbox_route(sb: dict, method: str, sub_parts: list[str], query: dict, body, raw: bytes, content_type: str,
                  handler) -> tuple[str, Answer]:
    sub = "/" + "/".join(sub_parts)
    tb = Toolbox(sb, method, sub)
    key = f"{method} {sub}"
    route = f"{method} /toolbox/{{sandboxId}}{sub}"
    if key == "GET /files":
        full = tb.resolve(q1(query, "path"), required=False)
        tb.exists(full, q1(query, "path"))
        if not os.path.isdir(full):
            raise tb.err(400, f"not a directory: {q1(query, 'path')}", "BAD_REQUEST")
        try:
            depth = int(q1(query, "depth") or 1)
        except ValueError:
            raise tb.err(400, "depth must be an integer", "BAD_REQUEST")
        if depth < 1:
            raise tb.err(400, "depth must be at least 1", "BAD_REQUEST")
        out, raw_names = [], []

        def walk(d, level):
            for entry in sorted(os.listdir(d)):
                p = os.path.join(d, entry)
                # Daytona's daemon (apps/daemon/pkg/toolbox/fs/list_files.go, ListFiles): an entry
                # whose info cannot be read (removed between the directory's read and its stat)
                # is skipped (`if err != nil { continue }`), never a 500.
                try:
                    info = file_info(p)
                except OSError:
                    continue
                out.append(info)
                raw_names.append(entry)
                if level < depth and os.path.isdir(p) and not os.path.islink(p):
                    walk(p, level + 1)
        walk(full, 1)
        if HOOKS.get("rawNames"):
            # Not Daytona (its daemon's encoding/json sends U+FFFD): names as their raw bytes, so
            # the body is not valid UTF-8 (a test of a client that must not lose the whole list).
            for info, raw_name in zip(out, raw_names):
                info["name"] = raw_name
            data = json.dumps(out, ensure_ascii=False).encode("utf-8", "surrogateescape")
            return route, Answer(200, data)
        return route, Answer(200, out)
    if key == "GET /files/info":
        full = tb.resolve(q1(query, "path"))
        tb.exists(full, q1(query, "path"))
        return route, Answer(200, file_info(full))
    if key == "GET /files/download":
        full = tb.resolve(q1(query, "path"))
        tb.exists(full, q1(query, "path"))
        if os.path.isdir(full):
            # srv apps/daemon/pkg/toolbox/fs/download_file.go:55 (an empty body on old daemons)
            raise tb.err(400, "path must be a file", "BAD_REQUEST")
        with open(full, "rb") as f:
            data = f.read()
        return route, Answer(200, data, "application/octet-stream",
                             {"Content-Disposition": f'attachment; filename="{os.path.basename(full)}"'})
    if key == "POST /files/folder":
        full = tb.resolve(q1(query, "path"))
        mode = q1(query, "mode")
        if not mode:
            raise tb.err(400, "mode is required", "BAD_REQUEST")
        try:
            os.makedirs(full, int(mode, 8), exist_ok=True)
        except ValueError:
            raise tb.err(400, f"invalid mode: {mode}", "BAD_REQUEST")
        except OSError as e:
            raise tb.err(400, str(e), "BAD_REQUEST")
        return route, Answer(201, None, None)
    if key == "DELETE /files":
        full = tb.resolve(q1(query, "path"))
        tb.exists(full, q1(query, "path"))
        if full == sb["dir"]:
            raise tb.err(403, "refusing to delete the sandbox's home", "FILE_ACCESS_DENIED")
        if os.path.isdir(full) and not os.path.islink(full):
            if q1(query, "recursive") != "true":
                raise tb.err(400, "cannot delete directory without recursive flag", "BAD_REQUEST")
            shutil.rmtree(full)
        else:
            os.remove(full)
        return route, Answer(204, None, None)
    if key == "POST /files/move":
        src = tb.resolve(q1(query, "source"), name="source")
        dst = tb.resolve(q1(query, "destination"), name="destination")
        tb.exists(src, q1(query, "source"))
        if not os.path.isdir(os.path.dirname(dst)):
            raise tb.err(404, "destination's parent does not exist", "FILE_NOT_FOUND")
        if os.path.lexists(dst):
            raise tb.err(409, "destination already exists", "CONFLICT")
        os.rename(src, dst)
        return route, Answer(200, None, None)
    if key == "POST /files/bulk-upload":
        try:
            parts = parse_multipart(raw, content_type)
        except ValueError as e:
            raise Answer(400, {"errors": [str(e)], "files": []})
        # The parts are taken in their order, as the daemon streams them (srv
        # apps/daemon/pkg/toolbox/fs/upload_files.go, UploadFiles): a `files[i].path` part names
        # where the `files[i].file` part after it goes; a file part before its path is an error
        # (`file[i]: missing .path metadata`), so is an empty path (`path[i]: empty path`); each
        # file is written whole or not at all (a temporary file renamed over the destination).
        dests, files, errors, done = {}, {}, [], []
        for part in parts:
            m = re.fullmatch(r"files\[(\d+)\]\.(path|file)", part["name"] or "")
            if not m:
                continue
            i = m.group(1)
            if m.group(2) == "path":
                # The daemon trims spaces at both ends of each path (strings.TrimSpace).
                p = part["data"].decode().strip()
                if not p:
                    errors.append(f"path[{i}]: empty path")
                else:
                    dests[i] = p
                continue
            files[i] = True
            p = dests.get(i)
            if p is None:
                errors.append(f"file[{i}]: missing .path metadata")
                continue
            try:
                full = tb.resolve(p)
                os.makedirs(os.path.dirname(full), 0o755, exist_ok=True)
                fd, tmp = tempfile.mkstemp(prefix=".daytona-upload-", dir=os.path.dirname(full))
                try:
                    with os.fdopen(fd, "wb") as f:
                        f.write(part["data"])
                    os.chmod(tmp, 0o644)
                    os.replace(tmp, full)
                except OSError:
                    if os.path.lexists(tmp):
                        os.remove(tmp)
                    raise
                done.append({"path": p, "bytes": len(part["data"])})
            except Answer as a:
                errors.append(f"{p}: {(a.body or {}).get('message', 'access denied')}")
            except OSError as e:
                errors.append(f"{p}: {e}")
        if not files:
            errors.append("no files in the request")
        if errors:
            raise Answer(400, {"errors": errors, "files": done})
        return route, Answer(200, {"files": done})
    if key == "POST /files/upload-v2":
        if tb.old:
            raise Answer(404, None, None)  # not in v0.190.0 daemons (daytona.md 1.4)
        full = tb.resolve(q1(query, "path"))
        data = raw
        if content_type.startswith("multipart/"):
            parts = [p for p in parse_multipart(raw, content_type) if p["name"] == "file"]
            if not parts:
                raise tb.err(400, "file is required", "BAD_REQUEST")
            data = parts[0]["data"]
        os.makedirs(os.path.dirname(full), 0o755, exist_ok=True)
        with open(full, "wb") as f:
            f.write(data)
        return route, Answer(200, {"name": os.path.basename(full), "path": full, "type": "file"})
    if key == "POST /files/bulk-download":
        paths = body.get("paths") if isinstance(body, dict) else None
        if not isinstance(paths, list) or not paths or not all(isinstance(p, str) for p in paths):
            raise Answer(400, {"error": 'request body must be {"paths": [ ... ]} and non-empty'})
        out = bytearray()
        for p in paths:
            quoted = urllib.parse.quote(p, safe="")
            try:
                full = tb.resolve(p)
                if not os.path.lexists(full):
                    raise daemon_error(404, f"file not found: {p}", sub, method, "FILE_NOT_FOUND")
                if os.path.isdir(full):
                    raise daemon_error(400, f"path is a directory: {p}", sub, method, "INVALID_FILE_PATH")
                if os.path.relpath(full, sb["dir"]) in (HOOKS.get("unreadable") or []):
                    # The daemon's os.Open failing: an error part, the others still sent
                    # (srv apps/daemon/pkg/toolbox/fs/download_files.go, "error opening file").
                    raise daemon_error(403, f"error opening file: open {full}: permission denied", sub, method,
                                       "FILE_ACCESS_DENIED")
                with open(full, "rb") as f:
                    data = f.read()
                out += (f"--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"{p}\"; "
                        f"filename*=utf-8''{quoted}\r\nContent-Type: application/octet-stream\r\n"
                        f"Content-Length: {len(data)}\r\n\r\n").encode() + data + b"\r\n"
            except Answer as a:
                e = a.body or {"statusCode": a.status, "message": "access denied", "code": "FILE_ACCESS_DENIED",
                               "timestamp": now_iso(), "path": sub, "method": method, "source": "DAYTONA_DAEMON"}
                data = json.dumps(e).encode()
                out += (f"--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"error\"; filename=\"{p}\"; "
                        f"filename*=utf-8''{quoted}\r\nContent-Type: application/json\r\n"
                        f"Content-Length: {len(data)}\r\n\r\n").encode() + data + b"\r\n"
        out += f"--{BOUNDARY}--\r\n".encode()
        return route, Answer(200, bytes(out), f"multipart/form-data; boundary={BOUNDARY}")
    if key == "GET /files/search":
        full = tb.resolve(q1(query, "path"))
        pattern = q1(query, "pattern")
        if not pattern:
            raise tb.err(400, "pattern is required", "BAD_REQUEST", empty_on_old=False)
        import fnmatch
        found = []
        for d, dirs, names in os.walk(full):
            for n in sorted(dirs + names):
                if fnmatch.fnmatchcase(n, pattern):
                    found.append(os.path.join(d, n))
        return route, Answer(200, {"files": sorted(found)})
    if key in ("GET /work-dir", "GET /user-home-dir"):
        return route, Answer(200, {"dir": sb["dir"]})
    if key == "GET /version":
        return route, Answer(200, {"version": sb["daemonVersion"]})
    if key == "POST /process/execute":
        return route, execute(tb, body, handler)
    raise Answer(404, None, None)  # guess: what the proxy answers for a path the daemon lacks


def execute(tb: Toolbox, body, handler) -> Answer:
    if not isinstance(body, dict) or not isinstance(body.get("command"), str) or not body["command"].strip():
        raise daemon_error(400, "command is required", tb.sub, tb.method, "BAD_REQUEST")
    envs = body.get("envs") or {}
    if not isinstance(envs, dict) or not all(isinstance(k, str) and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", k)
                                              and isinstance(v, str) for k, v in envs.items()):
        raise daemon_error(400, "invalid environment variables", tb.sub, tb.method, "BAD_REQUEST")
    timeout = body.get("timeout")
    if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, int)):
        raise daemon_error(400, "timeout must be an integer", tb.sub, tb.method, "BAD_REQUEST")
    cwd = tb.resolve(body.get("cwd"), required=False) if body.get("cwd") else tb.sb["dir"]
    if not os.path.isdir(cwd):
        raise daemon_error(400, f"cwd is not a directory: {body.get('cwd')}", tb.sub, tb.method, "BAD_REQUEST")
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": tb.sb["dir"], "LANG": "C.UTF-8",
           "USER": tb.sb["user"]}
    env.update(tb.sb["env"])
    env.update(envs)
    proc = subprocess.Popen(["sh", "-c", body["command"]], cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        # Only a timeout > 0 applies (srv v0.190.0); the fake caps a command at 10 minutes anyway.
        out, _ = proc.communicate(timeout=timeout if timeout and timeout > 0 else 600)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.communicate()
        # No partial output (daytona.md 1.3).
        raise daemon_error(408, "command execution timeout", tb.sub, tb.method, "REQUEST_TIMEOUT")
    code = proc.returncode if proc.returncode >= 0 else -1
    return Answer(200, {"exitCode": code, "result": out.decode("utf-8", "replace")})


# ---------------------------------------------------------------------------------------------
# Test hooks
# ---------------------------------------------------------------------------------------------

def fake_route(method: str, parts: list[str], body) -> Answer:
    if parts == ["hooks"] and method == "GET":
        return Answer(200, HOOKS)
    if parts == ["hooks"] and method == "POST":
        if not isinstance(body, dict):
            raise Answer(400, {"error": "a JSON object is expected"})
        with LOCK:
            for k, v in body.items():
                if v is None:
                    HOOKS.pop(k, None)
                else:
                    HOOKS[k] = v
        return Answer(200, HOOKS)
    if parts == ["clock"] and method == "GET":
        return Answer(200, {"now": now_iso(), "offsetSeconds": CLOCK["offset"]})
    if parts == ["clock"] and method == "POST":
        seconds = (body or {}).get("advance_seconds") if isinstance(body, dict) else None
        if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or seconds < 0:
            raise Answer(400, {"error": "advance_seconds: a number >= 0 is expected"})
        advance_clock(seconds)
        return Answer(200, {"now": now_iso(), "offsetSeconds": CLOCK["offset"]})
    if parts == ["requests"] and method == "GET":
        with LOCK:
            return Answer(200, {"counts": dict(sorted(COUNTS.items())), "total": sum(COUNTS.values())})
    if parts == ["requests", "reset"] and method == "POST":
        with LOCK:
            COUNTS.clear()
        return Answer(200, {"counts": {}, "total": 0})
    if parts == ["sandboxes"] and method == "GET":
        with LOCK:
            out = []
            for sb in SANDBOXES.values():
                settle(sb)
                out.append(dict(sandbox_dto(sb), dir=sb["dir"]))
            return Answer(200, out)
    if len(parts) == 2 and parts[0] == "sandbox" and method == "POST":
        if not isinstance(body, dict):
            raise Answer(400, {"error": "a JSON object is expected"})
        with LOCK:
            sb = SANDBOXES.get(parts[1]) or next((s for s in live() if s["name"] == parts[1]), None)
            if sb is None:
                raise Answer(404, {"error": f"no sandbox {parts[1]}"})
            settle(sb)
            for k in ("errorReason", "recoverable", "toolboxProxyUrl", "daemonVersion"):
                if k in body:
                    sb[k] = body[k]
            if "state" in body:
                sb["stages"] = []
                if body["state"] in ("stopped", "archived", "started", "paused"):
                    sb["desiredState"] = body["state"]
                set_state(sb, body["state"])
            return Answer(200, dict(sandbox_dto(sb), dir=sb["dir"]))
    raise Answer(404, {"error": "no such hook"})


# ---------------------------------------------------------------------------------------------
# HTTP
# ---------------------------------------------------------------------------------------------

# States in which a sandbox has no runner (the API clears `runnerId` when it archives; a build has
# none yet).
NO_RUNNER = {"archived", "restoring", "pending_build", "building_snapshot", "pulling_snapshot", "build_failed"}


def not_running(sb: dict | None, sandbox_id: str, path: str, method: str):
    """The toolbox proxy's answer for a sandbox that is not `started` (none for a started one):
    - gone (deleted, or never ours): 401 `authentication failed: Bearer token is invalid` — the proxy
      asks the API whether the key may reach the sandbox, a sandbox the API does not have is a no
      (srv apps/proxy/pkg/proxy/auth.go:17-104, auth_callback.go:189 hasSandboxAccess);
    - no runner (archived, restoring, a build): 400 `failed to get runner info: Sandbox with ID <id>
      does not have a runner` (srv apps/proxy/pkg/proxy/get_sandbox_target.go:84, the API's
      runner.service.ts:275 findBySandboxId);
    - on a runner but not running (stopped, starting, stopping, error…): the runner finds no IP
      address: 400 `failed to resolve container IP after 3 attempts: no IP address found. Is the
      Sandbox started?` (srv apps/runner/pkg/api/controllers/proxy.go:62-96, the retry wrapper of
      libs/common-go/pkg/utils/exponential_backoff.go:77), on the runner's path.
    Bodies are the Go ErrorResponse of libs/common-go/pkg/errors/middleware.go (v0.190.0 has no
    `source`; the 401 carries the proxy's, as newer proxies do)."""
    if sb is None or sb["state"] == "destroyed":
        raise daemon_error(401, "authentication failed: Bearer token is invalid", path, method,
                           "UNAUTHORIZED", "DAYTONA_PROXY")
    if sb["state"] == "started":
        return
    if sb["state"] in NO_RUNNER:
        message = f"failed to get runner info: Sandbox with ID {sandbox_id} does not have a runner"
        where = path
    else:
        message = "failed to resolve container IP after 3 attempts: no IP address found. Is the Sandbox started?"
        where = f"/sandboxes/{sandbox_id}/toolbox" + path.split(sandbox_id, 1)[-1]
    a = daemon_error(400, message, where, method, "BAD_REQUEST")
    a.body.pop("source", None)
    raise a


def log_line(entry: dict):
    if not LOG_PATH:
        return
    line = json.dumps(entry, sort_keys=True)
    with LOG_LOCK, open(LOG_PATH, "a", encoding="utf-8") as f:
        f.write(line + "\n")


def take_fail(route: str, query: dict | None = None) -> dict | None:
    """The `fail` rule this request meets (its `times` counted down), or None."""
    with LOCK:
        for rule in HOOKS.get("fail") or []:
            if "path" in rule and q1(query or {}, "path") != rule["path"]:
                continue
            if rule.get("route") == route and rule.get("times", 1) > 0:
                rule["times"] = rule.get("times", 1) - 1
                return dict(rule, status=int(rule.get("status", 500)))
    return None


def failure(rule: dict, path: str, method: str, api: str) -> Answer:
    """The answer of a `fail` rule. 429 is Daytona's throttler's: NestJS body `ThrottlerException:
    Too Many Requests` with `Retry-After-{throttler}` and `X-RateLimit-{Limit,Remaining,Reset}-{throttler}`
    (srv apps/docs/src/content/docs/en/limits.mdx "Rate limit headers";
    apps/api/src/common/utils/rate-limit-headers.util.ts; the throttler names are the controller's
    @ThrottlerScope: sandbox-create, sandbox-lifecycle, else authenticated). `empty: true` is an
    answer without a body: the toolbox proxy's 502 when the sandbox's daemon does not answer
    (srv libs/common-go/pkg/proxy/proxy.go:122, AbortWithStatus(502))."""
    status = rule["status"]
    if rule.get("empty"):
        return Answer(status, None, None)
    headers = {}
    message = rule.get("message") or "fake failure (hook fail)"
    if status == 429:
        name = rule.get("throttler") or "authenticated"
        wait = str(rule.get("retryAfter", 1))
        headers = {f"X-RateLimit-Limit-{name}": "10000", f"X-RateLimit-Remaining-{name}": "0",
                   f"X-RateLimit-Reset-{name}": wait, f"Retry-After-{name}": wait}
        message = rule.get("message") or "ThrottlerException: Too Many Requests"
    if api == "api":
        a = api_error(status, message, path)
    else:
        a = daemon_error(status, message, path, method)
    a.headers = headers
    return a


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # TCP_NODELAY: the handler writes the headers and the body apart, and without it Nagle's
    # algorithm holds the body for the client's delayed ACK (about 40 ms on every kept-alive call).
    disable_nagle_algorithm = True
    server_version = "fake-daytona"

    def log_message(self, fmt, *args):  # quiet
        if os.environ.get("DAYTONA_FAKE_VERBOSE"):
            sys.stderr.write("fake-daytona: " + (fmt % args) + "\n")

    def read_body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            out = bytearray()
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return bytes(out)
                out += self.rfile.read(size)
                self.rfile.readline()
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(n) if n else b""

    def send(self, a: Answer):
        if a.content_type == "application/json" and not isinstance(a.body, (bytes, bytearray)):
            data = b"" if a.body is None else json.dumps(a.body).encode()
        else:
            data = bytes(a.body or b"")
        self.send_response(a.status)
        if a.content_type and (data or a.content_type != "application/json"):
            ct = a.content_type
            if ct == "application/json":
                ct += "; charset=utf-8"
            self.send_header("Content-Type", ct)
        for k, v in a.headers.items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)
        return data

    def handle_any(self):
        started = time.time()
        url = urllib.parse.urlsplit(self.path)
        path = url.path
        query = urllib.parse.parse_qs(url.query, keep_blank_values=True)
        raw = self.read_body()
        content_type = self.headers.get("Content-Type", "")
        body = None
        if raw and content_type.split(";")[0].strip().lower() == "application/json":
            try:
                body = json.loads(raw)
            except ValueError:
                body = ValueError
        parts = [urllib.parse.unquote(p) for p in path.split("/") if p]
        route = None
        api = None
        hook_fail = False
        try:
            if parts[:1] == ["_fake"]:
                self.send(fake_route(self.command, parts[1:], None if body is ValueError else body))
                return
            if parts[:1] == ["api"]:
                api = "api"
                route = self.route_api(parts[1:])
                redirect = HOOKS.get("redirect")
                if redirect and path.startswith(redirect.get("pathPrefix", "/api")) and redirect.get("times", 1) != 0:
                    with LOCK:
                        if "times" in redirect:
                            redirect["times"] -= 1
                    raise Answer(int(redirect.get("status", 307)), None, None, {"Location": redirect.get("location", "/")})
                self.auth(api, path)
                if body is ValueError:
                    raise api_error(400, "Unexpected token in JSON body", path)
                rule = take_fail(route) if route else None
                if rule:
                    hook_fail = True
                    raise failure(rule, path, self.command, api)
                check_permissions(route, path)
                route, answer = api_route(self.command, parts[1:], query, body, path)
            elif parts[:1] == ["toolbox"] and len(parts) >= 2:
                api = "toolbox"
                sub = parts[2:]
                route = f"{self.command} /toolbox/{{sandboxId}}/" + "/".join(sub)
                self.auth(api, path)
                with LOCK:
                    sb = SANDBOXES.get(parts[1])
                    if sb is not None:
                        settle(sb)
                rule = take_fail(route, query)
                if rule:
                    hook_fail = True
                    raise failure(rule, "/" + "/".join(sub), self.command, api)
                not_running(sb, parts[1], path, self.command)
                if body is ValueError:
                    raise daemon_error(400, "invalid JSON body", "/" + "/".join(sub), self.command, "BAD_REQUEST")
                with LOCK:
                    sb["lastActivityAt"] = now()
                route, answer = toolbox_route(sb, self.command, sub, query, body, raw, content_type, self)
                with LOCK:
                    # The proxy records activity while a request is open (every 50 s) and at its
                    # start (srv apps/proxy/pkg/proxy/get_sandbox_target.go:311 updateLastActivity).
                    sb["lastActivityAt"] = now()
            else:
                raise Answer(404, None, None)
        except Answer as a:
            answer = a
        except Exception as e:  # a bug in the fake: say so loudly
            sys.stderr.write(f"fake-daytona: internal error on {self.command} {self.path}: {e!r}\n")
            import traceback
            traceback.print_exc()
            answer = api_error(500, "An unexpected error occurred.", path)
        # Counted before the answer goes out: a client that has its answer and then reads or
        # resets the counts (`reset_request_counts`) must find this request in them, not have it
        # counted after its reset.
        if route:
            with LOCK:
                COUNTS[route] = COUNTS.get(route, 0) + 1
        # The hooks as they were when this answer was made, read before it is sent: once the
        # client has it, it may switch a hook off in its next request (another thread here).
        raw_names, bare_list = HOOKS.get("rawNames"), HOOKS.get("bareList")
        data = self.send(answer)
        entry = {"api": api, "route": route, "method": self.command, "path": path, "query": query,
                 "contentType": content_type or None, "status": answer.status,
                 "responseContentType": answer.content_type if data or answer.content_type != "application/json" else None,
                 "responseLength": len(data), "ms": int((time.time() - started) * 1000),
                 "hookFail": hook_fail, "expectInvalid": bool(self.headers.get("X-Fake-Expect-Invalid")), "authorization": "ok" if self.headers.get("Authorization") == f"Bearer {API_KEY}" else "bad"}
        if body is not None and body is not ValueError:
            entry["body"] = body
        elif raw and content_type.startswith("multipart/"):
            try:
                entry["multipartFields"] = [p["name"] for p in parse_multipart(raw, content_type)]
            except ValueError:
                entry["multipartFields"] = None
        elif raw:
            entry["bodyLength"] = len(raw)
        if answer.content_type and answer.content_type.startswith("application/json") and data:
            entry["response"] = json.loads(data.decode("utf-8", "replace"))
            if raw_names and route == "GET /toolbox/{sandboxId}/files":
                entry["rawNames"] = True
            if bare_list and route == "GET /sandbox":
                entry["bareList"] = True
        elif answer.content_type and answer.content_type.startswith("multipart/") and data:
            entry["responseParts"] = [{k: p[k] for k in ("name", "filename", "contentType")}
                                      for p in parse_multipart(data, answer.content_type)]
        log_line(entry)

    def route_api(self, parts: list[str]) -> str | None:
        """The route template of an API request, for counting (before it is answered)."""
        m, n = self.command, len(parts)
        if parts[:1] == ["sandbox"]:
            if n == 1:
                return f"{m} /sandbox"
            if n == 2:
                return f"{m} /sandbox/{{sandboxIdOrName}}"
            if n == 4 and parts[2] in ("autostop", "autoarchive", "autodelete", "autopause"):
                return f"{m} /sandbox/{{sandboxIdOrName}}/{parts[2]}/{{interval}}"
            if n == 4 and parts[2] == "ttl":
                return f"{m} /sandbox/{{sandboxIdOrName}}/ttl/{{ttlMinutes}}"
            if n == 3 and parts[2] in ("toolbox-proxy-url", "last-activity"):
                return f"{m} /sandbox/{{sandboxId}}/{parts[2]}"
            if n == 3:
                return f"{m} /sandbox/{{sandboxIdOrName}}/{parts[2]}"
        if parts[:1] == ["snapshots"]:
            return f"{m} /snapshots" + ("/{id}" if n == 2 else "")
        return f"{m} /" + "/".join(parts)

    def auth(self, api: str, path: str):
        if self.headers.get("Authorization") == f"Bearer {API_KEY}":
            return
        if api == "api":
            raise api_error(401, "Unauthorized", path)
        raise daemon_error(401, "Unauthorized", path, self.command, "UNAUTHORIZED", "DAYTONA_PROXY")

    do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = do_HEAD = handle_any


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True


def main():
    global ROOT, BASE_URL
    port = int(sys.argv[1] if len(sys.argv) > 1 else os.environ.get("PORT", "0") or 0)
    own_root = not os.environ.get("DAYTONA_FAKE_ROOT")
    ROOT = os.environ.get("DAYTONA_FAKE_ROOT") or tempfile.mkdtemp(prefix="fake-daytona-")
    ROOT = os.path.realpath(ROOT)
    os.makedirs(ROOT, exist_ok=True)
    server = Server(("127.0.0.1", port), Handler)
    BASE_URL = f"http://127.0.0.1:{server.server_address[1]}"
    threading.Thread(target=server.serve_forever, daemon=True).start()
    print(f"DAYTONA_URL={BASE_URL}", flush=True)
    print(f"DAYTONA_API_URL={BASE_URL}/api", flush=True)
    print(f"DAYTONA_API_KEY={API_KEY}", flush=True)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    try:
        while sys.stdin.buffer.read(65536):
            pass
    except (KeyboardInterrupt, SystemExit):
        pass
    finally:
        server.shutdown()
        if own_root:
            shutil.rmtree(ROOT, ignore_errors=True)


if __name__ == "__main__":
    main()
