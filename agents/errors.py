"""The agents domain's errors. Each has a stable `type` (the same vocabulary as chat's,
ledger's, reminders' and voice's errors); the HTTP edge's one table turns a type into a
problem status. Nothing here knows about HTTP."""

from __future__ import annotations

from typing import ClassVar


class AgentError(Exception):
    """Base of every error the agents domain raises on purpose."""

    type: ClassVar[str] = "agent_error"


class RunLimitExceeded(AgentError):
    """A run broke one of its limits (model calls, tool calls, handoffs)."""

    type = "run_limit_exceeded"


class ToolError(AgentError):
    """A tool could not do what was asked; the model is told and may try something else."""

    type = "tool_error"
