"""Semantic memory (docs/agents.md#memory): the `Knowledge` port, its local graph and Zep adapters,
the extractors that read facts out of the thread, and how agents use what was learned.

The Zep and Gemini adapters (`agents.knowledge.zep`, `agents.knowledge.gemini`) are
imported by the composition root alone, so their SDKs load only when configured.
"""

from agents.knowledge.extraction import SELF, Claim, Extraction, ExtractionFailed, Extractor, Mention
from agents.knowledge.local import LocalKnowledge
from agents.knowledge.port import (
    ENTITY_TYPES,
    Entity,
    EntityType,
    Fact,
    Forgotten,
    Graph,
    Knowledge,
    KnowledgeError,
    KnowledgeMessage,
    ModelSpend,
)
from agents.knowledge.recall import RECALL, recall_tools, session_facts
from agents.knowledge.rules import RuleExtractor, read_claims

__all__ = [
    "ENTITY_TYPES",
    "RECALL",
    "SELF",
    "Claim",
    "Entity",
    "EntityType",
    "Extraction",
    "ExtractionFailed",
    "Extractor",
    "Fact",
    "Forgotten",
    "Graph",
    "Knowledge",
    "KnowledgeError",
    "KnowledgeMessage",
    "LocalKnowledge",
    "Mention",
    "ModelSpend",
    "RuleExtractor",
    "read_claims",
    "recall_tools",
    "session_facts",
]
