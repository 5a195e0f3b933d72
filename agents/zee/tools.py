"""Zee's tools, bound to one person's home (sandbox or Tuya) for one run.

Every result says which home it came from (`"account": "sandbox"` or `"live"`)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from agents.errors import ToolError
from agents.integrations.accounts import Account
from agents.integrations.outside import as_data
from agents.model import ToolSpec
from agents.tools import Tool, object_schema
from agents.zee.home import Command, SmartHome

Choose = Callable[[], Awaitable[Account[SmartHome]]]


def zee_tools(choose: Choose, *, person_id: str) -> list[Tool]:
    async def list_devices(_: dict[str, Any]) -> dict[str, Any]:
        account = await choose()
        devices = await account.port.list_devices(person_id=person_id)
        return {
            "account": account.kind,
            "devices": [
                {
                    "id": d.id,
                    "name": as_data(d.name),
                    "category": d.category,
                    "online": d.online,
                    "status": [{"code": k, "value": v} for k, v in d.status.items()],
                    "channel_names": {k: as_data(v) for k, v in d.channel_names.items()},
                }
                for d in devices
            ],
        }

    async def device_status(args: dict[str, Any]) -> dict[str, Any]:
        device_id = args.get("device_id")
        if not isinstance(device_id, str) or not device_id:
            raise ToolError("device_id is required.")
        account = await choose()
        status = await account.port.device_status(person_id=person_id, device_id=device_id)
        return {"account": account.kind, "status": [{"code": k, "value": v} for k, v in status.items()]}

    async def send_commands(args: dict[str, Any]) -> dict[str, Any]:
        device_id = args.get("device_id")
        raw = args.get("commands")
        if not isinstance(device_id, str) or not device_id:
            raise ToolError("device_id is required.")
        if not isinstance(raw, list) or not all(isinstance(c, dict) and "code" in c for c in raw):
            raise ToolError('commands must be a list like [{"code": "switch_led", "value": true}].')
        commands = [Command(code=str(c["code"]), value=c.get("value")) for c in raw]
        account = await choose()
        await account.port.send_commands(person_id=person_id, device_id=device_id, commands=commands)
        return {"account": account.kind, "ok": True}

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
