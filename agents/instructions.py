"""Composes an agent's system instruction from its persona and the app's layers.

Order runs from what never changes to what changes every run (docs/agents.md#instruction-layers): persona, room,
role (with, for the lead, the team as this deployment has it), channel, trigger,
session. Everything before the session layer depends only on the agent, the channel,
the trigger and the deployment's tools, so runs that share those share a byte-identical
prefix, which Gemini bills as cached input.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import cache
from importlib import resources
from typing import Literal
from zoneinfo import ZoneInfo

from agents.capabilities import render_persona
from agents.roster import AVA, AgentSpec, Roster, current_roster
from agents.team import Team, team_layer

Channel = Literal["text", "voice", "phone"]
Trigger = Literal["human", "ava", "postera"]


@cache
def layer_text(name: str) -> str:
    return resources.files("agents").joinpath("layers", f"{name}.txt").read_text("utf-8").strip()


@cache
def room_layer(team: Roster) -> str:
    """Who is in the room, from the roster: "Ava (the lead), Zee (smart home) and ..."."""
    members = [f"{AVA.display_name} (the lead)", *(f"{a.display_name} ({a.domain})" for a in team.specs)]
    said = members[0] if len(members) == 1 else ", ".join(members[:-1]) + " and " + members[-1]
    return layer_text("room").format(members=said)


@dataclass(frozen=True, slots=True)
class Session:
    """What changes every run: the person's clock and what is known about them."""

    now: datetime
    time_zone: ZoneInfo
    previous_message_at: datetime | None = None
    facts: Sequence[str] = ()


def channel_layer(agent: AgentSpec, channel: Channel, *, speaks: bool = False) -> str:
    # Only Ava is heard on a call; specialists write for the chat, unless Ava asked for a
    # specialist's answer to be said as it is (`speaks`, docs/agents.md#streaming).
    if agent.role != "lead":
        return layer_text("channel_voice_specialist") if speaks and channel != "text" else ""
    return layer_text("channel_text" if channel == "text" else "channel_voice")


def trigger_layer(agent: AgentSpec, trigger: Trigger) -> str:
    if agent.role == "lead":
        return layer_text("trigger_lead_postera" if trigger == "postera" else "trigger_lead_human")
    return layer_text("trigger_specialist_ava" if trigger == "ava" else "trigger_specialist_human")


def _duration(delta: timedelta) -> str:
    seconds = max(0, int(delta.total_seconds()))
    days, rest = divmod(seconds, 86_400)
    hours, rest = divmod(rest, 3_600)
    minutes, seconds = divmod(rest, 60)
    if days:
        return f"{days} days {hours} hours {minutes} minutes"
    if hours:
        return f"{hours} hours {minutes} minutes"
    if minutes:
        return f"{minutes} minutes"
    return f"{seconds} seconds"


def session_layer(session: Session) -> str:
    facts = ""
    if session.facts:
        facts = (
            "What you know about the person (learned from earlier messages; use it when it helps, never recite it):\n"
            + "\n".join(f"- {f}" for f in session.facts)
            + "\n"
        )
    since = ""
    if session.previous_message_at is not None:
        since = f"\nTime since the previous message: {_duration(session.now - session.previous_message_at)}."
    local = session.now.astimezone(session.time_zone)
    return layer_text("session").format(
        facts=facts,
        now_local=local.strftime("%Y-%m-%d %H:%M (%A)"),
        time_zone=session.time_zone.key,
        since_previous=since,
    )


def compose(
    *,
    agent: AgentSpec,
    channel: Channel,
    trigger: Trigger,
    session: Session,
    team: Team | None = None,
    speaks: bool = False,
) -> str:
    """The full system instruction for one run.

    `team` is what every agent can do in this deployment (from the toolbox): the persona
    keeps only the capability lines its tools back, and the lead reads the team layer
    right after her role, where it stays the same for every run of this deployment.
    `speaks`: the run is said to the person as it is written (a specialist on a call)."""
    team = team or {}
    tools = {t.name for t in team.get(agent.name, ())}
    role = render_persona(layer_text("role_lead" if agent.role == "lead" else "role_specialist"), tools)
    layers = (
        render_persona(agent.persona, tools),
        room_layer(current_roster()),
        role,
        team_layer(team) if agent.role == "lead" else "",
        channel_layer(agent, channel, speaks=speaks),
        trigger_layer(agent, trigger),
        session_layer(session),
    )
    return "\n\n".join(layer for layer in layers if layer)
