"""The agents: who is in the room, the model port and its adapters, the instruction
layers, the tool loop, and each agent's tools and integrations.

Other domains import only what is listed here. The Gemini adapter is imported by the
composition root alone (`agents.gemini`), so the SDK loads only when a key is set.
"""

from agents.capabilities import CAPABILITIES, Capability, hollow, promised, provides, render_persona
from agents.emotions import EMOTIONS, Segment, SpokenReply, parse_spoken
from agents.errors import AgentError, RunLimitExceeded, ToolError
from agents.handoff import Delegate, handoff_tools
from agents.history import ThreadMessage, to_contents, window
from agents.instructions import Channel, Session, Trigger, compose
from agents.model import (
    Content,
    FunctionCall,
    FunctionResult,
    Model,
    ModelError,
    ModelRejected,
    ModelRequest,
    ModelResponse,
    ModelUnavailable,
    ToolSpec,
    Usage,
)
from agents.offline import OfflineModel
from agents.roster import AGENTS, AVA, HUMAN, POSTERA, SPECIALISTS, AgentSpec
from agents.runtime import RunLimits, RunObserver, RunOutcome, run_agent
from agents.scripted import ScriptedModel
from agents.toolbox import DESCRIBING, RunContext, Toolbox, ToolFactory
from agents.tools import Tool
from agents.zee.home import Command, Device, SmartHome
from agents.zee.sandbox import SandboxHome
from agents.zee.tools import zee_tools

__all__ = [
    "AGENTS",
    "AVA",
    "CAPABILITIES",
    "DESCRIBING",
    "EMOTIONS",
    "HUMAN",
    "POSTERA",
    "SPECIALISTS",
    "AgentError",
    "AgentSpec",
    "Capability",
    "Channel",
    "Command",
    "Content",
    "Delegate",
    "Device",
    "FunctionCall",
    "FunctionResult",
    "Model",
    "ModelError",
    "ModelRejected",
    "ModelRequest",
    "ModelResponse",
    "ModelUnavailable",
    "OfflineModel",
    "RunContext",
    "RunLimitExceeded",
    "RunLimits",
    "RunObserver",
    "RunOutcome",
    "SandboxHome",
    "ScriptedModel",
    "Segment",
    "Session",
    "SmartHome",
    "SpokenReply",
    "ThreadMessage",
    "Tool",
    "ToolError",
    "ToolFactory",
    "ToolSpec",
    "Toolbox",
    "Trigger",
    "Usage",
    "compose",
    "handoff_tools",
    "hollow",
    "parse_spoken",
    "promised",
    "provides",
    "render_persona",
    "run_agent",
    "to_contents",
    "window",
    "zee_tools",
]
