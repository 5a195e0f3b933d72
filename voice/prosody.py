"""Emotion to prosody: how each of Ava's twenty emotions sounds (SPEC §9.3).

The voice agent strips the `#emotion#` tags from the reply and carries each sentence's
emotion beside its text, in the Pipecat `text_type` of the frame (`"emotion:relieved"`).
Here, at the last moment before synthesis, a TTS text transform turns that pair into one
SSML document: `<prosody>` with the emotion's rate, pitch and volume, then a 200 ms
`<break/>`. The same SSML drives espeak-ng offline and Google's HTTP TTS in production,
so the table uses only values both honour: percentages for rate and pitch, the W3C
keywords for volume (espeak-ng barely reacts to `dB`; both react to `soft`/`loud`).

Guarantees: the output is well-formed XML whatever the text (escaped, so a reply can never
open markup; characters XML cannot carry become spaces); no `#` ever
reaches a speech engine (tags are removed whole, stray `#` characters after them); an
unknown or missing emotion sounds neutral rather than failing the sentence.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from xml.sax.saxutils import escape

from agents import EMOTIONS

EMOTION_TEXT_TYPE_PREFIX = "emotion:"
# The text_type of a sentence that carried no tag; Pipecat's own name for a sentence.
PLAIN_TEXT_TYPE = "sentence"
BREAK_MS = 200


@dataclass(frozen=True, slots=True)
class Prosody:
    """SSML `<prosody>` attribute values, as the engines read them."""

    rate: str  # percent of the voice's normal speed
    pitch: str  # relative change of the voice's baseline pitch
    volume: str  # W3C keyword: x-soft, soft, medium, loud, x-loud


NEUTRAL = Prosody(rate="100%", pitch="+0%", volume="medium")

# Grouped by feeling so neighbours can be compared: anger is fast, high and loud; joy fast
# and high; sorrow slow, low and soft; unease quick and a little high; the reflective ones
# slow and level. Every row differs from every other (a test keeps it so).
PROSODY: dict[str, Prosody] = {
    "furious": Prosody(rate="125%", pitch="+20%", volume="x-loud"),
    "annoyed": Prosody(rate="110%", pitch="+8%", volume="loud"),
    "bitter": Prosody(rate="92%", pitch="-12%", volume="medium"),
    "smug_angry": Prosody(rate="96%", pitch="-6%", volume="loud"),
    "pouting": Prosody(rate="90%", pitch="+12%", volume="soft"),
    "ecstatic": Prosody(rate="122%", pitch="+30%", volume="loud"),
    "affectionate": Prosody(rate="92%", pitch="+6%", volume="soft"),
    "smug": Prosody(rate="94%", pitch="-4%", volume="medium"),
    "relieved": Prosody(rate="90%", pitch="-5%", volume="medium"),
    "devastated": Prosody(rate="75%", pitch="-20%", volume="x-soft"),
    "melancholy": Prosody(rate="82%", pitch="-15%", volume="soft"),
    "guilty": Prosody(rate="86%", pitch="-10%", volume="soft"),
    "anxious": Prosody(rate="118%", pitch="+15%", volume="medium"),
    "shy": Prosody(rate="94%", pitch="+8%", volume="x-soft"),
    "neutral": NEUTRAL,
    "thinking": Prosody(rate="85%", pitch="+0%", volume="medium"),
    "confused": Prosody(rate="95%", pitch="+14%", volume="medium"),
    "skeptical": Prosody(rate="97%", pitch="+4%", volume="medium"),
    "bored": Prosody(rate="84%", pitch="-8%", volume="x-soft"),
    "shocked": Prosody(rate="120%", pitch="+25%", volume="x-loud"),
}
assert set(PROSODY) == set(EMOTIONS), "every emotion needs exactly one prosody row"

# A tag as Ava writes it, spaces tolerated (`# relieved #`), as agents.emotions parses it.
_TAG = re.compile(r"#\s*[A-Za-z_]+\s*#")
# Characters XML 1.0 cannot carry at all (most controls, surrogates): an engine would reject
# the whole sentence, so they become spaces.
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def text_type_for(emotion: str | None) -> str:
    """The `AggregatedTextFrame.text_type` that carries a sentence's emotion to the TTS."""
    return f"{EMOTION_TEXT_TYPE_PREFIX}{emotion}" if emotion else PLAIN_TEXT_TYPE


def emotion_of(text_type: str) -> str | None:
    """The emotion a `text_type` names, or None when it names none we know."""
    if not text_type.startswith(EMOTION_TEXT_TYPE_PREFIX):
        return None
    name = text_type.removeprefix(EMOTION_TEXT_TYPE_PREFIX)
    return name if name in PROSODY else None


def prosody_for(emotion: str | None) -> Prosody:
    return PROSODY.get(emotion, NEUTRAL) if emotion else NEUTRAL


def without_tags(text: str) -> str:
    """The text with every `#word#` tag and any stray `#` removed."""
    return _TAG.sub(" ", text).replace("#", " ")


def segment_ssml(text: str, emotion: str | None) -> str:
    """One sentence as SSML in its emotion's prosody, followed by a short pause."""
    p = prosody_for(emotion)
    spoken = escape(" ".join(_NOT_XML.sub(" ", without_tags(text)).split()))
    return (
        f'<speak><prosody rate="{p.rate}" pitch="{p.pitch}" volume="{p.volume}">{spoken}</prosody>'
        f'<break time="{BREAK_MS}ms"/></speak>'
    )


async def emotion_to_ssml(text: str, text_type: str) -> str:
    """Pipecat text transform: `("*", emotion_to_ssml)` in a TTS's `text_transforms`."""
    return segment_ssml(text, emotion_of(str(text_type)))


async def strip_stray_tags(text: str, text_type: str) -> str:
    """Pipecat text transform, registered last: whatever came before, no tag is spoken."""
    del text_type  # the transform signature requires it; every kind of text is cleaned
    return without_tags(text)
