"""Ava's captions arrive with the audio of their sentence, not after the whole reply.

Ava's processor, the neural TTS and the captions processor run as in a call: a
three-sentence reply goes in as a finished user turn, and the order of what comes out is
checked. The TTS marks the end of each sentence's audio with a `TTSTextFrame`, so a
caption in step sits after the previous sentence's audio and before its own ends.
"""

from __future__ import annotations

import pytest
from pipecat.frames.frames import (
    Frame,
    LLMContextFrame,
    OutputTransportMessageFrame,
    TTSAudioRawFrame,
    TTSTextFrame,
)
from pipecat.pipeline.pipeline import Pipeline
from pipecat.pipeline.worker import PipelineParams
from pipecat.processors.aggregators.llm_context import LLMContext
from pipecat.tests.utils import SleepFrame, run_test

from agents import Segment, SpokenReply
from voice.agent import AvaVoiceAgent
from voice.captions import AssistantCaptions
from voice.engines.hibari import HibariTTSService, preload_hibari
from voice.prosody import emotion_to_ssml, strip_stray_tags

REPLY = SpokenReply(
    segments=(
        Segment("Done, the bedroom light is on.", "relieved"),
        Segment("The kitchen light is on too.", None),
        Segment("Anything else?", "shy"),
    ),
    end_call=False,
)


async def _reply_frames() -> list[Frame]:
    async def turn(text: str) -> SpokenReply:
        return REPLY

    tts = HibariTTSService(text_transforms=[("*", emotion_to_ssml), ("*", strip_stray_tags)])
    down, _ = await run_test(
        Pipeline([AvaVoiceAgent(turn), tts, AssistantCaptions()]),
        frames_to_send=[
            LLMContextFrame(context=LLMContext([{"role": "user", "content": "lights please"}])),
            SleepFrame(sleep=3.0),
        ],
        pipeline_params=PipelineParams(audio_out_sample_rate=16_000),
    )
    return list(down)


def _captions(frames: list[Frame]) -> list[tuple[int, dict[str, str]]]:
    return [
        (i, f.message)
        for i, f in enumerate(frames)
        if isinstance(f, OutputTransportMessageFrame) and f.message.get("role") == "assistant"
    ]


async def test_each_caption_arrives_while_its_sentence_is_spoken() -> None:
    frames = await _reply_frames()
    captions = _captions(frames)
    ends = [i for i, f in enumerate(frames) if isinstance(f, TTSTextFrame)]  # end of each sentence's audio
    audio = [i for i, f in enumerate(frames) if isinstance(f, TTSAudioRawFrame)]

    assert [c["text"] for _, c in captions] == [s.text for s in REPLY.segments], "one caption per sentence"
    assert [c.get("emotion") for _, c in captions] == ["relieved", None, "shy"]
    assert len(ends) == len(REPLY.segments)
    for k, (at, _) in enumerate(captions):
        assert at < ends[k], f"caption {k} came after its sentence's audio ended"
        assert any(at < a < ends[k] for a in audio), f"caption {k} is followed by its own audio"
        if k:
            assert at > ends[k - 1], f"caption {k} came before the previous sentence was spoken"


@pytest.fixture(autouse=True, scope="module")
def _voice_loaded() -> None:
    """The neural voice loaded first, as a server does at startup (see the TTS contract suite)."""
    preload_hibari()
