"""The offline model: a deterministic, rule-based stand-in for Gemini (docs/agents.md#the-offline-model)."""

from agents.offline.model import MODEL_NAME, OfflineModel

__all__ = ["MODEL_NAME", "OfflineModel"]
