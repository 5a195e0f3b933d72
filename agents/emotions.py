"""Emotion tags in Ava's spoken replies (docs/agents.md#emotion-tags), parsed into clean sentences.

On a call Ava ends sentences with one of exactly twenty `#emotion#` tags, and may end
the reply with the control token `#end#`. A tag is never spoken and never stored: it
colours the sentence just before it. This module turns a raw reply into `(sentence,
emotion)` segments plus an end-of-call flag. Unknown tags are dropped silently, and a
final pass removes any `#` left, so no tag can reach speech, captions or the thread.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

EMOTIONS: tuple[str, ...] = (
    "furious",
    "annoyed",
    "bitter",
    "smug_angry",
    "pouting",
    "ecstatic",
    "affectionate",
    "smug",
    "relieved",
    "devastated",
    "melancholy",
    "guilty",
    "anxious",
    "shy",
    "neutral",
    "thinking",
    "confused",
    "skeptical",
    "bored",
    "shocked",
)
END = "end"

_TAG = re.compile(r"#\s*([A-Za-z_]+)\s*#")
# A sentence ends at ., !, ? or an ellipsis followed by space (or the end of the chunk).
_SENTENCE_END = re.compile(r"(?<=[.!?…])\s+")
# Characters a speech engine reads aloud badly or that could open markup (docs/agents.md#emotion-tags).
_UNSPEAKABLE = re.compile(r"[#()\[\]\\*_`<>{}|~]")


@dataclass(frozen=True, slots=True)
class Segment:
    text: str
    emotion: str | None  # one of EMOTIONS, or None when the sentence carried no tag


@dataclass(frozen=True, slots=True)
class SpokenReply:
    segments: tuple[Segment, ...]
    end_call: bool

    @property
    def text(self) -> str:
        """The clean text, as stored in the thread and shown as captions."""
        return " ".join(s.text for s in self.segments)

    @property
    def emotions(self) -> tuple[str, ...]:
        """The distinct emotions that coloured the reply, in order of first use."""
        return tuple(dict.fromkeys(s.emotion for s in self.segments if s.emotion))


def _clean(text: str) -> str:
    return " ".join(_UNSPEAKABLE.sub(" ", text).split())


def _sentences(chunk: str) -> list[str]:
    return [s for s in (_clean(part) for part in _SENTENCE_END.split(chunk)) if s]


def parse_spoken(reply: str) -> SpokenReply:
    """Split a raw reply into segments; the tag after a sentence is that sentence's emotion."""
    segments: list[Segment] = []
    end_call = False
    position = 0
    for match in _TAG.finditer(reply):
        name = match.group(1).lower()
        sentences = _sentences(reply[position : match.start()])
        position = match.end()
        emotion = name if name in EMOTIONS else None
        if name == END:
            end_call = True
            emotion = None
        segments.extend(Segment(s, None) for s in sentences[:-1])
        if sentences:
            segments.append(Segment(sentences[-1], emotion))
    segments.extend(Segment(s, None) for s in _sentences(reply[position:]))
    return SpokenReply(tuple(segments), end_call)
