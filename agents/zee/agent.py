"""Zee, the smart-home specialist, as the room knows it: one declaration (agents/specialist.py).

Zee acts on a `SmartHome`: every person's sandbox home, or their Tuya Smart home once
they name their Tuya account and this server holds a Tuya Cloud project's credentials.
"""

from __future__ import annotations

import asyncpg
from pydantic import SecretStr

from agents.capabilities import Capability, words
from agents.offline.skillset import SkillSet
from agents.roster import AgentSpec
from agents.specialist import LiveParts, Port, Specialist, Vendor, VendorSettings
from agents.zee.home import SmartHome
from agents.zee.offline import answer, claims, home
from agents.zee.sandbox import SandboxHome
from agents.zee.tools import zee_tools
from agents.zee.tuya import TuyaHome


class TuyaSettings(VendorSettings):
    """A Tuya Cloud project (Access ID / Access Secret) and its data centre's OpenAPI address."""

    tuya_access_id: str | None = None
    tuya_access_secret: SecretStr | None = None
    tuya_base_url: str = "https://openapi.tuyaus.com"

    def client(self) -> tuple[str, str] | None:
        if self.tuya_access_id and self.tuya_access_secret is not None:
            return self.tuya_access_id, self.tuya_access_secret.get_secret_value()
        return None


def _sandbox(pool: asyncpg.Pool) -> SmartHome:
    return SandboxHome(pool)


def _live(parts: LiveParts) -> SmartHome | None:
    assert isinstance(parts.settings, TuyaSettings)
    client = parts.settings.client()
    if client is None:
        return None
    return TuyaHome(
        http=parts.http,
        base_url=parts.settings.tuya_base_url,
        client_id=client[0],
        secret=client[1],
        uid_of=parts.account_of,
    )


SPECIALIST: Specialist[SmartHome] = Specialist(
    agent=AgentSpec(
        "zee",
        "Zee",
        "specialist",
        "smart home",
        "Smart-home specialist: the person's lights, air conditioner, curtains and other devices. "
        "Acts only in the present; never give Zee work for a later time.",
    ),
    capabilities=(
        Capability(
            "home_read",
            words(r"\b(lists? (the person's |your )?devices|device status|reads? a device)"),
            frozenset({"list_devices", "device_status"}),
            "check your devices",
            "ngecek perangkat",
        ),
        Capability(
            "home_control",
            words(r"\b(switch(es)? (lights|on|off)|turns? (lights )?(on|off)|dims?|opens? (and closes )?curtains)\b"),
            frozenset({"send_commands"}),
            "switch and dim your lights, set the AC and move the curtains",
            "nyalain, matiin, dan redupin lampu, ngatur AC, dan buka tutup gorden",
        ),
    ),
    port=Port(
        kind="smart_home",
        sandbox=_sandbox,
        live=_live,
        vendor=Vendor("tuya", "Tuya Smart"),  # linked by the person's Tuya account id
        settings=TuyaSettings,
    ),
    tools=lambda choose, context, pending: zee_tools(
        choose,
        pending,
        person_id=context.person_id,
        run_id=context.run_id,
        by_wake_note=context.trigger == "postera",
    ),
    offline=SkillSet(
        claims=claims,
        skills=(answer, home),
        not_yet=(
            "I can't control your home yet: no smart-home service is connected here.",
            "Maaf, aku belum bisa ngatur rumahmu: belum ada layanan rumah pintar yang tersambung di sini.",
        ),
        precedence=20,
    ),
)
