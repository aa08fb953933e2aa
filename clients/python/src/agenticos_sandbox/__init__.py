"""Sandbox providers backed by the agenticos console: a typed REST client (`Console`,
`AsyncConsole`) and, with their extras, providers for LangChain Deep Agents
(`agenticos_sandbox.deepagents`), Pydantic AI (`agenticos_sandbox.pydantic_ai`) and the OpenAI
Agents SDK (`agenticos_sandbox.openai_agents`). See docs/agents.md."""

from .client import AsyncConsole, Console, Entry, ExecResult, Token
from .errors import ApiError, ConsoleError

__all__ = ["ApiError", "AsyncConsole", "Console", "ConsoleError", "Entry", "ExecResult", "Token"]
__version__ = "0.1.0"
