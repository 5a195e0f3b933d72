"""Where each word starts in espeak-ng's speech, from the synthesiser itself.

`bench.turn_end` puts a pause between two words of a request spoken once, and needs to know
where the second word begins. The espeak-ng command line says nothing of its timing, but the
library it is built on (`libespeak-ng.so.1`, installed with it) reports a word event at the
sample each word starts on, beside the audio it makes: that is the synthesiser's own
boundary, not an estimate. The library is driven through ctypes, synchronously, one text at
a time (it keeps global state); its audio is the command line's without the silence the
command line pads the end with.
"""

from __future__ import annotations

import ctypes
import threading

_LIBRARY = "libespeak-ng.so.1"
_OUTPUT_SYNCHRONOUS = 2  # espeak_AUDIO_OUTPUT: synthesise within espeak_Synth, audio to the callback
_POS_CHARACTER = 1
_CHARS_UTF8 = 1
_EVENT_END = 0  # espeakEVENT_LIST_TERMINATED
_EVENT_WORD = 1  # espeakEVENT_WORD
_lock = threading.Lock()


class _Event(ctypes.Structure):
    """espeak_EVENT (speak_lib.h)."""

    _fields_ = [  # ctypes reads the class attribute
        ("type", ctypes.c_int),
        ("unique_identifier", ctypes.c_uint),
        ("text_position", ctypes.c_int),  # 1-based, in characters
        ("length", ctypes.c_int),
        ("audio_position", ctypes.c_int),  # ms
        ("sample", ctypes.c_int),
        ("user_data", ctypes.c_void_p),
        ("id", ctypes.c_char * 8),
    ]


_Callback = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ctypes.c_short), ctypes.c_int, ctypes.POINTER(_Event))
_library: ctypes.CDLL | None = None
_rate = 0


def spoken_words(text: str, voice: str) -> tuple[bytes, int, dict[int, float]]:
    """Blocking: `text` spoken by espeak-ng's `voice` as PCM16 mono, its rate, and the second
    each word starts at by the word's 0-based character offset in `text` (words espeak-ng
    speaks as one, "on the", have one entry)."""
    global _library, _rate
    with _lock:
        if _library is None:
            _library = ctypes.CDLL(_LIBRARY)
            _rate = _library.espeak_Initialize(_OUTPUT_SYNCHRONOUS, 0, None, 0)
            if _rate <= 0:
                raise RuntimeError(f"{_LIBRARY} did not start")
        audio: list[bytes] = []
        starts: dict[int, float] = {}

        def heard(wav: ctypes._Pointer[ctypes.c_short], samples: int, events: ctypes._Pointer[_Event]) -> int:
            if samples:
                audio.append(ctypes.string_at(wav, samples * 2))
            i = 0
            while events[i].type != _EVENT_END:
                if events[i].type == _EVENT_WORD:
                    starts[events[i].text_position - 1] = events[i].audio_position / 1000
                i += 1
            return 0

        callback = _Callback(heard)  # kept alive until the synthesis is over
        _library.espeak_SetSynthCallback(callback)
        if _library.espeak_SetVoiceByName(voice.encode()) != 0:
            raise RuntimeError(f"espeak-ng has no voice {voice!r}")
        data = text.encode()
        _library.espeak_Synth(data, len(data) + 1, 0, _POS_CHARACTER, 0, _CHARS_UTF8, None, None)
        _library.espeak_Synchronize()
        return b"".join(audio), _rate, starts
