"""Emotion to prosody: how each of Ava's twenty emotions sounds (docs/agents.md#emotion-tags).

The voice agent strips the `#emotion#` tags from the reply and carries each sentence's
emotion beside its text, in the Pipecat `text_type` of the frame (`"emotion:relieved"`).
Here, at the last moment before synthesis, a TTS text transform turns that pair into one
SSML document: `<prosody>` with the emotion's rate, pitch and volume, then a 200 ms
`<break/>` as long as the emotion's pause. The same SSML drives espeak-ng offline and
Google's HTTP TTS in production, so the table uses only values both honour: percentages
for rate and pitch, the W3C keywords for volume (espeak-ng barely reacts to `dB`; both
react to `soft`/`loud`). An engine that takes no SSML (the neural offline voice) reads the
same document back as numbers with `read_segment` and applies them itself.

Guarantees: the output is well-formed XML whatever the text (escaped, so a reply can never
open markup; characters XML cannot carry become spaces); no `#` ever
reaches a speech engine (tags are removed whole, stray `#` characters after them); an
unknown or missing emotion sounds neutral rather than failing the sentence.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from xml.sax.saxutils import escape

from agents import EMOTIONS

EMOTION_TEXT_TYPE_PREFIX = "emotion:"
# The text_type of a sentence that carried no tag; Pipecat's own name for a sentence.
PLAIN_TEXT_TYPE = "sentence"
BREAK_MS = 200  # the pause after a neutral sentence
BREAK_MS_MAX = 2_000  # a pause read back from SSML is clamped here


@dataclass(frozen=True, slots=True)
class Prosody:
    """SSML `<prosody>` attribute values, as the engines read them, and the pause after."""

    rate: str  # percent of the voice's normal speed
    pitch: str  # relative change of the voice's baseline pitch
    volume: str  # W3C keyword: x-soft, soft, medium, loud, x-loud
    pause_ms: int = BREAK_MS  # silence after the sentence (`<break time>`)


NEUTRAL = Prosody(rate="100%", pitch="+0%", volume="medium")

# Grouped by feeling so neighbours can be compared: anger is fast, high, loud and barely
# pauses; joy fast and high; sorrow slow, low, soft and trails off; unease quick and a
# little high; the reflective ones slow, level and pause longest. Every row differs from
# every other (a test keeps it so).
PROSODY: dict[str, Prosody] = {
    "furious": Prosody(rate="125%", pitch="+20%", volume="x-loud", pause_ms=120),
    "annoyed": Prosody(rate="110%", pitch="+8%", volume="loud", pause_ms=150),
    "bitter": Prosody(rate="92%", pitch="-12%", volume="medium", pause_ms=250),
    "smug_angry": Prosody(rate="96%", pitch="-6%", volume="loud", pause_ms=200),
    "pouting": Prosody(rate="90%", pitch="+12%", volume="soft", pause_ms=300),
    "ecstatic": Prosody(rate="122%", pitch="+30%", volume="loud", pause_ms=150),
    "affectionate": Prosody(rate="92%", pitch="+6%", volume="soft", pause_ms=250),
    "smug": Prosody(rate="94%", pitch="-4%", volume="medium", pause_ms=250),
    "relieved": Prosody(rate="90%", pitch="-5%", volume="medium", pause_ms=300),
    "devastated": Prosody(rate="75%", pitch="-20%", volume="x-soft", pause_ms=450),
    "melancholy": Prosody(rate="82%", pitch="-15%", volume="soft", pause_ms=400),
    "guilty": Prosody(rate="86%", pitch="-10%", volume="soft", pause_ms=350),
    "anxious": Prosody(rate="118%", pitch="+15%", volume="medium", pause_ms=100),
    "shy": Prosody(rate="94%", pitch="+8%", volume="x-soft", pause_ms=300),
    "neutral": NEUTRAL,
    "thinking": Prosody(rate="85%", pitch="+0%", volume="medium", pause_ms=500),
    "confused": Prosody(rate="95%", pitch="+14%", volume="medium", pause_ms=300),
    "skeptical": Prosody(rate="97%", pitch="+4%", volume="medium", pause_ms=250),
    "bored": Prosody(rate="84%", pitch="-8%", volume="x-soft", pause_ms=350),
    "shocked": Prosody(rate="120%", pitch="+25%", volume="x-loud", pause_ms=150),
}

# The W3C volume keywords as linear gains, for an engine that applies volume itself
# (about -9, -4.5, 0, +3, +5 dB: soft must be clearly softer, loud must not clip).
VOLUME_GAIN: dict[str, float] = {"x-soft": 0.35, "soft": 0.6, "medium": 1.0, "loud": 1.4, "x-loud": 1.8}
assert set(PROSODY) == set(EMOTIONS), "every emotion needs exactly one prosody row"

# A tag as Ava writes it, spaces tolerated (`# relieved #`), as agents.emotions parses it.
_TAG = re.compile(r"#\s*[A-Za-z_]+\s*#")
# Characters XML 1.0 cannot carry at all (most controls, surrogates): an engine would reject
# the whole sentence, so they become spaces.
_MARKUP = re.compile(r"<[^>]*>")
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
        f'<break time="{p.pause_ms}ms"/></speak>'
    )


@dataclass(frozen=True, slots=True)
class SpokenSegment:
    """One sentence as numbers, for an engine that takes no SSML: what to say and how."""

    text: str
    rate: float = 1.0  # speed factor (1.25: a quarter faster)
    pitch: float = 1.0  # factor on the voice's fundamental frequency
    gain: float = 1.0  # linear amplitude factor
    pause_ms: int = BREAK_MS


def _percent(value: str | None, *, relative: bool) -> float:
    """`"125%"` -> 1.25; with relative, `"+20%"` -> 1.2. Anything unreadable is 1.0."""
    try:
        number = float((value or "").strip().rstrip("%"))
    except ValueError:
        return 1.0
    factor = 1.0 + number / 100 if relative else number / 100
    return min(max(factor, 0.5), 2.0)  # what any voice can still say intelligibly


def _pause_ms(value: str | None) -> int:
    text = (value or "").strip()
    try:
        ms = float(text.removesuffix("ms")) if text.endswith("ms") else float(text.removesuffix("s")) * 1000
    except ValueError:
        return BREAK_MS
    return int(min(max(ms, 0), BREAK_MS_MAX))


def read_segment(text: str) -> SpokenSegment:
    """The words and numbers of one `segment_ssml` document; plain text reads as neutral.

    Only the shape `segment_ssml` writes is understood (one `<prosody>`, one `<break>`);
    any other markup is read for its words alone, never obeyed further.
    """
    if not text.lstrip().startswith("<speak"):
        return SpokenSegment(text=" ".join(_MARKUP.sub(" ", without_tags(text)).split()))
    try:
        # Our own escaped document; one carrying a DTD (the only way to entity bombs) is refused.
        if "<!" in text:
            raise ET.ParseError("no DTDs")
        root = ET.fromstring(text)  # noqa: S314
    except ET.ParseError:
        return SpokenSegment(text=" ".join(_MARKUP.sub(" ", without_tags(text)).split()))
    prosody = root.find("prosody")
    pause = root.find("break")
    attrs = prosody.attrib if prosody is not None else {}
    return SpokenSegment(
        text=" ".join("".join(root.itertext()).split()),
        rate=_percent(attrs.get("rate"), relative=False),
        pitch=_percent(attrs.get("pitch"), relative=True),
        gain=VOLUME_GAIN.get(attrs.get("volume", "medium"), 1.0),
        pause_ms=_pause_ms(pause.get("time")) if pause is not None else 0,
    )


async def emotion_to_ssml(text: str, text_type: str) -> str:
    """Pipecat text transform: `("*", emotion_to_ssml)` in a TTS's `text_transforms`."""
    return segment_ssml(text, emotion_of(str(text_type)))


async def strip_stray_tags(text: str, text_type: str) -> str:
    """Pipecat text transform, registered last: whatever came before, no tag is spoken."""
    del text_type  # the transform signature requires it; every kind of text is cleaned
    return without_tags(text)
