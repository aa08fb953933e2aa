"""Governance holds through the providers: what the API refuses, each provider refuses with
the exception of the same problem type, and nothing reaches the host."""

from __future__ import annotations

import uuid

import httpx
import pytest
from pydantic_ai.workspaces import WorkspaceRef, WorkspaceUnavailableError

from agenticos_sandbox import errors
from agenticos_sandbox.deepagents import AgenticosSandbox, AgenticosSandboxClient
from agenticos_sandbox.pydantic_ai import AGENTICOS_PROVIDER, AgenticosWorkspace

from .conftest import rows


def raw(setup, token: str, method: str, path: str, **kw) -> httpx.Response:
    return httpx.request(method, setup.url + path, headers={"Authorization": f"Bearer {token}"}, **kw)


@pytest.fixture()
def member_token(setup, console):
    created = console.create_token(f"member-{uuid.uuid4().hex[:8]}", "member")
    yield created["token"]["id"], created["value"]


def test_a_member_token_is_refused_as_the_api_refuses_it(setup, console, member_token):
    _, value = member_token
    run_id = console.create_run(setup.agent_id)["id"]
    api = raw(setup, value, "POST", f"/api/v1/runs/{run_id}/workspace/exec", json={"command": "true"})
    assert api.status_code in (403, 404), api.text
    expected = errors.error_for(api.status_code, api.json(), "POST", "").__class__

    member = AgenticosSandboxClient(setup.url, value, agent_id=setup.agent_id)
    with pytest.raises(expected):
        member._sandbox(run_id).execute("true")
    with pytest.raises(expected):
        member._sandbox(run_id).upload_files([("/workspace/m.txt", b"x")])
    assert rows(console, run_id) == []
    console.finish_run(run_id)


def test_another_organizations_run_is_not_found(setup):
    client = AgenticosSandboxClient(setup.url, setup.token, agent_id=setup.agent_id)
    for run_id in (setup.other_run_id, str(uuid.uuid4())):
        with pytest.raises(errors.NotFound):
            client.get(run_id)
        with pytest.raises(errors.NotFound):
            client._sandbox(run_id).execute("true")
        with pytest.raises(errors.NotFound):
            client._sandbox(run_id).download_files(["/workspace/a.txt"])


async def test_another_organizations_run_is_unavailable_to_pydantic_ai(setup):
    workspace = AgenticosWorkspace(url=setup.url, token=setup.token, agent_id=setup.agent_id)
    backend = workspace.backend(WorkspaceRef(provider=AGENTICOS_PROVIDER, id=setup.other_run_id))
    with pytest.raises(WorkspaceUnavailableError):
        await backend.read_bytes("a.txt")


def test_a_revoked_token_stops_the_next_call(setup, console):
    created = console.create_token(f"runtime-{uuid.uuid4().hex[:8]}", "operator")
    client = AgenticosSandboxClient(setup.url, created["value"], agent_id=setup.agent_id)
    backend = client.create()
    assert backend.execute("echo before").output.strip() == "before"
    console.revoke_token(created["token"]["id"])
    with pytest.raises(errors.Unauthenticated):
        backend.execute("echo after")
    with pytest.raises(errors.Unauthenticated):
        backend.upload_files([("/workspace/after.txt", b"x")])
    assert [r["target"] for r in rows(console, backend.id) if r["op"] == "execute"] == ["echo before"]
    console.finish_run(backend.id)


async def test_a_finished_run_cannot_be_written(setup, console):
    client = AgenticosSandboxClient(setup.url, setup.token, agent_id=setup.agent_id)
    backend = client.create()
    assert backend.upload_files([("/workspace/kept.txt", b"1")])[0].error is None
    finished = client.delete(backend.id)
    assert finished["status"] == "finished" and finished["session_state"]
    with pytest.raises(errors.Conflict):
        backend.upload_files([("/workspace/kept.txt", b"2")])
    with pytest.raises(errors.Conflict):
        await backend.aexecute("echo no")
    with pytest.raises(errors.Conflict):
        backend.upload_files([("/tmp/outside.txt", b"2")])
    workspace = AgenticosWorkspace(url=setup.url, token=setup.token, agent_id=setup.agent_id)
    with pytest.raises(WorkspaceUnavailableError):
        await workspace.backend(WorkspaceRef(provider=AGENTICOS_PROVIDER, id=backend.id)).write_bytes("k.txt", b"3")
    assert [r["op"] for r in rows(console, backend.id)] == ["write"]
