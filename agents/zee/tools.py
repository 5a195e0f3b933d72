"""Zee's tools, bound to one person's home for one run."""

from __future__ import annotations

from typing import Any

from agents.errors import ToolError
from agents.model import ToolSpec
from agents.tools import Tool, object_schema
from agents.zee.home import Command, SmartHome


def zee_tools(home: SmartHome, *, person_id: str) -> list[Tool]:
    async def list_devices(_: dict[str, Any]) -> dict[str, Any]:
        devices = await home.list_devices(person_id=person_id)
        return {
            "devices": [
                {
                    "id": d.id,
                    "name": d.name,
                    "category": d.category,
                    "online": d.online,
                    "status": [{"code": k, "value": v} for k, v in d.status.items()],
                    "channel_names": d.channel_names,
                }
                for d in devices
            ]
        }

    async def device_status(args: dict[str, Any]) -> dict[str, Any]:
        device_id = args.get("device_id")
        if not isinstance(device_id, str) or not device_id:
            raise ToolError("device_id is required.")
        status = await home.device_status(person_id=person_id, device_id=device_id)
        return {"status": [{"code": k, "value": v} for k, v in status.items()]}

    async def send_commands(args: dict[str, Any]) -> dict[str, Any]:
        device_id = args.get("device_id")
        raw = args.get("commands")
        if not isinstance(device_id, str) or not device_id:
            raise ToolError("device_id is required.")
        if not isinstance(raw, list) or not all(isinstance(c, dict) and "code" in c for c in raw):
            raise ToolError('commands must be a list like [{"code": "switch_led", "value": true}].')
        commands = [Command(code=str(c["code"]), value=c.get("value")) for c in raw]
        await home.send_commands(person_id=person_id, device_id=device_id, commands=commands)
        return {"ok": True}

    return [
        Tool(
            ToolSpec(
                "list_devices",
                "List every device in the person's home with its id, category, online state, "
                "current status data points and the names of its switch channels.",
                object_schema({}),
            ),
            list_devices,
        ),
        Tool(
            ToolSpec(
                "device_status",
                "Read the current status data points of one device, by its exact id from list_devices.",
                object_schema({"device_id": {"type": "string"}}, ("device_id",)),
            ),
            device_status,
        ),
        Tool(
            ToolSpec(
                "send_commands",
                "Send one or more data point commands to one device, e.g. "
                '[{"code": "switch_led", "value": true}] or [{"code": "percent_control", "value": 0}]. '
                "Use the exact device id from list_devices.",
                object_schema(
                    {
                        "device_id": {"type": "string"},
                        "commands": {
                            "type": "array",
                            "items": object_schema(
                                {
                                    "code": {"type": "string"},
                                    "value": {"anyOf": [{"type": "boolean"}, {"type": "integer"}, {"type": "string"}]},
                                },
                                ("code", "value"),
                            ),
                        },
                    },
                    ("device_id", "commands"),
                ),
            ),
            send_commands,
        ),
    ]
