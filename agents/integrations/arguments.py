"""Reading a model's tool arguments: the right type, within bounds, or an `InputInvalid`
hint that says exactly what to send instead (never an exception that fails the run)."""

from __future__ import annotations

from typing import Any

from agents.integrations.hints import InputInvalid


def text(args: dict[str, Any], name: str, *, required: bool = True, chars_max: int = 500) -> str | None:
    value = args.get(name)
    if value is None or (isinstance(value, str) and not value.strip()):
        if required:
            raise InputInvalid(f"{name} is required.")
        return None
    if not isinstance(value, str):
        raise InputInvalid(f"{name} must be a string.")
    if len(value) > chars_max:
        raise InputInvalid(f"{name} is at most {chars_max} characters.")
    return value.strip()


def required_text(args: dict[str, Any], name: str, *, chars_max: int = 500) -> str:
    value = text(args, name, chars_max=chars_max)
    assert value is not None
    return value


def integer(args: dict[str, Any], name: str, *, low: int, high: int, default: int | None = None) -> int:
    value = args.get(name, default)
    # Models sometimes send 30.0 for 30; a whole float is the same number.
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise InputInvalid(f"{name} must be a whole number from {low} to {high}.")
    if not low <= value <= high:
        raise InputInvalid(f"{name} must be from {low} to {high}; {value} is out of range.")
    return value


def flag(args: dict[str, Any], name: str, *, default: bool = False) -> bool:
    value = args.get(name, default)
    if not isinstance(value, bool):
        raise InputInvalid(f"{name} must be true or false.")
    return value


def strings(args: dict[str, Any], name: str, *, items_max: int = 20, chars_max: int = 200) -> list[str]:
    value = args.get(name) or []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise InputInvalid(f"{name} must be a list of strings.")
    if len(value) > items_max:
        raise InputInvalid(f"{name} holds at most {items_max} items.")
    if any(len(v) > chars_max for v in value):
        raise InputInvalid(f"each item of {name} is at most {chars_max} characters.")
    return [v.strip() for v in value if v.strip()]
