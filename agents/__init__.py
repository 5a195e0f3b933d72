"""The agents: who is in the room, the model port and its adapters, the instruction
layers, the tool loop, and each specialist (one package each, listed by the roster).

Other domains import only what is listed here, and only what they use; the composition
roots may reach further. The Gemini adapter is imported by the composition root alone
(`agents.gemini`), so the SDK loads only when a key is set.
"""

from agents.capabilities import capabilities as capability_vocabulary
from agents.capabilities import hollow
from agents.emotions import EMOTIONS, Segment, SpokenReply, parse_spoken
from agents.errors import RunLimitExceeded, ToolError
from agents.handoff import handoff_tools
from agents.history import ThreadMessage, to_contents, window
from agents.instructions import Channel, Session, Trigger, compose
from agents.integrations.connections import Connections
from agents.integrations.linking import LinkError, TokenCipher
from agents.knowledge import (
    ExtractionFailed,
    Knowledge,
    KnowledgeError,
    KnowledgeMessage,
    LocalKnowledge,
    ModelSpend,
    RuleExtractor,
    recall_tools,
    session_facts,
)
from agents.model import (
    FunctionCall,
    Model,
    ModelError,
    ModelRequest,
    ModelResponse,
    ModelUnavailable,
    StopSignal,
    ToolSpec,
    Usage,
    generate_streaming,
)
from agents.offline import OfflineModel
from agents.offline.words import detect_language
from agents.roster import AGENTS, AVA, HUMAN, POSTERA, SPECIALISTS, AgentSpec, current_roster
from agents.roster import installed as installed_roster
from agents.runtime import RunLimits, run_agent
from agents.scripted import ScriptedModel
from agents.specialist import VendorSettings, declared
from agents.specialists import Specialists, build_specialists
from agents.toolbox import RunContext, Toolbox
from agents.tools import Tool
from agents.zee.home import Command, SmartHome
from agents.zee.sandbox import DEVICE_NAMES as SANDBOX_DEVICE_NAMES
from agents.zee.sandbox import SandboxHome


def specialist_packages() -> tuple[str, ...]:
    """The packages of the specialists in the room (for their migrations)."""
    return current_roster().packages


def team_names() -> tuple[str, ...]:
    """Every member of the room by the name people say (Ava first, then the current roster's
    specialists in order, so an installed specialist is included)."""
    return tuple(spec.display_name for spec in AGENTS.values())


def specialist_settings_models() -> dict[str, type[VendorSettings]]:
    """Each specialist's own settings class, by handle (the composition root reads them)."""
    return {name: declared(entry).port.settings for name, entry in current_roster().by_name.items()}


__all__ = [
    "AGENTS",
    "AVA",
    "EMOTIONS",
    "HUMAN",
    "POSTERA",
    "SANDBOX_DEVICE_NAMES",
    "SPECIALISTS",
    "AgentSpec",
    "Channel",
    "Command",
    "Connections",
    "ExtractionFailed",
    "FunctionCall",
    "Knowledge",
    "KnowledgeError",
    "KnowledgeMessage",
    "LinkError",
    "LocalKnowledge",
    "Model",
    "ModelError",
    "ModelRequest",
    "ModelResponse",
    "ModelSpend",
    "ModelUnavailable",
    "OfflineModel",
    "RuleExtractor",
    "RunContext",
    "RunLimitExceeded",
    "RunLimits",
    "SandboxHome",
    "ScriptedModel",
    "Segment",
    "Session",
    "SmartHome",
    "Specialists",
    "SpokenReply",
    "StopSignal",
    "ThreadMessage",
    "TokenCipher",
    "Tool",
    "ToolError",
    "ToolSpec",
    "Toolbox",
    "Trigger",
    "Usage",
    "VendorSettings",
    "build_specialists",
    "capability_vocabulary",
    "compose",
    "current_roster",
    "detect_language",
    "generate_streaming",
    "handoff_tools",
    "hollow",
    "installed_roster",
    "parse_spoken",
    "recall_tools",
    "run_agent",
    "session_facts",
    "specialist_packages",
    "specialist_settings_models",
    "team_names",
    "to_contents",
    "window",
]
