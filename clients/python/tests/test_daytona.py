"""The providers on a Daytona connection, against the FAKE Daytona (tests/peer/daytona/; no
Daytona can run here): files under /workspace and commands through each provider, recorded like
any other operation. Run by tests/api/agents_python.rs with a Daytona agent as
`AGENTICOS_AGENT_ID` and `AGENTICOS_DAYTONA=1`."""

from __future__ import annotations

import io
import os

import pytest
from agents.sandbox import Manifest

from agenticos_sandbox.deepagents import AgenticosSandboxClient
from agenticos_sandbox.openai_agents import AgenticosSandboxClient as OpenAIClient
from agenticos_sandbox.openai_agents import AgenticosSandboxClientOptions
from agenticos_sandbox.pydantic_ai import AgenticosWorkspace

from .conftest import rows

pytestmark = pytest.mark.skipif(os.environ.get("AGENTICOS_DAYTONA") != "1", reason="needs a Daytona agent")


async def test_each_provider_works_in_a_daytona_sandbox(setup, console):
    client = AgenticosSandboxClient(setup.url, setup.token, agent_id=setup.agent_id)
    backend = client.create()
    assert backend.upload_files([("/workspace/d.txt", b"on daytona")])[0].error is None
    assert backend.execute("cat d.txt").output.strip() == "on daytona"
    assert backend.download_files(["/workspace/d.txt"])[0].content == b"on daytona"
    assert console.workspace_state(backend.id)["backend"] == "daytona"
    assert [r["op"] for r in rows(console, backend.id)] == ["write", "execute", "read"]
    client.delete(backend.id)

    workspace = AgenticosWorkspace(url=setup.url, token=setup.token, agent_id=setup.agent_id)
    pyd = workspace.backend()
    await pyd.write_bytes("p.txt", b"p")
    assert (await pyd.run(["cat", "p.txt"])).stdout == "p"
    assert await pyd.read_bytes("/workspace/p.txt") == b"p"
    await workspace.destroy(pyd.ref)

    openai = OpenAIClient(url=setup.url, token=setup.token)
    session = await openai.create(manifest=Manifest(), options=AgenticosSandboxClientOptions(agent_id=setup.agent_id))
    inner = session._inner
    await inner.write("o.txt", io.BytesIO(b"o"))
    assert (await inner.read("o.txt")).read() == b"o"
    assert (await inner._exec_internal("cat", "o.txt")).stdout == b"o"
    await openai.delete(session)
