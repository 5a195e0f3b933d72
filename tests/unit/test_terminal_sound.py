"""`/call`'s sound ends (cli/sound.py): the sound card through ALSA's programs, here stand-in
`arecord` and `aplay` scripts on PATH that read and write files with the arguments the real
ones take, and the choice between the card, WAV files and one line of refusal."""

from __future__ import annotations

import os
import stat
import wave
from pathlib import Path

import pytest

from cli.sound import NO_MICROPHONE, DeviceSound, NoSound, WavSound, open_sound

FRAME_BYTES = 640  # 20 ms of 16 kHz PCM16


def _program(folder: Path, name: str, body: str) -> None:
    path = folder / name
    path.write_text(f'#!/bin/sh\necho "$@" > "{folder}/{name}.args"\n{body}\n')
    path.chmod(path.stat().st_mode | stat.S_IXUSR)


@pytest.fixture
def alsa(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A machine with one capture device and ALSA's two programs (stand-ins reading and
    writing files in `tmp_path`)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (tmp_path / "microphone.raw").write_bytes(bytes(range(256)) * 10)  # 2,560 bytes: 4 frames
    _program(bin_dir, "arecord", f'exec cat "{tmp_path}/microphone.raw"')
    _program(bin_dir, "aplay", f'exec cat >> "{tmp_path}/speaker.raw"')
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    (tmp_path / "snd").mkdir()
    (tmp_path / "snd" / "pcmC0D0c").touch()
    return tmp_path


async def test_the_sound_card_records_in_frames_and_plays_what_is_heard(alsa: Path) -> None:
    sound = open_sound({}, cards=alsa / "snd")
    assert isinstance(sound, DeviceSound)

    frames = [frame async for frame in sound.frames()]
    await sound.play(b"\x01\x02" * 320)
    await sound.clear()  # the person interrupted: the player is stopped, the next one starts anew
    await sound.play(b"\x03\x04" * 320)
    await sound.close()

    assert [len(f) for f in frames] == [FRAME_BYTES] * 4
    assert b"".join(frames) == (alsa / "microphone.raw").read_bytes()[: 4 * FRAME_BYTES]
    # What the first player held when it was stopped may be lost (that is what `clear` is for).
    assert (alsa / "speaker.raw").read_bytes().endswith(b"\x03\x04" * 320)
    for program in ("arecord", "aplay"):
        assert (alsa / "bin" / f"{program}.args").read_text().split() == [
            "-q", "-t", "raw", "-f", "S16_LE", "-c", "1", "-r", "16000"
        ]  # fmt: skip


def test_no_capture_device_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "pcmC0D0p").touch()  # a speaker alone is no microphone
    with pytest.raises(NoSound, match=f"^{NO_MICROPHONE}$"):
        open_sound({}, cards=tmp_path)


async def test_a_wav_file_is_said_in_frames_then_silence_and_the_reply_is_kept(tmp_path: Path) -> None:
    said, heard = tmp_path / "said.wav", tmp_path / "heard.wav"
    with wave.open(str(said), "wb") as wav:
        wav.setnchannels(1)
        wav.setsampwidth(2)
        wav.setframerate(8000)
        wav.writeframes(b"\x10\x00" * 800)  # 100 ms
    sound = open_sound({"AVAGENC_CALL_INPUT": str(said), "AVAGENC_CALL_OUTPUT": str(heard)}, cards=tmp_path)
    assert isinstance(sound, WavSound) and sound.rate == 8000

    frames = [frame async for frame in sound.frames()]
    await sound.play(b"\x20\x00" * 400)
    await sound.close()

    assert {len(f) for f in frames} == {320}  # 20 ms at 8 kHz
    assert b"".join(frames) == b"\x10\x00" * 800 + b"\x00\x00" * 8000  # then a second of silence
    with wave.open(str(heard), "rb") as wav:
        assert (wav.getnchannels(), wav.getsampwidth(), wav.getframerate()) == (1, 2, 8000)
        assert wav.readframes(wav.getnframes()) == b"\x20\x00" * 400
