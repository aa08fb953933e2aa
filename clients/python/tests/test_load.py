"""Load: concurrent framework sessions (a mix of the three providers, in one event loop) work
against the console and the real peer for a while: no 5xx, and the operation log has exactly
one row per operation the providers had acknowledged.

`AGENTICOS_LOAD_SESSIONS` (default 50) and `AGENTICOS_LOAD_SECONDS` (default 60) size it."""

from __future__ import annotations

import asyncio
import io
import os
import time

from agents.sandbox import Manifest
from pydantic_ai.workspaces import WorkspaceRef

from agenticos_sandbox import AsyncConsole, errors
from agenticos_sandbox.deepagents import AgenticosSandbox
from agenticos_sandbox.openai_agents import AgenticosSandboxClient, AgenticosSandboxClientOptions
from agenticos_sandbox.pydantic_ai import AGENTICOS_PROVIDER, AgenticosWorkspace

from .conftest import rows


async def deepagents_ops(setup, console: AsyncConsole, run_id: str, n: int):
    sandbox = AgenticosSandbox(None, run_id, aconsole=console)  # type: ignore[arg-type]
    path = f"/workspace/d{n}.txt"
    return [
        lambda: _ok_upload(sandbox.aupload_files([(path, b"d" * 512)])),
        lambda: _ok_download(sandbox.adownload_files([path])),
        lambda: sandbox.aexecute(f"echo {n}"),
    ]


async def pydantic_ops(setup, console: AsyncConsole, run_id: str, n: int):
    workspace = AgenticosWorkspace(url=setup.url, token=setup.token, agent_id=setup.agent_id)
    workspace._console = console
    backend = workspace.backend(WorkspaceRef(provider=AGENTICOS_PROVIDER, id=run_id))
    path = f"p{n}.txt"
    return [
        lambda: backend.write_bytes(path, b"p" * 512),
        lambda: backend.read_bytes(path),
        lambda: backend.run(["echo", str(n)]),
    ]


async def openai_ops(setup, console: AsyncConsole, run_id: str, n: int):
    client = AgenticosSandboxClient(url=setup.url, token=setup.token)
    client._console = console
    session = await client.create(manifest=Manifest(), options=AgenticosSandboxClientOptions(agent_id=setup.agent_id))
    await console.finish_run(session._inner.state.run_id)  # the session is pointed at `run_id`
    inner = session._inner
    inner.state.run_id = run_id
    path = f"/workspace/o{n}.txt"
    return [
        lambda: inner.write(path, io.BytesIO(b"o" * 512)),
        lambda: inner.read(path),
        lambda: inner._exec_internal("echo", str(n)),
    ]


async def _ok_upload(call):
    (response,) = await call
    assert response.error is None, response.error


async def _ok_download(call):
    (response,) = await call
    assert response.error is None, response.error


async def test_concurrent_sessions_lose_nothing_and_answer_no_5xx(setup):
    sessions = int(os.environ.get("AGENTICOS_LOAD_SESSIONS", "50"))
    seconds = float(os.environ.get("AGENTICOS_LOAD_SECONDS", "60"))
    console = AsyncConsole(setup.url, setup.token, timeout=120)
    makers = [deepagents_ops, pydantic_ops, openai_ops]
    runs, loops = [], []
    for n in range(sessions):
        run_id = (await console.create_run(setup.agent_id))["id"]
        runs.append(run_id)
        loops.append(await makers[n % 3](setup, console, run_id, n))
    acknowledged = {r: 0 for r in runs}
    server_errors: list[str] = []
    deadline = time.monotonic() + seconds

    async def work(run_id: str, ops) -> None:
        i = 0
        while time.monotonic() < deadline:
            try:
                await ops[i % len(ops)]()
                acknowledged[run_id] += 1
            except errors.ApiError as e:
                if e.status >= 500:
                    server_errors.append(str(e))
                else:
                    raise
            i += 1

    await asyncio.gather(*(work(r, ops) for r, ops in zip(runs, loops)))
    assert server_errors == []
    recorded = {r: len(rows_of(setup, r)) for r in runs}
    assert recorded == acknowledged
    assert sum(acknowledged.values()) >= sessions * 3
    print(f"load: {sessions} sessions, {seconds:.0f} s, {sum(acknowledged.values())} operations acknowledged and recorded")
    for r in runs:
        await console.finish_run(r)


def rows_of(setup, run_id: str) -> list[dict]:
    from agenticos_sandbox import Console

    with Console(setup.url, setup.token) as c:
        return rows(c, run_id)
