"""Each provider's added time per operation over the raw REST call: a 1 KiB write, a 1 KiB read
and an `echo`, in one run of the console agent. Every request sends `Accept-Encoding: gzip`.

The measure is paired, so that it holds on a loaded machine: in every round, for each operation
and each provider (in an order that rotates from round to round), the raw call and the provider's
call are sent back to back, which one goes first alternating, and the difference (provider - raw)
is kept. Whatever slows the machine during a pair slows both calls of it, so the differences
carry the providers' own time and much less of the load's. The first tenth of the rounds is a
warm-up and not counted.

Every HTTP exchange is timed too, where httpx hands the request to its connection pool and reads
the answer's bytes (every one must send `Accept-Encoding: gzip`, or the bench stops): a call's
time outside its exchanges is the client's own, which the server's and the network's noise does
not reach. Printed per operation and variant: p50 / p95 and the HTTP requests a call sends; then
per provider, of the paired differences: "wall" (the whole call), "own" (the call's time outside
its exchanges) and "cpu" (this process's CPU time), the p50 with a 95 % confidence interval
(order statistics, no assumption on the shape of the noise) and the p95; and a goal line for
wall and own: the added p50 is at most 1 ms if the interval's upper end is ("met"), over it if
its lower end is ("NOT met"), and "not shown" otherwise. "own" stands for the added time only
when the provider sends as many requests as the raw call (else it says so): an extra request
is in the wall time, not in the own.

    AGENTICOS_URL=... AGENTICOS_TOKEN=... AGENTICOS_AGENT_ID=... python bench/overhead.py [ROUNDS]

Run by `cargo bench --bench agents_overhead`, which starts the console and a sandboxd peer.
"""

from __future__ import annotations

import asyncio
import io
import math
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
RAW = "raw REST"
GOAL_MS = 1.0

Call = Callable[[], Awaitable[object]]

# Every HTTP exchange of this process (the raw client's and the providers'), timed where httpx
# hands the request to its connection pool and reads the answer's bytes: the rest of a call's
# wall time is the client's own (building the request, reading the answer, the provider's code).
_net = {"seconds": 0.0, "requests": 0}
_send = httpx.AsyncHTTPTransport.handle_async_request


class _TimedStream(httpx.AsyncByteStream):
    def __init__(self, inner: httpx.AsyncByteStream) -> None:
        self._inner = inner

    async def __aiter__(self):  # type: ignore[override]
        chunks = self._inner.__aiter__()
        while True:
            started = time.perf_counter()
            try:
                chunk = await chunks.__anext__()
            except StopAsyncIteration:
                _net["seconds"] += time.perf_counter() - started
                return
            _net["seconds"] += time.perf_counter() - started
            yield chunk

    async def aclose(self) -> None:
        await self._inner.aclose()


async def _timed_send(self: httpx.AsyncHTTPTransport, request: httpx.Request) -> httpx.Response:
    if "gzip" not in request.headers.get("accept-encoding", ""):
        raise AssertionError(f"{request.method} {request.url.path} does not send Accept-Encoding: gzip")
    _net["requests"] += 1
    started = time.perf_counter()
    response = await _send(self, request)
    _net["seconds"] += time.perf_counter() - started
    response.stream = _TimedStream(response.stream)  # type: ignore[arg-type]
    return response


httpx.AsyncHTTPTransport.handle_async_request = _timed_send  # type: ignore[method-assign]


def percentile(values: list[float], q: float) -> float:
    """The `q` quantile (0..1) of `values`, nearest rank."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))]


def median_interval(values: list[float]) -> tuple[float, float]:
    """A 95 % confidence interval of the median: the order statistics k and n-k+1 (1-based) with
    k the largest for which P(Binomial(n, 1/2) < k) <= 2.5 %, from the normal approximation."""
    ordered = sorted(values)
    n = len(ordered)
    k = max(1, math.floor(n / 2 - 1.96 * math.sqrt(n) / 2))
    return ordered[k - 1], ordered[n - k]


def goal(low: float, high: float) -> str:
    if high <= GOAL_MS:
        return "met"
    if low > GOAL_MS:
        return "NOT met"
    return "not shown"


async def timed(call: Call) -> tuple[float, float, float, int]:
    """(wall ms, this process's CPU ms, the client's own ms: wall outside the HTTP exchanges,
    HTTP requests sent) of one call."""
    net, requests = _net["seconds"], _net["requests"]
    started, started_cpu = time.perf_counter(), time.process_time()
    await call()
    wall = (time.perf_counter() - started) * 1000
    cpu = (time.process_time() - started_cpu) * 1000
    return wall, cpu, wall - (_net["seconds"] - net) * 1000, _net["requests"] - requests


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

    ops: dict[str, dict[str, Call]] = {
        "write 1 KiB": {
            RAW: raw_write,
            "deepagents": lambda: deep.aupload_files([(PATH, KIB)]),
            "pydantic-ai": lambda: pyd.write_bytes(PATH, KIB),
            "openai-agents": lambda: inner.write(PATH, io.BytesIO(KIB)),
        },
        "read 1 KiB": {
            RAW: raw_read,
            "deepagents": lambda: deep.adownload_files([PATH]),
            "pydantic-ai": lambda: pyd.read_bytes(PATH),
            "openai-agents": lambda: inner.read(PATH),
        },
        "echo": {
            RAW: raw_echo,
            "deepagents": lambda: deep.aexecute("echo hi"),
            "pydantic-ai": lambda: pyd.run("echo hi", shell=True),
            "openai-agents": lambda: inner._exec_internal("sh", "-c", "echo hi"),
        },
    }
    wall: dict[tuple[str, str], list[float]] = {(o, v): [] for o, vs in ops.items() for v in vs}
    cpu: dict[tuple[str, str], list[float]] = {(o, v): [] for o, vs in ops.items() for v in vs}
    paired: dict[tuple[str, str], list[float]] = {(o, v): [] for o, vs in ops.items() for v in vs if v != RAW}
    paired_cpu: dict[tuple[str, str], list[float]] = {k: [] for k in paired}
    paired_own: dict[tuple[str, str], list[float]] = {k: [] for k in paired}
    requests: dict[tuple[str, str], set[int]] = {k: set() for k in wall}
    warm_up = rounds // 10
    for r in range(warm_up + rounds):
        counted = r >= warm_up
        for op, variants in ops.items():
            providers = [name for name in variants if name != RAW]
            shift = r % len(providers)
            for i, name in enumerate(providers[shift:] + providers[:shift]):
                provider_first = (r + i) % 2 == 1
                first, second = (name, RAW) if provider_first else (RAW, name)
                took = {first: await timed(variants[first])}
                took[second] = await timed(variants[second])
                if counted:
                    for who in (RAW, name):
                        wall[(op, who)].append(took[who][0])
                        cpu[(op, who)].append(took[who][1])
                        requests[(op, who)].add(took[who][3])
                    paired[(op, name)].append(took[name][0] - took[RAW][0])
                    paired_cpu[(op, name)].append(took[name][1] - took[RAW][1])
                    paired_own[(op, name)].append(took[name][2] - took[RAW][2])

    print(f"provider overhead over raw REST: {rounds} rounds after {warm_up} of warm-up, each round one")
    print("back-to-back pair (raw, provider) per provider and operation, order rotated and alternated;")
    print("all in ms; added = provider - raw within a pair, p50 [95 % interval of the p50] and p95:")
    print("  wall: the whole call; own: the call's time outside its HTTP exchanges (the client's own);")
    print(f"  cpu: this process's CPU. Goal: added p50 <= {GOAL_MS:g} ms (met / NOT met / not shown)")

    def added(d: list[float]) -> tuple[str, str]:
        low, high = median_interval(d)
        return (
            f"{statistics.median(d):+.3f} [{low:+.3f}, {high:+.3f}] p95 {percentile(d, 0.95):+.3f}",
            goal(low, high),
        )

    for op, variants in ops.items():
        for name in variants:
            w = wall[(op, name)]
            sent = "/".join(str(n) for n in sorted(requests[(op, name)]))
            print(
                f"  {op:12} {name:14} p50 {statistics.median(w):8.3f}  p95 {percentile(w, 0.95):8.3f}"
                f"  requests a call {sent}"
            )
            if name == RAW:
                continue
            (wall_added, wall_goal), (own_added, own_goal) = added(paired[(op, name)]), added(paired_own[(op, name)])
            if requests[(op, name)] != requests[(op, RAW)]:
                own_goal = "not comparable: not the raw call's requests"
            print(f"      added wall {wall_added}  goal {wall_goal}")
            print(f"      added own  {own_added}  goal {own_goal}")
            print(f"      added cpu  {statistics.median(paired_cpu[(op, name)]):+.3f}")
    await console.finish_run(run_id)
    await raw.aclose()


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 600))
