"""The agents: who is in the room, the model port and its adapters, the instruction
layers, the tool loop, and each agent's tools and integrations.

Other domains import only what is listed here. The Gemini adapter is imported by the
composition root alone (`agents.gemini`), so the SDK loads only when a key is set.
"""

from agents.emotions import EMOTIONS, Segment, SpokenReply, parse_spoken
from agents.errors import AgentError, RunLimitExceeded, ToolError
from agents.handoff import Delegate, handoff_tools
from agents.history import ThreadMessage, to_contents, window
from agents.instructions import Channel, Session, Trigger, compose
from agents.knowledge import (
    RECALL,
    Fact,
    Forgotten,
    Graph,
    Knowledge,
    KnowledgeError,
    KnowledgeMessage,
    LocalKnowledge,
    RuleExtractor,
    recall_tools,
    session_facts,
)
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
    "DESCRIBING",
    "EMOTIONS",
    "HUMAN",
    "POSTERA",
    "RECALL",
    "SPECIALISTS",
    "AgentError",
    "AgentSpec",
    "Channel",
    "Command",
    "Content",
    "Delegate",
    "Device",
    "Fact",
    "Forgotten",
    "FunctionCall",
    "FunctionResult",
    "Graph",
    "Knowledge",
    "KnowledgeError",
    "KnowledgeMessage",
    "LocalKnowledge",
    "Model",
    "ModelError",
    "ModelRejected",
    "ModelRequest",
    "ModelResponse",
    "ModelUnavailable",
    "OfflineModel",
    "RuleExtractor",
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
    "parse_spoken",
    "recall_tools",
    "run_agent",
    "session_facts",
    "to_contents",
    "window",
    "zee_tools",
]
