"""Deep Agents' own conformance suite, `langchain_tests` `SandboxIntegrationTests`, unmodified:
subclassed here with its one fixture, the provider built exactly as an application builds it
(`AgenticosSandboxClient(url, token, agent_id=...)`, no option). Each class opens one run of the
agent for its tests and finishes it afterwards; the suite's sync tests go through `Console`, its
async ones through `AsyncConsole`.

The tests of langchain-tests 1.1.9 that still state the protocol deepagents 0.7 replaced are
expected to fail (strict: one that passes fails the run), each named with the change in
`SUPERSEDED` and applied in conftest.py; `test_deepagents_protocol.py` asserts what deepagents
0.7.32 states instead. See docs/agents.md, "The conformance suite"."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from langchain_tests.integration_tests import SandboxIntegrationTests

from agenticos_sandbox.deepagents import AgenticosSandbox, AgenticosSandboxClient

_WRITE = (
    "deepagents 0.7 made write() create or overwrite (langchain-ai/deepagents#4109, 'allow "
    "write_file to overwrite existing files'); the suite still expects 'already exists' "
    "(langchain-ai/langchain#40283, open, updates it)"
)
_GLOB = (
    "deepagents 0.7.32's glob() answers regular files only, as absolute paths "
    "(langchain-ai/deepagents#5026: relative paths bypassed FilesystemMiddleware's deny rules); "
    "the suite still expects folders and paths relative to the searched folder "
    "(langchain-ai/langchain#39948, open; #40283 updates it)"
)
SUPERSEDED = {
    "test_write_existing_file_fails": _WRITE,
    "test_glob": _GLOB,
    "test_glob_basic_pattern": _GLOB,
    "test_glob_with_directories": _GLOB,
    "test_glob_hidden_files_explicitly": _GLOB,
    "test_glob_with_character_class": _GLOB,
    "test_glob_with_question_mark": _GLOB,
}
"""The suite's tests that assert the protocol as it was before deepagents 0.7, and why."""


class TestAgenticosSandboxStandard(SandboxIntegrationTests):
    @pytest.fixture(scope="class")
    def sandbox(self, setup) -> Iterator[AgenticosSandbox]:
        client = AgenticosSandboxClient(setup.url, setup.token, agent_id=setup.agent_id)
        backend = client.create()
        # The suite's paths are fixed (under `sandbox_root_dir`): what an earlier run left there
        # would make its "new file" writes meet existing files.
        backend.execute(f"rm -rf {self.sandbox_root_dir}")
        try:
            yield backend
        finally:
            backend.execute(f"rm -rf {self.sandbox_root_dir}")
            client.delete(backend.id)
            client.close()
