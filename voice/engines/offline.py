"""The offline speech engines, chosen and wired in one place for the composition root.

Recognition: Whisper tiny.en for English-speaking people, prompted with the room's names
(`voice.vocabulary`), the multilingual Whisper base forced to Indonesian for
Indonesian-speaking ones (the person's language decides, per call; not prompted: an
English list was never measured on Indonesian speech). Speech: the neural voice
(hibari-tts, English; Indonesian sentences go to espeak-ng's Indonesian voice) or, by
setting, espeak-ng for everything.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

from pipecat.services.tts_service import TTSService
from pipecat.transcriptions.language import Language
from pipecat.utils.text.transforms.text_transform import TextTransform

from voice.pipeline import Engines

OfflineVoice = Literal["neural", "espeak"]


def preload_offline(tts: OfflineVoice) -> None:
    """Blocking: load Silero's VAD, Whisper tiny.en (and the neural voice when chosen). Run
    in a thread."""
    from voice.engines.whisper import preload_whisper
    from voice.pipeline import preload_vad

    preload_vad()  # every call's VAD shares it (with Google hearing, the first call loads it)
    preload_whisper()
    if tts == "neural":
        from voice.engines.hibari import preload_hibari

        preload_hibari()


def offline_engines(
    *,
    tts: OfflineVoice,
    transforms: Sequence[tuple[str, TextTransform]],
    models_dir: Path | None = None,
    stt_workers: int = 1,
    window_min_s: int | None = None,
) -> tuple[Engines, str]:
    """The offline engines and a line describing them for the startup log."""
    from voice.engines.espeak import EspeakTTSService
    from voice.engines.whisper import (
        BASE_ID,
        WIDEBAND_WINDOW_MIN_S,
        WhisperSTTService,
        preload_whisper,
        set_models_dir,
        set_workers,
    )
    from voice.vocabulary import room_prompt, room_words

    if models_dir is not None:
        set_models_dir(models_dir)
    set_workers(stt_workers)
    chain = list(transforms)
    if tts == "neural":
        from voice.engines.hibari import HibariTTSService

        def speak() -> TTSService:
            return HibariTTSService(text_transforms=chain)

        speak_indonesian = speak  # it hands Indonesian sentences to espeak-ng itself
        voice = "hibari-tts (espeak-ng for Indonesian)"
    else:

        def speak() -> TTSService:
            return EspeakTTSService(text_transforms=chain)

        def speak_indonesian() -> TTSService:
            return EspeakTTSService(language=Language.ID, text_transforms=chain)

        voice = "espeak-ng"

    def hear_indonesian() -> WhisperSTTService:
        # The base model is joined and loaded (~3 s the first time) while the person speaks.
        threading.Thread(target=preload_whisper, args=(BASE_ID,), name="whisper-base-load", daemon=True).start()
        return WhisperSTTService(recogniser=BASE_ID)

    def hear_english() -> WhisperSTTService:
        # The room as it is when the call starts: a specialist installed since is named too.
        # Full-band English through the shorter window (a phone line keeps 15 s: `hear_narrowband`).
        window = WIDEBAND_WINDOW_MIN_S if window_min_s is None else window_min_s
        return WhisperSTTService(prompt=room_prompt(), expected=room_words(), window_min_s=window)

    engines = Engines(
        stt=hear_english,
        tts=speak,
        stt_by_language={"id": hear_indonesian},
        tts_by_language={"id": speak_indonesian},
    )
    return engines, f"Whisper tiny.en (base for Indonesian) + {voice}"
