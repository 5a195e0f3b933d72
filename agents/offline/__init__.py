"""The offline model: a deterministic, rule-based stand-in for Gemini (SPEC §6.3)."""

from agents.offline.model import MODEL_NAME, OfflineModel

__all__ = ["MODEL_NAME", "OfflineModel"]
