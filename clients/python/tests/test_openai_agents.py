"""OpenAI Agents SDK: `Runner.run` of a `SandboxAgent` with a scripted model of this test's own
(no network) in a session of `AgenticosSandboxClient`: it writes a file (apply_patch), runs a
command, patches the file and reads it back; the files are in the run's workspace on the host,
every operation is in the operation log, a second process resumes from the serialized state,
a snapshot taken at close is a console snapshot that restores into a new session, and
`delete` leaves no session."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from agents import RunConfig, Runner
from agents.items import ModelResponse
from agents.models.interface import Model
from agents.run_config import SandboxRunConfig
from agents.sandbox import Manifest, SandboxAgent
from agents.sandbox.entries import File
from agents.sandbox.errors import ConfigurationError, MountConfigError, WorkspaceRootNotFoundError
from agents.sandbox.snapshot import LocalSnapshotSpec
from agents.usage import Usage
from openai.types.responses import (
    ResponseCustomToolCall,
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
)

from agenticos_sandbox.openai_agents import AgenticosSandboxClient, AgenticosSandboxClientOptions, console_snapshot_ref

from .conftest import rows

ADD = "*** Begin Patch\n*** Add File: notes.md\n+first line\n*** End Patch"
UPDATE = "*** Begin Patch\n*** Update File: notes.md\n@@\n-first line\n+patched line\n*** End Patch"


class ScriptedModel(Model):
    """Returns these tool calls one response at a time, then a message with the last output."""

    def __init__(self, steps: list) -> None:
        self.steps = list(steps)
        self.seen: list = []

    async def get_response(self, system_instructions, input, model_settings, tools, output_schema, handoffs, tracing, **kw):
        self.seen.append(input)
        if self.steps:
            return ModelResponse(output=[self.steps.pop(0)], usage=Usage(), response_id=None)
        last = [i for i in input if isinstance(i, dict) and i.get("type") in ("function_call_output", "custom_tool_call_output")][-1]
        text = ResponseOutputText(type="output_text", text=str(last.get("output")), annotations=[])
        message = ResponseOutputMessage(id="m", type="message", role="assistant", status="completed", content=[text])
        return ModelResponse(output=[message], usage=Usage(), response_id=None)

    def stream_response(self, *args, **kw):
        raise NotImplementedError


def shell(call_id: str, cmd: str) -> ResponseFunctionToolCall:
    args = json.dumps({"cmd": cmd, "login": False, "yield_time_ms": 30000})
    return ResponseFunctionToolCall(type="function_call", call_id=call_id, name="exec_command", arguments=args)


def patch(call_id: str, text: str) -> ResponseCustomToolCall:
    return ResponseCustomToolCall(type="custom_tool_call", call_id=call_id, name="apply_patch", input=text)


def host_dir(setup, console, run_id: str) -> Path:
    return Path(setup.peer_root) / console.workspace_state(run_id)["session_key"] / "workspace"


async def test_a_sandbox_agent_works_in_a_console_run(setup, console, tmp_path):
    client = AgenticosSandboxClient(url=setup.url, token=setup.token)
    options = AgenticosSandboxClientOptions(agent_id=setup.agent_id)
    manifest = Manifest(entries={"seed.txt": File(content=b"seeded\n")})
    session = await client.create(manifest=manifest, snapshot=LocalSnapshotSpec(base_path=tmp_path), options=options)
    run_id = session._inner.state.run_id
    await session.start()

    model = ScriptedModel(
        [
            patch("c1", ADD),
            shell("c2", "cat seed.txt && echo ran-in-$(pwd)"),
            patch("c3", UPDATE),
            shell("c4", "cat notes.md"),
        ]
    )
    agent = SandboxAgent(name="worker", instructions="work", model=model)
    result = await Runner.run(agent, "go", run_config=RunConfig(sandbox=SandboxRunConfig(session=session)))
    assert "patched line" in result.final_output
    outputs = json.dumps(model.seen[2], default=str)
    assert "seeded" in outputs and "ran-in-/workspace" in outputs

    files = host_dir(setup, console, run_id)
    assert (files / "notes.md").read_text().rstrip("\n") == "patched line"
    assert (files / "seed.txt").read_text() == "seeded\n"
    recorded = [(r["op"], bool(r["ok"]), r["target"]) for r in rows(console, run_id)]
    assert ("write", True, "/workspace/seed.txt") in recorded, recorded
    assert any(op == "execute" and ok and "cat notes.md" in target for op, ok, target in recorded), recorded
    assert sum(1 for op, ok, _ in recorded if op == "write" and ok) >= 3, recorded

    # A second process resumes from the serialized state and sees the same files.
    payload = client.serialize_session_state(session._inner.state)
    assert setup.token not in json.dumps(payload)
    script = textwrap.dedent(
        """
        import asyncio, json, os, sys
        from agenticos_sandbox.openai_agents import AgenticosSandboxClient
        async def main():
            client = AgenticosSandboxClient(url=os.environ["AGENTICOS_URL"], token=os.environ["AGENTICOS_TOKEN"])
            session = await client.resume(client.deserialize_session_state(json.loads(sys.stdin.read())))
            print((await session.read("notes.md")).read().decode(), end="")
        asyncio.run(main())
        """
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    second = subprocess.run([sys.executable, "-c", script], input=json.dumps(payload), capture_output=True, text=True, env=env, timeout=120)
    assert second.returncode == 0, second.stderr
    assert second.stdout.rstrip("\n") == "patched line"

    # A snapshot taken at close is a console snapshot of the run's workspace (listed there,
    # restorable from the console too); the SDK's store keeps only a reference to it.
    workspace_id = console.workspace_state(run_id)["workspace_id"]
    before = {s["id"] for s in console.snapshots(workspace_id)}
    await session.stop()
    snapshot = session._inner.state.snapshot
    assert await snapshot.restorable()
    taken = [s for s in console.snapshots(workspace_id) if s["id"] not in before]
    assert [(s["taken_by"], s["file_count"]) for s in taken] == [("on_demand", 2)], taken
    stored = (tmp_path / f"{snapshot.id}.tar").read_bytes()
    assert stored == console_snapshot_ref(taken[0]["id"])
    await client.delete(session)
    assert not (Path(setup.peer_root) / files.parent.name).exists()
    assert console.get_run(run_id)["status"] == "finished"
    with pytest.raises(WorkspaceRootNotFoundError):
        await client.resume(client.deserialize_session_state(payload))

    # ... and restores into a new session: its run is opened from that console snapshot, whose
    # files the console writes at the run's first operation.
    restored = await client.create(snapshot=snapshot, options=options)
    await restored.start()
    new_run = restored._inner.state.run_id
    assert (await restored.read("notes.md")).read().rstrip(b"\n") == b"patched line"
    assert (await restored.read("seed.txt")).read() == b"seeded\n"
    assert "restored from the snapshot" in console.workspace_state(new_run)["started_from"]
    restored_rows = [(r["op"], r["target"]) for r in rows(console, new_run)]
    assert ("write", "/workspace/notes.md") in restored_rows, restored_rows

    # A session that is already running restores a console snapshot by its archive.
    (await restored.read("notes.md")).close()
    await restored._inner._exec_internal("sh", "-c", "rm -f notes.md seed.txt")
    await restored.hydrate_workspace(io.BytesIO(console_snapshot_ref(taken[0]["id"])))
    assert (await restored.read("notes.md")).read().rstrip(b"\n") == b"patched line"
    await client.delete(restored)


async def test_what_the_console_does_not_offer_is_refused_with_the_sdks_errors_and_output_is_exact_on_request(setup):
    client = AgenticosSandboxClient(url=setup.url, token=setup.token)
    options = AgenticosSandboxClientOptions(agent_id=setup.agent_id)
    from agents.sandbox.entries import DockerVolumeMountStrategy, S3Mount

    mount = S3Mount(bucket="b", mount_strategy=DockerVolumeMountStrategy(driver="rclone"))
    with pytest.raises(MountConfigError):
        await client.create(manifest=Manifest(entries={"data": mount}), options=options)
    with pytest.raises(ConfigurationError):
        await client.create(manifest=Manifest(root="/srv"), options=options)
    session = await client.create(options=options)
    assert not session._inner.supports_pty()
    assert (await session._inner._exec_internal("printf", "\\377")).stdout == "\ufffd".encode()
    await client.delete(session)
    exact = await client.create(options=AgenticosSandboxClientOptions(agent_id=setup.agent_id, exact_output=True))
    assert (await exact._inner._exec_internal("printf", "\\377")).stdout == b"\xff"
    await client.delete(exact)
