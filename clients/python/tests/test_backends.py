"""The providers on the console's other backend: a `state` workspace (a document in the
console's database) keeps files through every provider, and refuses commands with the
console's message naming the backend."""

from __future__ import annotations

import io

import pytest
from agents.sandbox.errors import ExecTransportError
from agents.sandbox import Manifest

from agenticos_sandbox import errors
from agenticos_sandbox.deepagents import AgenticosSandboxClient
from agenticos_sandbox.openai_agents import AgenticosSandboxClient as OpenAIClient
from agenticos_sandbox.openai_agents import AgenticosSandboxClientOptions
from agenticos_sandbox.pydantic_ai import AgenticosWorkspace

from .conftest import rows


@pytest.fixture()
def state_agent(setup):
    if not setup.state_agent_id:
        pytest.skip("no state agent named (AGENTICOS_STATE_AGENT_ID)")
    return setup.state_agent_id


async def test_a_state_workspace_keeps_files_and_refuses_commands_naming_its_backend(setup, console, state_agent):
    client = AgenticosSandboxClient(setup.url, setup.token, agent_id=state_agent)
    backend = client.create()
    assert backend.upload_files([("/workspace/doc.txt", b"in the database")])[0].error is None
    assert backend.download_files(["/workspace/doc.txt"])[0].content == b"in the database"
    with pytest.raises(errors.BadRequest) as e:
        backend.execute("echo no")
    assert "state backend" in e.value.detail
    assert [r["op"] for r in rows(console, backend.id)] == ["write", "read"]
    client.delete(backend.id)

    workspace = AgenticosWorkspace(url=setup.url, token=setup.token, agent_id=state_agent)
    pyd = workspace.backend()
    await pyd.write_bytes("notes/p.txt", b"p")
    assert await pyd.read_bytes("/workspace/notes/p.txt") == b"p"
    with pytest.raises(ValueError, match="state backend"):
        await pyd.run(["echo", "no"])
    await workspace.destroy(pyd.ref)

    openai = OpenAIClient(url=setup.url, token=setup.token)
    session = await openai.create(manifest=Manifest(), options=AgenticosSandboxClientOptions(agent_id=state_agent))
    inner = session._inner
    await inner.write("o.txt", io.BytesIO(b"o"))
    assert (await inner.read("o.txt")).read() == b"o"
    with pytest.raises(ExecTransportError, match="state backend"):
        await inner._exec_internal("echo", "no")
    await openai.delete(session)
