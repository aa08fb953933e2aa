#!/usr/bin/env python3
"""Contract check 1: the FAKE Daytona (fake_daytona.py), and later our own Daytona client, against
Daytona's OpenAPI documents (vendored in `tests/peer/daytona/specs/`: api.json, OpenAPI 3.0;
toolbox.json, Swagger 2.0; copied from `daytona/clients@v0.205.1`, Apache-2.0, licence beside them).

    contract.py pin                 the two documents are the pinned ones (sha256 in the specs README)
    contract.py check-log LOG       every request in the fake's JSONL log (DAYTONA_FAKE_LOG) matches a
                                    documented operation (method + path template, required and known
                                    parameters with their types, content type, JSON body schema) and
                                    every answer validates against the schema documented for its status
    contract.py drive URL [KEY]     drive a running fake (DAYTONA_URL, its server root) through every
                                    route it serves, error paths and test hooks included, asserting the
                                    status of each answer; run check-log on its log afterwards
    contract.py self-test           the checker itself: planted mismatches are each reported, and a
                                    changed document fails the pin

Exits non-zero with one line per mismatch. Needs `jsonschema` (tests/peer/daytona-requirements.txt).
The specs folder is DAYTONA_SPECS_DIR, else `specs/` beside this file (`tests/peer/daytona/specs`).

`match_request(method, path, query, content_type, body)` is the request check, for later tests of our
own client: `path` is as the fake saw it (`/api/sandbox/...` for the main API,
`/toolbox/<sandboxId>/...` for a toolbox; a path without either prefix is looked up in api.json),
`query` a dict of lists (urllib.parse.parse_qs), `body` the parsed JSON, or for multipart the list of
field names in order (or the raw bytes), or None. It returns the Operation found or raises
ContractError listing what is wrong.

Schemas are checked strictly: an object property the document does not declare is a mismatch (the
documents never forbid extra properties, but an undeclared field is a typo in the fake or the client
more often than not), except the few listed in EXTRA_PROPERTIES. Where Daytona is known to differ from
its documents (`docs/daytona.md`), QUIRKS says how and where that is written; every answer
that relied on a quirk is counted in the summary.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sys
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.dont_write_bytecode = True  # it imports its siblings; leave no __pycache__ in the tree
PINNED = {
    "api.json": "7682a9cefcd12810da736ea76527acc4e6e9c32dd53b39337bfbb1708b7b48a3",
    "toolbox.json": "3dbcb22f53b0205deedc9310dc2e87aa346cf28db9372508c28919b70a13b3f6",
}

# Properties the documents lack but a party needs (schema name -> property -> (schema, why)).
EXTRA_PROPERTIES = {
    "Sandbox": {"kvm": ({"type": "boolean"}, "required by the 0.226.1 SDK's Sandbox model (newer than the v0.205.1 document)")},
}

# How Daytona differs from its documents (daytona.md sections), as the fake replays it.
QUIRKS = {
    "interval-201": "interval routes answer 201, the documents say 200 (daytona.md 1.2: no @HttpCode)",
    "nest-error": "main-API errors: NestJS envelope; the documents declare no error bodies (daytona.md 1.5)",
    "empty-error-body": "old daemons answer list/info/delete/download/move/mkdir errors with an empty body (daytona.md 1.5)",
    "bulk-download-400": "bulk-download's 400 is {\"error\": ...}, not ErrorResponse (daytona.md 1.4)",
    "bulk-upload-body": "bulk-upload's answers are {files} / {errors, files}; the document gives no 200 body, an ErrorResponse 400 (daytona.md 1.4)",
    "bulk-upload-fields": "bulk-upload's multipart fields files[i].path then files[i].file: the document lists none (daytona.md 1.4)",
    "bulk-download-parts": "bulk-download's 200 is multipart (boundary DAYTONA-FILE-BOUNDARY), one file/error part per path; the document says gin.H (daytona.md 1.4)",
    "upload-v2-raw": "upload-v2 also takes a raw application/octet-stream body; the document says multipart (daytona.md 1.4)",
    "upload-v2-404": "old daemons have no upload-v2: 404 with an empty body (daytona.md 1.4)",
    "proxy-error": "the toolbox proxy's own answers (401 for a sandbox the key may not reach: deleted or unknown): ErrorResponse with source DAYTONA_PROXY; undocumented (srv apps/proxy/pkg/proxy/auth.go)",
    "not-running": "a toolbox call to a sandbox that is not running: 400 ErrorResponse `…no IP address found. Is the Sandbox started?` (runner) or `failed to get runner info: …` (proxy), on any route (srv apps/runner/pkg/api/controllers/proxy.go, apps/proxy/pkg/proxy/get_sandbox_target.go)",
    "proxy-502-empty": "the toolbox proxy's 502 without a body when the daemon does not answer (srv libs/common-go/pkg/proxy/proxy.go:122), as a `fail` hook asked",
    "redirect": "a redirect the fake's `redirect` hook asked for (not Daytona behaviour: a test of the client's refusal to follow)",
    "hook-fail": "an error status the fake's `fail` hook asked for",
    "pre-cursor-list": "a self-hosted Daytona before v0.180 answers GET /sandbox with a bare array of sandboxes, no cursor (srv v0.179.0 sandbox.controller.ts listSandboxes), as the fake's `bareList` hook asked",
    "raw-names": "GET /files with names that are not UTF-8 sent as raw bytes (NOT Daytona, which sends U+FFFD: the fake's `rawNames` hook, a test of the client); checked with those bytes read as U+FFFD",
    "invalid-on-purpose": "a request the documents forbid, sent on purpose (X-Fake-Expect-Invalid); it does not match, its answer was still checked",
}

NEST_ERROR = {"type": "object", "required": ["statusCode", "message", "error"],
              "properties": {"statusCode": {"type": "integer"}, "message": {"type": "string"},
                             "error": {"type": "string"}, "path": {"type": "string"}, "timestamp": {"type": "string"}},
              "additionalProperties": False}
BULK_UPLOAD_OK = {"type": "object", "required": ["files"], "additionalProperties": False,
                  "properties": {"files": {"type": "array", "items": {
                      "type": "object", "required": ["path", "bytes"], "additionalProperties": False,
                      "properties": {"path": {"type": "string"}, "bytes": {"type": "integer"}}}}}}
BULK_UPLOAD_ERR = {"type": "object", "required": ["errors", "files"], "additionalProperties": False,
                   "properties": {"errors": {"type": "array", "items": {"type": "string"}},
                                  "files": BULK_UPLOAD_OK["properties"]["files"]}}
BULK_DOWNLOAD_400 = {"type": "object", "required": ["error"], "additionalProperties": False,
                     "properties": {"error": {"type": "string"}}}
OLD_DAEMON_EMPTY = {("GET", "/files"), ("GET", "/files/info"), ("DELETE", "/files"), ("GET", "/files/download"),
                    ("POST", "/files/move"), ("POST", "/files/folder")}
INTERVAL_ROUTES = {"/sandbox/{sandboxIdOrName}/autostop/{interval}", "/sandbox/{sandboxIdOrName}/autoarchive/{interval}",
                   "/sandbox/{sandboxIdOrName}/autodelete/{interval}", "/sandbox/{sandboxIdOrName}/autopause/{interval}",
                   "/sandbox/{sandboxIdOrName}/ttl/{ttlMinutes}"}


class ContractError(Exception):
    def __init__(self, problems: list[str]):
        super().__init__("; ".join(problems))
        self.problems = problems


def specs_dir() -> Path:
    if os.environ.get("DAYTONA_SPECS_DIR"):
        return Path(os.environ["DAYTONA_SPECS_DIR"])
    return HERE / "specs"


def pin_problems() -> list[str]:
    problems = []
    for name, want in PINNED.items():
        p = specs_dir() / name
        if not p.exists():
            problems.append(f"{p}: missing")
            continue
        got = hashlib.sha256(p.read_bytes()).hexdigest()
        if got != want:
            problems.append(f"{p}: sha256 {got}, pinned {want} (a changed document: review it, then update PINNED and the specs README)")
    readme = specs_dir() / "README.md"
    if readme.exists():
        text = readme.read_text()
        for name, want in PINNED.items():
            if f"{want}  {name}" not in text:
                problems.append(f"{readme}: does not list `{want}  {name}` (contract.py and the README disagree)")
    return problems


# ---------------------------------------------------------------------------------------------
# Schemas
# ---------------------------------------------------------------------------------------------

def convert(node, strict: bool, name: str | None = None):
    """OpenAPI 3.0 / Swagger 2.0 schema -> JSON Schema (draft 4): `nullable` becomes a null branch,
    `type: file` anything; with `strict`, objects with declared properties forbid others."""
    if isinstance(node, list):
        return [convert(x, strict) for x in node]
    if not isinstance(node, dict):
        return node
    out = {}
    for k, v in node.items():
        if k in ("example", "examples", "description", "x-enum-varnames", "deprecated", "xml", "discriminator",
                 "readOnly", "writeOnly", "format"):
            continue
        if k == "properties":
            out[k] = {pk: convert(pv, strict) for pk, pv in v.items()}
        elif k in ("items", "additionalProperties", "not"):
            out[k] = convert(v, strict) if isinstance(v, dict) else v
        elif k in ("allOf", "anyOf", "oneOf"):
            out[k] = [convert(x, strict) for x in v]
        else:
            out[k] = v
    if out.get("type") == "file":
        out.pop("type")
    if name in EXTRA_PROPERTIES and "properties" in out:
        for pk, (schema, _) in EXTRA_PROPERTIES[name].items():
            out["properties"].setdefault(pk, schema)
    if strict and "properties" in out and "additionalProperties" not in out and not any(
            k in out for k in ("allOf", "anyOf", "oneOf")):
        out["additionalProperties"] = False
    nullable = out.pop("nullable", False) or out.pop("x-nullable", False)
    if nullable:
        return {"anyOf": [{"type": "null"}, out]}
    return out


@dataclass
class Spec:
    name: str  # "api" or "toolbox"
    doc: dict
    defs_key: str  # "components" or "definitions"
    defs: dict = field(default_factory=dict)

    def __post_init__(self):
        if self.defs_key == "components":
            schemas = self.doc.get("components", {}).get("schemas", {})
            self.defs = {"components": {"schemas": {k: convert(v, True, k) for k, v in schemas.items()}}}
        else:
            self.defs = {"definitions": {k: convert(v, True, k) for k, v in self.doc.get("definitions", {}).items()}}

    def problems(self, schema: dict, value, where: str) -> list[str]:
        import jsonschema
        root = dict(self.defs)
        root["allOf"] = [convert(schema, True)]
        v = jsonschema.Draft4Validator(root)
        out = []
        for e in sorted(v.iter_errors(value), key=lambda e: list(e.absolute_path)):
            at = "/".join(str(p) for p in e.absolute_path) or "(top)"
            out.append(f"{where}: at {at}: {e.message[:300]}")
        return out


@dataclass
class Operation:
    spec: Spec
    method: str
    template: str
    op: dict
    params: list[dict]
    regex: re.Pattern
    literals: int

    @property
    def operation_id(self) -> str:
        return self.op.get("operationId", "?")

    def __str__(self):
        return f"{self.spec.name} {self.method} {self.template} ({self.operation_id})"


_SPECS: dict[str, Spec] = {}
_OPS: dict[str, list[Operation]] = {}


def load() -> None:
    if _SPECS:
        return
    for name, file, key in (("api", "api.json", "components"), ("toolbox", "toolbox.json", "definitions")):
        doc = json.loads((specs_dir() / file).read_text())
        spec = Spec(name, doc, key)
        _SPECS[name] = spec
        ops = []
        for template, item in doc["paths"].items():
            shared = item.get("parameters", [])
            for method, op in item.items():
                if method == "parameters":
                    continue
                params = {(p["name"], p["in"]): p for p in shared + op.get("parameters", [])}
                rx = "^" + re.sub(r"\\\{[^}]+\\\}", "([^/]+)", re.escape(template)) + "$"
                literals = sum(1 for s in template.split("/") if s and not s.startswith("{"))
                ops.append(Operation(spec, method.upper(), template, op, list(params.values()), re.compile(rx), literals))
        ops.sort(key=lambda o: -o.literals)
        _OPS[name] = ops


def split_path(path: str) -> tuple[str, str, str | None]:
    """(spec name, path inside that spec, toolbox sandbox id)."""
    parts = path.split("/")
    if path.startswith("/api/") or path == "/api":
        return "api", path[len("/api"):] or "/", None
    if path.startswith("/toolbox/") and len(parts) >= 3:
        return "toolbox", "/" + "/".join(parts[3:]), urllib.parse.unquote(parts[2])
    return "api", path, None


def param_type_problem(p: dict, value: str, where: str) -> str | None:
    schema = p.get("schema") or p  # OAS3 keeps it in schema; Swagger 2 inline
    t = schema.get("type")
    if t == "array":
        items = schema.get("items", {})
        if "$ref" in items:
            items = resolve_ref(items["$ref"])
        for v in value.split(",") if p.get("collectionFormat") == "csv" else [value]:
            prob = scalar_problem(items, v, where)
            if prob:
                return prob
        return None
    return scalar_problem(schema, value, where)


def resolve_ref(ref: str) -> dict:
    for spec in _SPECS.values():
        node = spec.doc
        try:
            for part in ref.lstrip("#/").split("/"):
                node = node[part]
            return node
        except (KeyError, TypeError):
            continue
    return {}


def scalar_problem(schema: dict, value: str, where: str) -> str | None:
    t = schema.get("type")
    if "$ref" in schema:
        schema = resolve_ref(schema["$ref"])
        t = schema.get("type")
    try:
        if t == "integer":
            int(value)
        elif t == "number":
            float(value)
            if value.strip().lower() in ("nan", "inf", "-inf", "infinity"):
                raise ValueError
        elif t == "boolean" and value not in ("true", "false"):
            raise ValueError
    except ValueError:
        return f"{where}: {value!r} is not a {t}"
    if "enum" in schema and value not in [str(x) for x in schema["enum"]]:
        return f"{where}: {value!r} is not one of {schema['enum']}"
    for bound, cmp in (("minimum", lambda a, b: a < b), ("maximum", lambda a, b: a > b)):
        if bound in schema and t in ("integer", "number") and cmp(float(value), schema[bound]):
            return f"{where}: {value} is beyond the {bound} {schema[bound]}"
    return None


def body_schema(op: Operation) -> tuple[list[str], dict | None, bool]:
    """(content types accepted, JSON body schema, body required)."""
    if op.spec.name == "api":
        rb = op.op.get("requestBody")
        if not rb:
            return [], None, False
        content = rb.get("content", {})
        schema = next((c.get("schema") for ct, c in content.items() if ct == "application/json"), None)
        return list(content), schema, bool(rb.get("required"))
    consumes = op.op.get("consumes") or op.spec.doc.get("consumes") or []
    body = next((p for p in op.params if p["in"] == "body"), None)
    return consumes, (body or {}).get("schema"), bool(body and body.get("required"))


def multipart_fields(body, content_type: str) -> list[str] | None:
    if isinstance(body, list) and all(isinstance(x, str) or x is None for x in body):
        return body
    if isinstance(body, (bytes, bytearray)):
        sys.path.insert(0, str(HERE))
        from fake_daytona import parse_multipart
        return [p["name"] for p in parse_multipart(bytes(body), content_type)]
    return None


def match_request(method: str, path: str, query: dict | None, content_type: str | None, body) -> Operation:
    """The documented operation this request is, or ContractError with every problem found."""
    load()
    spec_name, inner, _ = split_path(path)
    method = method.upper()
    candidates = [o for o in _OPS[spec_name] if o.regex.match(inner)]
    if not candidates:
        raise ContractError([f"{method} {path}: no {spec_name} path template matches {inner}"])
    ops = [o for o in candidates if o.method == method]
    if not ops:
        raise ContractError([f"{method} {path}: {candidates[0].template} has no {method} (has "
                             f"{sorted({o.method for o in candidates})})"])
    op = ops[0]
    problems = []
    where = f"{method} {path} [{op.operation_id}]"
    m = op.regex.match(inner)
    names = re.findall(r"\{([^}]+)\}", op.template)
    for pname, value in zip(names, m.groups()):
        p = next((x for x in op.params if x["in"] == "path" and x["name"] == pname), None)
        if p is None:
            problems.append(f"{where}: path parameter {pname} is not declared")
            continue
        prob = param_type_problem(p, urllib.parse.unquote(value), f"{where}: path {pname}")
        if prob:
            problems.append(prob)
    query = query or {}
    declared = {p["name"]: p for p in op.params if p["in"] == "query"}
    for qname, values in query.items():
        p = declared.get(qname)
        if p is None:
            problems.append(f"{where}: query parameter {qname!r} is not documented (documented: {sorted(declared)})")
            continue
        for v in values:
            prob = param_type_problem(p, v, f"{where}: query {qname}")
            if prob:
                problems.append(prob)
    for qname, p in declared.items():
        if p.get("required") and qname not in query:
            problems.append(f"{where}: required query parameter {qname!r} is missing")
    consumes, schema, required = body_schema(op)
    media = (content_type or "").split(";")[0].strip().lower()
    has_body = body not in (None, b"", "", [])
    if spec_name == "toolbox" and op.template == "/files/upload-v2" and media == "application/octet-stream":
        pass  # quirk upload-v2-raw
    elif has_body and consumes and media not in consumes:
        problems.append(f"{where}: content type {media or '(none)'} is not one of {consumes}")
    elif has_body and not consumes and not (spec_name == "toolbox" and op.template == "/files/bulk-upload"):
        problems.append(f"{where}: the operation takes no body, the request has one ({media or 'no content type'})")
    if required and not has_body:
        problems.append(f"{where}: the request body is required")
    if has_body and media == "application/json" and schema is not None:
        value = body
        if isinstance(body, (bytes, bytearray, str)):
            try:
                value = json.loads(body)
            except ValueError as e:
                problems.append(f"{where}: the JSON body does not parse: {e}")
                value = None
        if value is not None:
            problems += op.spec.problems(schema, value, f"{where}: request body")
    if media.startswith("multipart/"):
        fields = multipart_fields(body, content_type or "")
        if fields is None:
            problems.append(f"{where}: a multipart body, but no field names to check")
        elif op.template == "/files/bulk-upload":
            # quirk bulk-upload-fields: pairs files[i].path, then files[i].file
            expect = []
            for i in range(len(fields) // 2):
                expect += [f"files[{i}].path", f"files[{i}].file"]
            if not fields or fields != expect:
                problems.append(f"{where}: multipart fields {fields}, expected pairs files[i].path then files[i].file ({expect or 'at least one'})")
        else:
            form = {p["name"]: p for p in op.params if p["in"] == "formData"}
            for f in fields:
                if f not in form:
                    problems.append(f"{where}: multipart field {f!r} is not documented (documented: {sorted(form)})")
            for fname, p in form.items():
                if p.get("required") and fname not in fields:
                    problems.append(f"{where}: required multipart field {fname!r} is missing")
    if problems:
        raise ContractError(problems)
    return op


def find_operation(method: str, path: str) -> Operation | None:
    """The operation of this method and path, parameters and body unchecked."""
    load()
    spec_name, inner, _ = split_path(path)
    return next((o for o in _OPS[spec_name] if o.method == method.upper() and o.regex.match(inner)), None)


def check_response(op: Operation, entry: dict) -> tuple[list[str], list[str]]:
    """(problems, quirks used) for the answer logged in `entry`."""
    status = entry["status"]
    method, path = entry["method"], entry["path"]
    where = f"{method} {path} -> {status} [{op.operation_id}]"
    ctype = (entry.get("responseContentType") or "").split(";")[0].strip().lower()
    length = entry.get("responseLength", 0)
    body = entry.get("response")
    spec = op.spec
    responses = op.op.get("responses", {})
    problems, quirks = [], []

    def validate(schema, quirk=None):
        if quirk:
            quirks.append(quirk)
        if ctype != "application/json" or body is None:
            problems.append(f"{where}: expected a JSON body, got {ctype or 'none'} ({length} bytes)")
            return
        problems.extend(spec.problems(schema, body, f"{where}: response"))

    if 300 <= status < 400:
        quirks.append("redirect")
        if length:
            problems.append(f"{where}: a redirect with a body")
        return problems, quirks
    if entry.get("hookFail"):
        quirks.append("hook-fail")
    if entry.get("bareList") and status == 200 and isinstance(body, list):
        validate({"type": "array", "items": {"$ref": "#/components/schemas/SandboxListItem"}}, "pre-cursor-list")
        return problems, quirks
    if entry.get("rawNames"):
        quirks.append("raw-names")
    documented = responses.get(str(status))
    if spec.name == "api":
        if documented is None and 200 <= status < 300 and status == 201 and op.template in INTERVAL_ROUTES:
            documented = responses.get("200")
            quirks.append("interval-201")
        if documented is not None:
            content = documented.get("content") or {}
            if content:
                schema = (content.get("application/json") or {}).get("schema")
                if ctype not in content:
                    problems.append(f"{where}: content type {ctype or 'none'}, documented {list(content)}")
                elif schema is not None:
                    validate(schema)
            elif length and status < 400:
                problems.append(f"{where}: a body ({length} bytes) where the document gives none")
            elif status >= 400:
                validate(NEST_ERROR, "nest-error")
            return problems, quirks
        if status >= 400:
            validate(NEST_ERROR, "nest-error")
            return problems, quirks
        problems.append(f"{where}: status {status} is not documented (documented: {sorted(responses)})")
        return problems, quirks
    # toolbox
    key = (method, op.template)
    if status == 502 and length == 0 and entry.get("hookFail"):
        quirks.append("proxy-502-empty")
        return problems, quirks
    if status == 400 and isinstance(body, dict) and (
            str(body.get("message", "")).endswith("no IP address found. Is the Sandbox started?")
            or str(body.get("message", "")).startswith("failed to get runner info: ")):
        validate({"$ref": "#/definitions/ErrorResponse"}, "not-running")
        return problems, quirks
    if status >= 400 and length == 0:
        if key in OLD_DAEMON_EMPTY and documented is not None:
            quirks.append("empty-error-body")
            return problems, quirks
        if key == ("POST", "/files/upload-v2") and status == 404:
            quirks.append("upload-v2-404")
            return problems, quirks
        problems.append(f"{where}: an empty error body (only old daemons' list/info/delete/download/move/mkdir errors may be empty)")
        return problems, quirks
    if key == ("POST", "/files/bulk-upload"):
        if status == 200:
            validate(BULK_UPLOAD_OK, "bulk-upload-body")
        elif status == 400:
            validate(BULK_UPLOAD_ERR, "bulk-upload-body")
        else:
            problems.append(f"{where}: status not documented")
        return problems, quirks
    if key == ("POST", "/files/bulk-download") and status in (200, 400):
        if status == 400:
            validate(BULK_DOWNLOAD_400, "bulk-download-400")
            return problems, quirks
        quirks.append("bulk-download-parts")
        parts = entry.get("responseParts")
        if ctype != "multipart/form-data" or parts is None:
            problems.append(f"{where}: expected multipart/form-data, got {ctype or 'none'}")
            return problems, quirks
        requested = (entry.get("body") or {}).get("paths") or []
        if [p["filename"] for p in parts] != requested:
            problems.append(f"{where}: parts {[p['filename'] for p in parts]} do not answer the paths {requested} in order")
        for p in parts:
            if p["name"] not in ("file", "error"):
                problems.append(f"{where}: part named {p['name']!r}, expected file or error")
            if p["name"] == "error" and (p.get("contentType") or "") != "application/json":
                problems.append(f"{where}: an error part that is not JSON")
        return problems, quirks
    if documented is None:
        if status in (401, 404, 409) and isinstance(body, dict) and body.get("source") == "DAYTONA_PROXY":
            validate({"$ref": "#/definitions/ErrorResponse"}, "proxy-error")
            return problems, quirks
        if entry.get("hookFail") and status >= 400:
            validate({"$ref": "#/definitions/ErrorResponse"})
            return problems, quirks
        problems.append(f"{where}: status {status} is not documented (documented: {sorted(responses)})")
        return problems, quirks
    schema = documented.get("schema")
    if schema is None:
        if length:
            problems.append(f"{where}: a body ({length} bytes) where the document gives none")
        return problems, quirks
    if schema.get("type") == "file":
        produces = op.op.get("produces") or []
        if produces and ctype not in produces:
            problems.append(f"{where}: content type {ctype or 'none'}, documented {produces}")
        return problems, quirks
    validate(schema)
    return problems, quirks


def check_log(path: str, requests_only: bool = False) -> int:
    load()
    problems, quirk_counts, routes, n = [], {}, {}, 0
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            if not line.strip():
                continue
            n += 1
            entry = json.loads(line)
            body = entry.get("body")
            if body is None and entry.get("multipartFields") is not None:
                body = entry["multipartFields"]
            elif body is None and entry.get("bodyLength"):
                body = b"x" * entry["bodyLength"]
            try:
                op = match_request(entry["method"], entry["path"], entry.get("query"), entry.get("contentType"), body)
                if entry.get("expectInvalid"):
                    problems.append(f"line {lineno}: request: {entry['method']} {entry['path']} was sent as invalid "
                                    "on purpose (X-Fake-Expect-Invalid) but matches {op}")
            except ContractError as e:
                if not entry.get("expectInvalid"):
                    problems += [f"line {lineno}: request: {p}" for p in e.problems]
                    continue
                op = find_operation(entry["method"], entry["path"])
                if op is None:
                    continue
                quirk_counts["invalid-on-purpose"] = quirk_counts.get("invalid-on-purpose", 0) + 1
            routes[str(op)] = routes.get(str(op), 0) + 1
            if requests_only:
                continue
            probs, quirks = check_response(op, entry)
            problems += [f"line {lineno}: answer: {p}" for p in probs]
            for q in quirks:
                quirk_counts[q] = quirk_counts.get(q, 0) + 1
    print(f"contract: {n} logged requests, {len(routes)} documented operations:")
    for r, c in sorted(routes.items()):
        print(f"  {c:4d}  {r}")
    for q, c in sorted(quirk_counts.items()):
        print(f"  quirk {q} x{c}: {QUIRKS[q]}")
    if n == 0:
        problems.append("the log is empty: nothing was checked")
    if problems:
        print(f"contract: {len(problems)} mismatch(es):", file=sys.stderr)
        for p in problems:
            print("  " + p, file=sys.stderr)
        return 1
    print("contract: every request matches a documented operation" + ("" if requests_only else " and every answer validates"))
    return 0


def self_test() -> int:
    """The checker is not vacuous: each planted mismatch is reported, and a changed document fails
    the pin."""
    import shutil
    import subprocess
    import tempfile

    sandbox = {"id": "s1", "organizationId": "o", "name": "n", "user": "daytona", "env": {}, "labels": {},
               "public": False, "networkBlockAll": False, "kvm": False, "target": "us", "cpu": 1, "gpu": 0,
               "memory": 1, "disk": 3, "state": "started", "toolboxProxyUrl": "http://127.0.0.1:1/toolbox"}
    ok = {"method": "GET", "path": "/api/sandbox/n", "query": {}, "status": 200, "response": sandbox,
          "responseContentType": "application/json", "responseLength": 1}
    planted = [
        ("a required response field missing", dict(ok, response={k: v for k, v in sandbox.items() if k != "toolboxProxyUrl"}), "required property"),
        ("an undeclared response field", dict(ok, response=dict(sandbox, cpuCount=1)), "cpuCount"),
        ("a state not in the enum", dict(ok, response=dict(sandbox, state="running")), "running"),
        ("an undocumented method", dict(ok, method="PATCH"), "has no PATCH"),
        ("an unknown path", dict(ok, path="/api/sandboxes"), "no api path template"),
        ("an undocumented query parameter", dict(ok, query={"verbos": ["true"]}), "verbos"),
        ("a wrongly typed query parameter", dict(ok, path="/api/sandbox", query={"limit": ["many"]},
                                                 response={"items": [], "nextCursor": None}), "not a number"),
        ("a misspelt body field", {"method": "POST", "path": "/api/sandbox", "query": {}, "contentType": "application/json",
                                   "body": {"name": "n", "autoStopIntervall": 5}, "status": 200, "response": sandbox,
                                   "responseContentType": "application/json", "responseLength": 1}, "autoStopIntervall"),
        ("a missing required toolbox parameter", {"method": "GET", "path": "/toolbox/s1/files/info", "query": {},
                                                  "status": 404, "responseLength": 0}, "'path' is missing"),
        ("bulk-upload fields out of order", {"method": "POST", "path": "/toolbox/s1/files/bulk-upload", "query": {},
                                             "contentType": "multipart/form-data; boundary=b",
                                             "multipartFields": ["files[0].file", "files[0].path"], "status": 200,
                                             "response": {"files": []}, "responseContentType": "application/json",
                                             "responseLength": 1}, "files[i].path then"),
        ("an empty toolbox error body where no quirk allows it", {"method": "POST", "path": "/toolbox/s1/process/execute",
                                                                 "query": {}, "contentType": "application/json",
                                                                 "body": {"command": "x"}, "status": 408,
                                                                 "responseLength": 0}, "empty error body"),
        ("a main-API error that is not a NestJS body", dict(ok, status=404, response={"detail": "Not Found"}), "detail"),
        ("an undocumented success status", dict(ok, status=202), "not documented"),
        ("an invalid-on-purpose request that is valid", dict(ok, expectInvalid=True), "on purpose"),
    ]
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        for what, entry, needle in planted:
            log = Path(tmp) / "log.jsonl"
            log.write_text(json.dumps(entry) + "\n")
            out = subprocess.run([sys.executable, __file__, "check-log", str(log)], capture_output=True, text=True)
            caught = out.returncode != 0 and needle in out.stderr
            print(("ok   " if caught else "FAIL ") + f"caught: {what}")
            if not caught:
                failures.append(f"{what}: exit {out.returncode}, looked for {needle!r} in:\n{out.stderr}{out.stdout}")
        log = Path(tmp) / "log.jsonl"
        log.write_text(json.dumps(ok) + "\n")
        out = subprocess.run([sys.executable, __file__, "check-log", str(log)], capture_output=True, text=True)
        print(("ok   " if out.returncode == 0 else "FAIL ") + "a correct entry passes")
        if out.returncode != 0:
            failures.append(f"a correct entry fails: {out.stderr}")
        copy_dir = Path(tmp) / "specs"
        shutil.copytree(specs_dir(), copy_dir)
        with open(copy_dir / "toolbox.json", "ab") as f:
            f.write(b"\n")
        env = dict(os.environ, DAYTONA_SPECS_DIR=str(copy_dir))
        out = subprocess.run([sys.executable, __file__, "pin"], capture_output=True, text=True, env=env)
        caught = out.returncode != 0 and "toolbox.json: sha256" in out.stderr
        print(("ok   " if caught else "FAIL ") + "caught: a changed document")
        if not caught:
            failures.append(f"a changed document passes the pin: {out.stderr}")
    if failures:
        print("contract self-test: the checker missed:", file=sys.stderr)
        for f in failures:
            print("  " + f, file=sys.stderr)
        return 1
    print("contract self-test: every planted mismatch was caught")
    return 0


def main(argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__)
        return 2
    cmd = argv[0]
    if cmd == "pin":
        problems = pin_problems()
        for p in problems:
            print("contract: " + p, file=sys.stderr)
        if not problems:
            print(f"contract: {', '.join(PINNED)} in {specs_dir()} are the pinned ones")
        return 1 if problems else 0
    if cmd == "check-log" and len(argv) >= 2:
        problems = pin_problems()
        if problems:
            for p in problems:
                print("contract: " + p, file=sys.stderr)
            return 1
        return check_log(argv[1], requests_only="--requests-only" in argv)
    if cmd == "self-test":
        return self_test()
    if cmd == "drive" and len(argv) >= 2:
        sys.path.insert(0, str(HERE))
        from contract_drive import drive
        return drive(argv[1], argv[2] if len(argv) > 2 else os.environ.get("DAYTONA_API_KEY", "fake-daytona-key"))
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
