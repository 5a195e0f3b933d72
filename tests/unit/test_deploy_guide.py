"""Every setting is in the README's table and in the deployment guide's, and neither table
names a setting the product does not read (docs/deploy.md#every-setting)."""

from __future__ import annotations

import re
from pathlib import Path

from agents import specialist_settings_models
from settings import Settings

ROOT = Path(__file__).resolve().parents[2]


def _table_names(path: Path, heading: str) -> set[str]:
    """The setting names in the first column of the table under `heading`."""
    text = path.read_text()
    section = text[text.index(heading) :]
    names: set[str] = set()
    started = False
    for line in section.splitlines()[1:]:
        if line.startswith("|"):
            started = True
            names |= set(re.findall(r"`([A-Z][A-Z0-9_]+)`", line.split("|")[1]))
        elif started:
            break
    return names


README = _table_names(ROOT / "README.md", "## Configuration")
GUIDE = _table_names(ROOT / "docs" / "deploy.md", "## Every setting")


def _specialists_settings() -> set[str]:
    """The settings each specialist package declares (its vendor's credentials)."""
    return {field.upper() for model in specialist_settings_models().values() for field in model.model_fields}


def test_every_setting_is_in_the_readme() -> None:
    # SPECIALIST_SETTINGS is the tests' way in, not an operator's: each package's own names are.
    read = {name.upper() for name in Settings.model_fields} - {"SPECIALIST_SETTINGS"}
    assert not read - README, read - README


def test_the_readme_names_only_settings_the_product_reads() -> None:
    read = {name.upper() for name in Settings.model_fields} | _specialists_settings()
    assert not README - read, README - read


def test_the_deploy_guide_has_every_readme_setting_and_no_other() -> None:
    assert not README - GUIDE, "missing from docs/deploy.md"
    assert not GUIDE - README, "in docs/deploy.md but not the README"
