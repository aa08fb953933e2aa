"""Pydantic AI: an `Agent` with a scripted `FunctionModel` and `ConsoleCapability` over
`AgenticosWorkspace` writes, runs and reads in a console run's workspace; every operation is a
row of the console's log; a second agent run with the same ref sees the files."""

from __future__ import annotations

import os

from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai_backends import ConsoleCapability
from pydantic_ai_backends.permissions import PERMISSIVE_RULESET

from agenticos_sandbox.pydantic_ai import AGENTICOS_PROVIDER, AgenticosWorkspace

from .conftest import rows


def scripted(steps: list[list[ToolCallPart]]):
    """A model that makes the tool calls of `steps` in turn, then answers with what the tools
    returned."""

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        done = sum(1 for m in messages if isinstance(m, ModelResponse))
        if done < len(steps):
            return ModelResponse(parts=list(steps[done]))
        returned = [
            str(p.content) for m in messages for p in getattr(m, "parts", []) if isinstance(p, ToolReturnPart)
        ]
        return ModelResponse(parts=[TextPart("\n".join(returned))])

    return FunctionModel(model)


def tool(name: str, **args: object) -> ToolCallPart:
    return ToolCallPart(tool_name=name, args=args)


async def test_an_agent_writes_runs_and_reads_and_a_second_run_sees_the_files(setup, console):
    workspace = AgenticosWorkspace(url=setup.url, token=setup.token, agent_id=setup.agent_id)
    first = Agent(
        scripted(
            [
                [tool("write_file", path="/workspace/notes/plan.md", content="step one\n")],
                [tool("execute", command="cat notes/plan.md > notes/copy.md && echo ran-in-$PWD")],
                [tool("read_file", path="/workspace/notes/copy.md")],
            ]
        ),
        capabilities=[workspace, ConsoleCapability(permissions=PERMISSIVE_RULESET)],
    )
    result = await first.run("work")
    assert "ran-in-/workspace" in result.output and "step one" in result.output
    ref = result.all_messages()[-1].workspace_ref
    assert ref is not None and ref.provider == AGENTICOS_PROVIDER

    state = console.workspace_state(ref.id)
    host_dir = os.path.join(setup.peer_root, state["session_key"], "workspace")
    with open(os.path.join(host_dir, "notes", "copy.md")) as f:
        assert f.read() == "step one\n"

    second = Agent(
        scripted([[tool("read_file", path="/workspace/notes/plan.md")], [tool("execute", command="ls notes")]]),
        capabilities=[workspace, ConsoleCapability(permissions=PERMISSIVE_RULESET)],
    )
    again = await second.run("again", workspace=ref)
    assert "step one" in again.output and "copy.md" in again.output
    assert again.all_messages()[-1].workspace_ref == ref

    ops = [(r["op"], bool(r["ok"])) for r in rows(console, ref.id)]
    assert ("write", True) in ops and ("read", True) in ops
    assert ops.count(("execute", True)) >= 2

    await workspace.destroy(ref)
    assert console.get_run(ref.id)["status"] == "finished"
