"""What deepagents 0.7.32 states where the conformance suite langchain-tests 1.1.9 still states
the older protocol (test_deepagents_standard.py `SUPERSEDED`), through the provider as an
application builds it: `write` creates or overwrites (`BackendProtocol.write`), `glob` answers
regular files only, as absolute paths, a bare pattern at any depth (`BackendProtocol.glob`), in
the workspace (the console's file routes) and outside it (the run's command route)."""

from __future__ import annotations

import os
import uuid

import pytest

from agenticos_sandbox.deepagents import AgenticosSandbox, AgenticosSandboxClient

# Outside the workspace the sandbox's `/tmp` may be the test machine's own (the local peer, the
# fake Daytona), which the SQLite and PostgreSQL variants share: a name of this run's own.
OUTSIDE = f"/tmp/agenticos-protocol-{uuid.uuid4().hex}"
# On Daytona a command sees the workspace as its working directory, not at `/workspace` (only the
# console's routes use that name there), and `BaseSandbox` reads, edits and globs by commands:
# see docs/agents.md, "Not supported".
IN_WORKSPACE = pytest.param(
    "/workspace/protocol",
    marks=pytest.mark.skipif(os.environ.get("AGENTICOS_DAYTONA") == "1", reason="Daytona: commands do not see /workspace"),
)
ROOTS = [IN_WORKSPACE, OUTSIDE]


@pytest.fixture()
def backend(setup):
    client = AgenticosSandboxClient(setup.url, setup.token, agent_id=setup.agent_id)
    sandbox = client.create()
    yield sandbox
    sandbox.execute(f"rm -rf {OUTSIDE}")
    client.delete(sandbox.id)
    client.close()


@pytest.mark.parametrize("root", ROOTS)
def test_write_creates_or_overwrites(backend: AgenticosSandbox, root):
    path = f"{root}/existing.txt"
    assert backend.write(path, "First content").error is None
    second = backend.write(path, "Second content")
    assert second.error is None and second.path == path
    assert backend.execute(f"cat {path}").output == "Second content"


@pytest.mark.parametrize("root", ROOTS)
async def test_awrite_creates_or_overwrites(backend: AgenticosSandbox, root):
    path = f"{root}/existing-async.txt"
    assert (await backend.awrite(path, "First content")).error is None
    assert (await backend.awrite(path, "Second content")).error is None
    assert (await backend.aexecute(f"cat {path}")).output == "Second content"


@pytest.mark.parametrize("root", ROOTS)
async def test_glob_answers_regular_files_as_absolute_paths(backend: AgenticosSandbox, root):
    base = f"{root}/glob"
    backend.execute(f"mkdir -p {base}/dir.txt {base}/sub")
    for name in ("a.txt", "b.txt", "c.py", "sub/nested.txt", ".hidden.txt"):
        assert backend.write(f"{base}/{name}", "x").error is None

    found = backend.glob("*.txt", path=base)
    assert found.error is None
    paths = sorted(m["path"] for m in found.matches)
    # A bare pattern matches the name at any depth; a folder named like a file is never listed;
    # a name starting with a dot only when the pattern's does.
    assert paths == [f"{base}/a.txt", f"{base}/b.txt", f"{base}/sub/nested.txt"], paths
    assert not any(m.get("is_dir") for m in found.matches)

    anchored = await backend.aglob("/*.txt", path=base)
    assert sorted(m["path"] for m in anchored.matches) == [f"{base}/a.txt", f"{base}/b.txt"]
    hidden = backend.glob(".*", path=base)
    assert [m["path"] for m in hidden.matches] == [f"{base}/.hidden.txt"]
