"""Scope through the providers. The console agent's scope decides which workspace a run gets;
`POST /api/v1/runs` has no field to choose another (an unknown field is refused, naming it), so
no provider offers one. What a run may name is the scope's subject, and each provider passes it
through: a `conversation`-scoped agent's runs of one conversation share one workspace, another
conversation's runs get another, and a run naming none is refused naming `conversation_id`."""

from __future__ import annotations

import io
import uuid

import pytest
from agents.sandbox.errors import WorkspaceReadNotFoundError

from agenticos_sandbox import errors
from agenticos_sandbox.client import _Call
from agenticos_sandbox.deepagents import AgenticosSandboxClient
from agenticos_sandbox.openai_agents import AgenticosSandboxClient as OpenAIClient
from agenticos_sandbox.openai_agents import AgenticosSandboxClientOptions
from agenticos_sandbox.pydantic_ai import AgenticosWorkspace


@pytest.fixture()
def conversation_agent(console):
    body = {"name": f"per-conversation-{uuid.uuid4().hex[:8]}", "backend": "service", "scope": "conversation"}
    return console.call(_Call("POST", "/api/v1/agents", json_body=body))["id"]


async def test_a_conversation_scoped_agents_runs_share_their_conversations_workspace(setup, console, conversation_agent):
    mine = console.create_conversation(conversation_agent, "mine")["id"]
    theirs = console.create_conversation(conversation_agent, "theirs")["id"]

    deep = AgenticosSandboxClient(setup.url, setup.token, agent_id=conversation_agent)
    first = deep.create(conversation_id=mine)
    assert first.write("/workspace/shared.txt", "one conversation").error is None
    deep.delete(first.id)

    openai = OpenAIClient(url=setup.url, token=setup.token)
    again = await openai.create(options=AgenticosSandboxClientOptions(agent_id=conversation_agent, conversation_id=mine))
    assert (await again.read("shared.txt")).read() == b"one conversation"
    await again._inner.write("from-openai.txt", io.BytesIO(b"second run"))
    await openai.delete(again)

    pyd = AgenticosWorkspace(url=setup.url, token=setup.token, agent_id=conversation_agent, run={"conversation_id": mine})
    backend = pyd.backend()
    assert await backend.read_bytes("/workspace/from-openai.txt") == b"second run"
    await pyd.destroy(backend.ref)

    other = await openai.create(options=AgenticosSandboxClientOptions(agent_id=conversation_agent, conversation_id=theirs))
    with pytest.raises(WorkspaceReadNotFoundError):
        await other.read("shared.txt")
    await openai.delete(other)

    with pytest.raises(errors.InvalidInput) as refused:
        deep.create()
    assert "conversation_id" in refused.value.fields
    deep.close()


def test_a_run_cannot_choose_a_scope(setup, console, conversation_agent):
    body = {"agent_id": conversation_agent, "started_by": "api", "scope": "run"}
    with pytest.raises(errors.ApiError) as refused:
        console.call(_Call("POST", "/api/v1/runs", json_body=body))
    assert refused.value.status in (400, 422) and "scope" in str(refused.value)
    assert "scope" not in AgenticosSandboxClientOptions.model_fields
