"""Deep Agents' own conformance suite, `langchain_tests` `SandboxIntegrationTests`, unmodified:
subclassed here with its one fixture. Each class opens one run of the agent for its tests and
finishes it afterwards; the suite's sync tests go through `Console`, its async ones through
`AsyncConsole`."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from langchain_tests.integration_tests import SandboxIntegrationTests

from agenticos_sandbox.deepagents import AgenticosSandbox, AgenticosSandboxClient


class TestAgenticosSandboxStandard(SandboxIntegrationTests):
    @pytest.fixture(scope="class")
    def sandbox(self, setup) -> Iterator[AgenticosSandbox]:
        # The protocol as this suite (langchain-tests 1.1.9) states it: see `suite_contract`.
        client = AgenticosSandboxClient(setup.url, setup.token, agent_id=setup.agent_id, suite_contract=True)
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
