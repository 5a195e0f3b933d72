"""Wake notes without a database: local times in a zone, the limits, the callback
signatures and tokens, and what the offline Ava reads from a request."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from agents.offline.wakes import _task, _when
from reminders import (
    CallbackGate,
    CallbackRefused,
    CallbackSigner,
    LocalIdTokens,
    Note,
    NoteInvalid,
    TimeInPast,
    TimeInvalid,
    TimeTooFar,
    ZoneInvalid,
    first_line,
    parse_local,
)
from reminders.fcm import topic_for
from reminders.notes import check_due, check_text, zone_named

JAKARTA = ZoneInfo("Asia/Jakarta")
NOW = datetime(2026, 11, 30, 18, 0, 0)  # noqa: DTZ001 - the offline model's naive local clock


def note(**changes: object) -> Note:
    base = Note(
        id="pstr_abc",
        person_id="usr_1",
        agent="ava",
        text="Remind Budi to stretch.",
        due_at=datetime(2026, 12, 1, 10, 0, tzinfo=UTC),
        time_zone="Asia/Jakarta",
        status="pending",
        created_at=datetime(2026, 11, 30, tzinfo=UTC),
    )
    return dataclasses.replace(base, **changes)  # type: ignore[arg-type]


def test_a_local_time_means_the_wall_clock_in_the_persons_zone() -> None:
    assert parse_local("2026-12-01T17:00", JAKARTA) == datetime(2026, 12, 1, 10, 0, tzinfo=UTC)
    assert parse_local("2026-12-01T17:00:30", JAKARTA) == datetime(2026, 12, 1, 10, 0, 30, tzinfo=UTC)
    assert note().due_local() == "2026-12-01T17:00:00"


@pytest.mark.parametrize("text", ["tomorrow 5pm", "2026-12-01 17:00", "2026-13-01T17:00", "2026-02-30T10:00", ""])
def test_malformed_local_times_are_refused(text: str) -> None:
    with pytest.raises(TimeInvalid):
        parse_local(text, JAKARTA)


def test_a_time_the_clocks_skip_does_not_exist() -> None:
    with pytest.raises(TimeInvalid, match="does not exist"):
        parse_local("2026-03-08T02:30", ZoneInfo("America/New_York"))


def test_unknown_zones_are_refused() -> None:
    for name in ("Mars/Olympus", "../etc/passwd", ""):
        with pytest.raises(ZoneInvalid):
            zone_named(name)


def test_due_times_must_be_future_and_within_a_year() -> None:
    now = datetime(2026, 11, 30, tzinfo=UTC)
    with pytest.raises(TimeInPast):
        check_due(now, now=now)
    with pytest.raises(TimeTooFar):
        check_due(now + timedelta(days=367), now=now)
    assert check_due(now + timedelta(days=366), now=now) == now + timedelta(days=366)


def test_notes_are_bounded_and_never_blank() -> None:
    for blank in ("", "  \n", "\u200b\ufeff", None):
        with pytest.raises(NoteInvalid):
            check_text(blank)
    with pytest.raises(NoteInvalid):
        check_text("x" * 1001)
    assert check_text("  stretch  ") == "stretch"


def test_the_preview_is_the_first_line_standing_alone() -> None:
    assert first_line("\n  Time to stretch, Budi!\nAnd drink water.") == "Time to stretch, Budi!"
    assert first_line("x" * 300).endswith("…")
    assert len(first_line("x" * 300)) == 200


def test_a_signature_covers_the_note_its_person_and_its_due_time() -> None:
    signer = CallbackSigner(b"s" * 32)
    signature = signer.sign(note())
    signer.check(note(), signature)
    for changed in (note(id="pstr_other"), note(person_id="usr_2"), note(due_at=datetime(2026, 12, 2, tzinfo=UTC))):
        with pytest.raises(CallbackRefused):
            signer.check(changed, signature)
    with pytest.raises(CallbackRefused):
        CallbackSigner(b"t" * 32).check(note(), signature)


async def test_id_tokens_are_checked_for_key_audience_expiry_and_caller() -> None:
    tokens = LocalIdTokens(b"k" * 32)
    good = tokens.issue(email="tasks@x.iam", audience="https://a.test")
    assert await tokens.verify(token=good, audience="https://a.test") == "tasks@x.iam"
    bad = [
        (good, "https://b.test"),
        (LocalIdTokens(b"j" * 32).issue(email="tasks@x.iam", audience="https://a.test"), "https://a.test"),
        (tokens.issue(email="tasks@x.iam", audience="https://a.test", now=0), "https://a.test"),
        ("v1.usr_1.9999999999.mac", "https://a.test"),  # a person's session token
        ("garbage", "https://a.test"),
    ]
    for token, audience in bad:
        with pytest.raises(CallbackRefused):
            await tokens.verify(token=token, audience=audience)


async def test_the_gate_takes_only_the_expected_service_account() -> None:
    tokens = LocalIdTokens(b"k" * 32)
    gate = CallbackGate(
        signer=CallbackSigner(b"s" * 32), id_tokens=tokens, audience="https://a.test", service_account="tasks@x.iam"
    )
    await gate.check(note(), signature=None, bearer=tokens.issue(email="tasks@x.iam", audience="https://a.test"))
    with pytest.raises(CallbackRefused):
        await gate.check(note(), signature=None, bearer=tokens.issue(email="me@x.com", audience="https://a.test"))
    with pytest.raises(CallbackRefused):
        await gate.check(note(), signature=None, bearer=None)
    await gate.check(note(), signature=gate.sign(note()), bearer=None)


@pytest.mark.parametrize(
    ("request_text", "expected"),
    [
        ("remind me in 5 minutes to stretch", NOW + timedelta(minutes=5)),
        ("remind me in 2 seconds to stretch", NOW + timedelta(seconds=2)),
        ("remind me in an hour to call mom", NOW + timedelta(hours=1)),
        ("ingatkan aku dalam 10 menit untuk minum obat", NOW + timedelta(minutes=10)),
        ("ingetin aku 2 jam lagi buat jemput Nay", NOW + timedelta(hours=2)),
        ("remind me at 17:00 to leave", NOW.replace(hour=17) + timedelta(days=1)),
        ("remind me at 7pm to cook", NOW.replace(hour=19)),
        ("remind me at 7:30 pm to cook", NOW.replace(hour=19, minute=30)),
        ("ingatkan aku jam 17:00 jemput Nay", NOW.replace(hour=17) + timedelta(days=1)),
        ("ingatkan aku jam 7 malam masak", NOW.replace(hour=19)),
        ("remind me to water the plants", None),
    ],
)
def test_the_offline_ava_reads_relative_and_clock_times(request_text: str, expected: datetime | None) -> None:
    assert _when(request_text, NOW) == expected


@pytest.mark.parametrize(
    ("request_text", "lang", "task"),
    [
        ("remind me in 5 minutes to call my mom", "en", "call your mom"),
        ("remind me to stretch in 5 minutes", "en", "stretch"),
        ("ingatkan aku jam 17:00 jemput Nay", "id", "jemput Nay"),
        ("ingatkan aku dalam 10 menit untuk minum obat", "id", "minum obat"),
    ],
)
def test_the_offline_ava_keeps_the_task_in_the_persons_words(request_text: str, lang: str, task: str) -> None:
    assert _task(request_text, lang) == task  # type: ignore[arg-type]


def test_push_topics_are_per_person_and_safe() -> None:
    assert topic_for("usr_12ab") == "person_usr_12ab"
    assert topic_for("a/b c") == "person_a_b_c"
