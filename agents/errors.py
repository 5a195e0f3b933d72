"""The agents domain's errors. The HTTP edge maps them to problem types; nothing here
knows about HTTP."""

from __future__ import annotations


class AgentError(Exception):
    """Base of every error the agents domain raises on purpose."""

    code = "agent_error"


class RunLimitExceeded(AgentError):
    """A run broke one of its limits (model calls, tool calls, handoffs)."""

    code = "run_limit_exceeded"


class ToolError(AgentError):
    """A tool could not do what was asked; the model is told and may try something else."""

    code = "tool_error"
