"""Each provider's added time per operation over the raw REST call: a 1 KiB write, a 1 KiB read
and an `echo`, in one run of the console agent, interleaved (every round does each variant once
per operation, in an order that rotates), after a warm-up. Every request sends
`Accept-Encoding: gzip`. Prints the medians (p50) and p95 in ms, and each provider's p50 minus the
raw call's; the median of (provider - raw) over calls sent back to back in alternating order
("paired", which cancels the machine's drift between the two); and the median CPU time this
process spent per operation (the provider's own work, steadier than wall time on a shared
machine) minus the raw call's.

    AGENTICOS_URL=... AGENTICOS_TOKEN=... AGENTICOS_AGENT_ID=... python bench/overhead.py [ROUNDS]

Run by `cargo bench --bench agents_overhead`, which starts the console and a sandboxd peer.
"""

from __future__ import annotations

import asyncio
import io
import os
import statistics
import sys
import time
from collections.abc import Awaitable, Callable

import httpx
from agents.sandbox import Manifest

from agenticos_sandbox import AsyncConsole
from agenticos_sandbox.deepagents import AgenticosSandbox
from agenticos_sandbox.openai_agents import AgenticosSandboxClient, AgenticosSandboxClientOptions
from agenticos_sandbox.pydantic_ai import AgenticosWorkspace

KIB = b"x" * 1024
PATH = "/workspace/bench.txt"


async def main(rounds: int) -> None:
    url, token, agent = os.environ["AGENTICOS_URL"], os.environ["AGENTICOS_TOKEN"], os.environ["AGENTICOS_AGENT_ID"]
    console = AsyncConsole(url, token)
    run_id = (await console.create_run(agent))["id"]
    raw = httpx.AsyncClient(base_url=url, headers={"Authorization": f"Bearer {token}", "Accept-Encoding": "gzip"})
    base = f"/api/v1/runs/{run_id}/workspace"

    async def raw_write() -> None:
        (await raw.put(f"{base}/files", params={"path": PATH}, content=KIB)).raise_for_status()

    async def raw_read() -> None:
        (await raw.get(f"{base}/files", params={"path": PATH})).raise_for_status()

    async def raw_echo() -> None:
        (await raw.post(f"{base}/exec", json={"command": "echo hi"})).raise_for_status()

    deep = AgenticosSandbox(None, run_id, aconsole=console)  # type: ignore[arg-type]  # async only

    workspace = AgenticosWorkspace(url=url, token=token, agent_id=agent)
    from pydantic_ai.workspaces import WorkspaceRef

    pyd = workspace.backend(WorkspaceRef(provider="agenticos", id=run_id))

    client = AgenticosSandboxClient(url=url, token=token)
    session = await client.create(manifest=Manifest(), options=AgenticosSandboxClientOptions(agent_id=agent))
    await client.delete(session)  # its own run is not used: the session is pointed at this one
    inner = session._inner
    inner.state.run_id = run_id
    inner._console = console

    ops: dict[str, dict[str, Callable[[], Awaitable[object]]]] = {
        "write 1 KiB": {
            "raw REST": raw_write,
            "deepagents": lambda: deep.aupload_files([(PATH, KIB)]),
            "pydantic-ai": lambda: pyd.write_bytes(PATH, KIB),
            "openai-agents": lambda: inner.write(PATH, io.BytesIO(KIB)),
        },
        "read 1 KiB": {
            "raw REST": raw_read,
            "deepagents": lambda: deep.adownload_files([PATH]),
            "pydantic-ai": lambda: pyd.read_bytes(PATH),
            "openai-agents": lambda: inner.read(PATH),
        },
        "echo": {
            "raw REST": raw_echo,
            "deepagents": lambda: deep.aexecute("echo hi"),
            "pydantic-ai": lambda: pyd.run("echo hi", shell=True),
            "openai-agents": lambda: inner._exec_internal("sh", "-c", "echo hi"),
        },
    }
    times: dict[tuple[str, str], list[float]] = {(o, v): [] for o, vs in ops.items() for v in vs}
    cpu: dict[tuple[str, str], list[float]] = {(o, v): [] for o, vs in ops.items() for v in vs}
    # Each provider call right beside a raw call of the same round, in alternating order: the
    # median of those differences cancels the machine's drift, which on a shared machine moves a
    # command's wall time by more than the providers add.
    paired: dict[tuple[str, str], list[float]] = {(o, v): [] for o, vs in ops.items() for v in vs}
    for r in range(rounds + rounds // 10):
        for op, variants in ops.items():
            names = list(variants)
            names = names[r % len(names) :] + names[: r % len(names)]
            for name in names:
                started, started_cpu = time.perf_counter(), time.process_time()
                await variants[name]()
                if r >= rounds // 10:
                    times[(op, name)].append((time.perf_counter() - started) * 1000)
                    cpu[(op, name)].append((time.process_time() - started_cpu) * 1000)
            for name in names:
                if name == "raw REST":
                    continue
                pair = [variants["raw REST"], variants[name]]
                if r % 2:
                    pair.reverse()
                took = {}
                for f in pair:
                    started = time.perf_counter()
                    await f()
                    took[f] = (time.perf_counter() - started) * 1000
                if r >= rounds // 10:
                    paired[(op, name)].append(took[variants[name]] - took[variants["raw REST"]])
    print(f"provider overhead over raw REST, {rounds} interleaved rounds (ms; cpu = this process's CPU per op;")
    print("paired = median of (provider - raw) over back-to-back pairs in alternating order):")
    for op, variants in ops.items():
        raw_p50 = statistics.median(times[(op, "raw REST")])
        raw_cpu = statistics.median(cpu[(op, "raw REST")])
        for name in variants:
            t = sorted(times[(op, name)])
            p50, p95, c = statistics.median(t), t[int(len(t) * 0.95) - 1], statistics.median(cpu[(op, name)])
            added = (
                ""
                if name == "raw REST"
                else f"  added p50 {p50 - raw_p50:+.3f}  paired {statistics.median(paired[(op, name)]):+.3f}"
                f"  added cpu {c - raw_cpu:+.3f}"
            )
            print(f"  {op:12} {name:14} p50 {p50:.3f}  p95 {p95:.3f}  cpu {c:.3f}{added}")
    await console.finish_run(run_id)
    await raw.aclose()


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 300))
