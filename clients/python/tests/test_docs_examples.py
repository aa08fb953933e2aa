"""docs/agents.md's examples, run as written against the console. Each example uses `MODEL`
for the language model it leaves to the reader; here that is a scripted model (no network)."""

from __future__ import annotations

import re
from pathlib import Path

from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart, ToolReturnPart, UserPromptPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from .test_openai_agents import ScriptedModel, shell
from .test_pydantic_ai import tool

DOC = Path(__file__).resolve().parents[3] / "docs" / "agents.md"


def examples() -> dict[str, str]:
    text = DOC.read_text()
    out = {}
    for heading in ("LangChain Deep Agents", "Pydantic AI", "OpenAI Agents SDK"):
        section = text.split(f"\n## {heading}\n", 1)[1].split("\n## ", 1)[0]
        out[heading] = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    return out


def run(code: str, capsys, **names) -> str:
    exec(compile(code, str(DOC), "exec"), {"__name__": "docs_example", **names})
    return capsys.readouterr().out


def test_the_examples_are_about_fifteen_lines():
    assert all(len(code.strip().splitlines()) <= 20 for code in examples().values())


def test_the_deep_agents_example_runs(setup, capsys):
    assert "hello from the console" in run(examples()["LangChain Deep Agents"], capsys)


def test_the_pydantic_ai_example_runs(setup, capsys):
    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        prompt = [p.content for m in messages if isinstance(m, ModelRequest) for p in m.parts if isinstance(p, UserPromptPart)][-1]
        calls = sum(1 for m in messages[-1:] for p in getattr(m, "parts", []) if isinstance(p, ToolReturnPart))
        if "Write" in prompt and not calls:
            return ModelResponse(parts=[tool("write_file", path="hello.txt", content="hi there\n")])
        if "Read" in prompt and not calls:
            return ModelResponse(parts=[tool("read_file", path="hello.txt")])
        returned = [str(p.content) for p in messages[-1].parts if isinstance(p, ToolReturnPart)]
        return ModelResponse(parts=[TextPart("\n".join(returned))])

    assert "hi there" in run(examples()["Pydantic AI"], capsys, MODEL=FunctionModel(model))


def test_the_openai_agents_example_runs(setup, capsys):
    model = ScriptedModel([shell("c1", "wc -l task.md")])
    assert "1 task.md" in run(examples()["OpenAI Agents SDK"], capsys, MODEL=model)
