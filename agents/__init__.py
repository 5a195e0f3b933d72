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
from agents.integrations.accounts import Account, Integration
from agents.integrations.confirmations import PendingActions, PersonSaid
from agents.integrations.connections import Connections, IntegrationState
from agents.integrations.linking import LinkError, Links, StateSigner, TokenCipher
from agents.integrations.oauth import GOOGLE, SPOTIFY, AccessTokens, OAuthClient
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
from agents.offline.words import detect_language
from agents.rafal.google import GoogleWorkspace
from agents.rafal.sandbox import SandboxWorkspace
from agents.rafal.tools import rafal_tools
from agents.rafal.workspace import Workspace
from agents.roster import AGENTS, AVA, HUMAN, POSTERA, SPECIALISTS, AgentSpec
from agents.runtime import RunLimits, RunObserver, RunOutcome, run_agent
from agents.scripted import ScriptedModel
from agents.specialists import Specialists, VendorCredentials, build_specialists
from agents.toolbox import DESCRIBING, RunContext, Toolbox, ToolFactory
from agents.tools import Tool
from agents.yori.music import MusicPlayer
from agents.yori.sandbox import SandboxMusic
from agents.yori.spotify import SpotifyMusic
from agents.yori.tools import yori_tools
from agents.zee.home import Command, Device, SmartHome
from agents.zee.sandbox import SandboxHome
from agents.zee.tools import zee_tools
from agents.zee.tuya import TuyaHome

__all__ = [
    "AGENTS",
    "AVA",
    "CAPABILITIES",
    "DESCRIBING",
    "EMOTIONS",
    "GOOGLE",
    "HUMAN",
    "POSTERA",
    "RECALL",
    "SPECIALISTS",
    "SPOTIFY",
    "AccessTokens",
    "Account",
    "AgentError",
    "AgentSpec",
    "Capability",
    "Channel",
    "Command",
    "Connections",
    "Content",
    "Delegate",
    "Device",
    "Fact",
    "Forgotten",
    "FunctionCall",
    "FunctionResult",
    "GoogleWorkspace",
    "Graph",
    "Integration",
    "IntegrationState",
    "Knowledge",
    "KnowledgeError",
    "KnowledgeMessage",
    "LinkError",
    "Links",
    "LocalKnowledge",
    "Model",
    "ModelError",
    "ModelRejected",
    "ModelRequest",
    "ModelResponse",
    "ModelUnavailable",
    "MusicPlayer",
    "OAuthClient",
    "OfflineModel",
    "PendingActions",
    "PersonSaid",
    "RuleExtractor",
    "RunContext",
    "RunLimitExceeded",
    "RunLimits",
    "RunObserver",
    "RunOutcome",
    "SandboxHome",
    "SandboxMusic",
    "SandboxWorkspace",
    "ScriptedModel",
    "Segment",
    "Session",
    "SmartHome",
    "Specialists",
    "SpokenReply",
    "SpotifyMusic",
    "StateSigner",
    "ThreadMessage",
    "TokenCipher",
    "Tool",
    "ToolError",
    "ToolFactory",
    "ToolSpec",
    "Toolbox",
    "Trigger",
    "TuyaHome",
    "Usage",
    "VendorCredentials",
    "Workspace",
    "build_specialists",
    "compose",
    "detect_language",
    "handoff_tools",
    "hollow",
    "parse_spoken",
    "promised",
    "provides",
    "rafal_tools",
    "recall_tools",
    "render_persona",
    "run_agent",
    "session_facts",
    "to_contents",
    "window",
    "yori_tools",
    "zee_tools",
]
