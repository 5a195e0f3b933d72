"""The rules a scenario's expectations are judged by, one per expectation key.

Each rule checks the value written in the file when the file is read (so a malformed
expectation fails before anything runs) and judges one turn's observation afterwards,
returning a sentence that says what went wrong, or None. The report counts passes per
rule, so an instruction change shows which behaviour it moved.

Extension point: a domain that adds behaviour adds its rule with `register`; a rule that
must look past the turn's messages reads `Observation.product` (the wake rule reads the
person's pending notes there).
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

from agents import AGENTS, EMOTIONS, capability_vocabulary, hollow


@dataclass(frozen=True, slots=True)
class Observation:
    """What one turn did, as the rules see it."""

    door: str
    person_id: str
    messages: list[dict[str, Any]]  # the turn's messages (as the API returns them), in order
    runs: list[dict[str, Any]]  # the turn's runs, in the order they started
    home_before: dict[str, dict[str, Any]]  # device id -> data points
    home_after: dict[str, dict[str, Any]]
    spoken: str  # the raw final reply of the run the person spoke to (tags included)
    product: Any = None  # the services the turn ran on, for rules that must look further
    time_zone: str = "UTC"  # the scenario's IANA zone: local times are judged in it
    extra: Mapping[str, Any] = field(default_factory=dict)

    @property
    def replies(self) -> list[dict[str, Any]]:
        """Agents' messages that are not handoff tags."""
        return [m for m in self.messages if m["author"] in AGENTS and not _is_handoff(m)]


def _is_handoff(message: dict[str, Any]) -> bool:
    return bool(message["author"] == "ava" and str(message["text"]).startswith("@"))


Check = Callable[[Observation, Any], Awaitable[str | None]]


@dataclass(frozen=True, slots=True)
class Rule:
    name: str
    about: str  # one line for the report and docs/eval.md
    validate: Callable[[Any], str | None]
    check: Check


RULES: dict[str, Rule] = {}


def register(name: str, about: str, validate: Callable[[Any], str | None]) -> Callable[[Check], Check]:
    """Add a rule under an expectation key (decorator)."""

    def add(check: Check) -> Check:
        assert name not in RULES, f"rule {name!r} registered twice"
        RULES[name] = Rule(name, about, validate, check)
        return check

    return add


# --- value checks -------------------------------------------------------------------------


def _boolean(value: Any) -> str | None:
    return None if isinstance(value, bool) else "must be true or false"


def _strings(value: Any) -> str | None:
    ok = isinstance(value, list) and value and all(isinstance(v, str) and v.strip() for v in value)
    return None if ok else "must be a non-empty list of strings"


def _agents(value: Any) -> str | None:
    if not isinstance(value, list) or not all(isinstance(v, str) and v.lstrip("@") in AGENTS for v in value):
        return f"must be a list of agent names from {sorted(AGENTS)}"
    return None


def _runs(value: Any) -> str | None:
    if not isinstance(value, list):
        return "must be a list like [{agent: ava, trigger: human}, {agent: zee, trigger: ava, parent: ava}]"
    for item in value:
        if not isinstance(item, dict) or set(item) - {"agent", "trigger", "parent"} or "agent" not in item:
            return "each run is {agent, trigger, parent}; agent is required"
        if item["agent"] not in AGENTS or item.get("trigger", "human") not in ("human", "ava", "postera"):
            return f"agent must be one of {sorted(AGENTS)} and trigger one of human, ava, postera"
        if item.get("parent") is not None and item["parent"] not in AGENTS:
            return f"parent must be an agent name, not {item['parent']!r}"
    return None


def _home(value: Any) -> str | None:
    if value == "unchanged":
        return None
    if isinstance(value, dict) and value and all(isinstance(v, dict) and v for v in value.values()):
        return None
    return 'must be "unchanged" or map device ids to the data points they end with'


def _count(value: Any) -> str | None:
    return (
        None if isinstance(value, int) and not isinstance(value, bool) and value > 0 else "must be a whole number > 0"
    )


# --- the rules ----------------------------------------------------------------------------


@register("runs", "which agents run, with which trigger and parent, in order", _runs)
async def _check_runs(o: Observation, expected: list[dict[str, Any]]) -> str | None:
    by_id = {r["id"]: r["agent"] for r in o.runs}
    seen = [
        {"agent": r["agent"], "trigger": r["trigger"], "parent": by_id.get(r["parent_run_id"] or "")} for r in o.runs
    ]
    wanted = [{"agent": e["agent"], "trigger": e.get("trigger", "human"), "parent": e.get("parent")} for e in expected]
    if seen != wanted:
        return f"runs were {_show_runs(seen)}, expected {_show_runs(wanted)}"
    return None


def _show_runs(runs: list[dict[str, Any]]) -> str:
    parts = [f"{r['agent']}({r['trigger']}{'<' + r['parent'] if r['parent'] else ''})" for r in runs]
    return "[" + ", ".join(parts) + "]"


@register("runs_succeed", "every run of the turn ends succeeded", _boolean)
async def _check_succeeded(o: Observation, expected: bool) -> str | None:
    failed = [f"{r['agent']}: {(r.get('error') or {}).get('type')}" for r in o.runs if r["status"] != "succeeded"]
    if expected and failed:
        return "runs failed: " + ", ".join(failed)
    return None


@register("handoffs", "Ava's handoffs, in order; each message is exactly @name", _agents)
async def _check_handoffs(o: Observation, expected: list[str]) -> str | None:
    written = [m["text"] for m in o.messages if _is_handoff(m)]
    wanted = ["@" + name.lstrip("@") for name in expected]
    if written != wanted:
        return f"Ava wrote handoffs {written}, expected exactly {wanted}"
    return None


@register("ava_silent", "Ava writes no reply of her own (handoff tags aside)", _boolean)
async def _check_silent(o: Observation, expected: bool) -> str | None:
    said = [m["text"] for m in o.replies if m["author"] == "ava"]
    if expected and said:
        return f"Ava should be silent but said {said[0]!r}"
    if not expected and not said:
        return "Ava should have answered but stayed silent"
    return None


@register("replies_from", "who writes a reply, in order (handoff tags aside)", _agents)
async def _check_repliers(o: Observation, expected: list[str]) -> str | None:
    seen = [m["author"] for m in o.replies]
    if seen != [e.lstrip("@") for e in expected]:
        return f"replies came from {seen}, expected {expected}"
    return None


@register("home", 'the sandbox home after the turn: "unchanged", or only the listed data points change', _home)
async def _check_home(o: Observation, expected: Any) -> str | None:
    wanted = {d: dict(points) for d, points in o.home_before.items()}
    if expected != "unchanged":
        for device, points in expected.items():
            if device not in wanted:
                return f"there is no device {device!r} in the sandbox home"
            wanted[device].update(points)
    changes = [
        f"{device}.{code}: {o.home_before[device].get(code)!r} -> {o.home_after.get(device, {}).get(code)!r}"
        f" (expected {wanted[device].get(code)!r})"
        for device in wanted
        for code in sorted(set(wanted[device]) | set(o.home_after.get(device, {})))
        if o.home_after.get(device, {}).get(code) != wanted[device].get(code)
    ]
    return "home differs: " + "; ".join(changes) if changes else None


# Words that mark a reply as one language or the other. Device names count: an
# Indonesian reply says "lampu kamar", not "bedroom light".
_ENGLISH = frozenset(
    [
        "and",
        "the",
        "is",
        "are",
        "your",
        "you",
        "it",
        "done",
        "sorry",
        "can't",
        "cannot",
        "yet",
        "with",
        "of",
        "to",
        "light",
        "lights",
        "bedroom",
        "living",
        "room",
        "curtain",
        "which",
        "what",
        "here",
        "now",
        "off",
        "on",
        "open",
        "closed",
        "not",
        "anytime",
        "welcome",
        "i'm",
        "i",
        # someone else's facts ("Maya likes orchids", "Sari's birthday is 12 May")
        "likes",
        "lives",
        "works",
        "allergic",
        "birthday",
    ]
)
_INDONESIAN = frozenset(
    [
        "dan",
        "yang",
        "lampu",
        "kamar",
        "udah",
        "sudah",
        "nyala",
        "mati",
        "aku",
        "kamu",
        "ya",
        "belum",
        "bisa",
        "nggak",
        "sekarang",
        "gorden",
        "ruang",
        "tamu",
        "beres",
        "maaf",
        "dong",
        "ada",
        "lagi",
        "itu",
        "ini",
        "sama",
        "makasih",
        "kebuka",
        "ketutup",
        "dadah",
        "sampai",
        "dari",
        "soal",
        "terbaru",
        "muter",
        "kontakmu",
        "ke",
        "di",
        "pemutar",
        "kalendermu",
        "kosong",
        "jadwalmu",
        "tanggal",
        "besok",
        "hari",
        "jam",
        "aku",
        "kirim",
        "subjek",
        "nama",
        "alergi",
        "favoritmu",
        "ulang",
        "tahunmu",
        "tinggal",
        "kerja",
        "suka",
    ]
)


def _words(text: str) -> list[str]:
    # Whole words only: "ada" inside a generated name such as "Budi 25ada5" is no word.
    return re.findall(r"(?<!\w)[a-z']+(?!\w)", re.sub(r"#\w+#", " ", text.lower()))


@register(
    "language",
    "every reply is in this language (en or id), with no words of the other",
    lambda v: None if v in ("en", "id") else "must be en or id",
)
async def _check_language(o: Observation, expected: str) -> str | None:
    texts = [m["text"] for m in o.replies] or ([o.spoken] if o.spoken else [])
    if not texts:
        return "nobody replied, so there is no language to check"
    mine, other = (_INDONESIAN, _ENGLISH) if expected == "id" else (_ENGLISH, _INDONESIAN)
    for text in texts:
        # A quoted line ("> ...") or a title in “curly quotes” is the person's data as written (a
        # mail's body, its subject), not the reply's own words.
        own = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith(">"))
        words = _words(re.sub(r"“[^”]*”", " ", own))
        stray = sorted({w for w in words if w in other})
        if stray:
            return f"{text!r} mixes in {stray}"
        if not any(w in mine for w in words):
            return f"{text!r} does not read as {expected}"
    return None


@register("says", "the replies contain each of these (case-insensitive)", _strings)
async def _check_says(o: Observation, expected: list[str]) -> str | None:
    said = " ".join(m["text"] for m in o.replies).lower()
    missing = [e for e in expected if e.lower() not in said]
    return f"replies {said!r} lack {missing}" if missing else None


@register("never_says", "the replies contain none of these (case-insensitive)", _strings)
async def _check_never_says(o: Observation, expected: list[str]) -> str | None:
    said = " ".join(m["text"] for m in o.replies).lower()
    found = [e for e in expected if e.lower() in said]
    return f"replies {said!r} contain {found}" if found else None


@register("asks", "a reply asks the person a question back (true) or none does (false)", _boolean)
async def _check_asks(o: Observation, expected: bool) -> str | None:
    asked = any("?" in m["text"] for m in o.replies)
    if asked != expected:
        return "nobody asked a question back" if expected else "a reply asked a question instead of answering"
    return None


_TAG = re.compile(r"#\s*([A-Za-z_]+)\s*#")
_FORBIDDEN = re.compile(r"[()\[\]\\*_`<>{}|~]|^\s*[-•]\s", re.MULTILINE)


def _sentences(spoken: str) -> list[str]:
    plain = _TAG.sub(" ", spoken)
    return [s for s in re.split(r"(?<=[.!?…])\s+", plain.strip()) if s.strip()]


@register("spoken_sentences_max", "on a call, the spoken reply has at most this many sentences", _count)
async def _check_length(o: Observation, expected: int) -> str | None:
    count = len(_sentences(o.spoken))
    if not o.spoken.strip():
        return "nothing was spoken (silence on a call)"
    return f"{count} sentences spoken, at most {expected} allowed: {o.spoken!r}" if count > expected else None


@register("spoken_characters", "on a call, no markdown, lists or ( ) [ ] \\ characters are spoken", _boolean)
async def _check_characters(o: Observation, expected: bool) -> str | None:
    bad = sorted(set(_FORBIDDEN.findall(_TAG.sub(" ", o.spoken))))
    stray_hash = "#" in _TAG.sub(" ", o.spoken)
    if expected and (bad or stray_hash):
        return f"the spoken reply holds characters a voice must not speak: {bad + (['#'] if stray_hash else [])}"
    return None


@register("emotion_tags", "on a call, at least one tag, each one of the 20 emotions, each after a sentence", _boolean)
async def _check_tags(o: Observation, expected: bool) -> str | None:
    tags = [t.lower() for t in _TAG.findall(o.spoken)]
    emotions = [t for t in tags if t != "end"]
    if not expected:
        return f"tags {emotions} were used where none were expected" if emotions else None
    if not emotions:
        return f"no emotion tag in {o.spoken!r}"
    unknown = [t for t in emotions if t not in EMOTIONS]
    if unknown:
        return f"tags {unknown} are not among the 20 emotions"
    if _TAG.match(o.spoken.strip()):
        return "the reply starts with a tag; a tag follows the sentence it colours"
    return None


@register("end", "on a call, #end# is the very last token (true) or absent (false)", _boolean)
async def _check_end(o: Observation, expected: bool) -> str | None:
    has_end = bool(re.search(r"#\s*end\s*#", o.spoken, re.IGNORECASE))
    last = o.spoken.rstrip().lower().endswith("#end#")
    if expected and not (has_end and last):
        return f"#end# should close the reply: {o.spoken!r}"
    if not expected and has_end:
        return f"#end# hangs up, but this turn should not: {o.spoken!r}"
    if expected and not _sentences(o.spoken.replace("#end#", "")):
        return "#end# came with no goodbye"
    return None


# A sentence that says something was done ("Done, your flight is booked.") is a claim a
# tool call must back: the run that wrote it called at least one tool this turn.
_DONE = re.compile(
    r"\b(done|booked|ordered|paid|bought|reserved|sent|scheduled|added|cancell?ed|turned|switched|set to|"
    r"is now|are now|now playing|paused|skipped|udah aku|sudah aku|beres|berhasil)\b",
    re.IGNORECASE,
)
# Deeds said as done that only a tool named or described for them could do: the stem must
# appear in one of the writer's own tools, or the claim is empty whatever else the run called.
_DEEDS: dict[str, re.Pattern[str]] = {
    stem: re.compile(rf"\b{done}\b", re.IGNORECASE)
    for done, stem in (("booked", "book"), ("ordered", "order"), ("paid", "pay"), ("bought", "buy"),
                       ("purchased", "purchas"), ("reserved", "reserv"), ("transferred", "transfer"),
                       ("delivered", "deliver"), ("posted", "post"), ("tweeted", "tweet"), ("uploaded", "upload"),
                       ("deleted", "delet"), ("locked", "lock"), ("unlocked", "lock"), ("called", "call"),
                       ("texted", "text"))
}  # fmt: skip
_NEGATED = re.compile(
    r"\b(can't|cannot|can not|couldn't|not|no|never|isn't|aren't|belum|nggak|gak|tidak|bukan)\b", re.IGNORECASE
)


def _sentences_of(text: str) -> list[str]:
    return [s for s in re.split(r"(?<=[.!?;:])\s+|\n", text) if s.strip()]


def _unbacked(text: str, specs: tuple[Any, ...], called: bool) -> list[str]:
    """What one reply claims that its writer's tools (and this turn's calls) do not back."""
    wrong = hollow(text, specs)
    described = " ".join(f"{s.name} {s.description}" for s in specs).lower()
    for sentence in _sentences_of(text):
        if _NEGATED.search(sentence):
            continue
        if _DONE.search(sentence) and not called:
            wrong.append(f"{sentence.strip()!r} (a deed with no tool called)")
        for stem, pattern in _DEEDS.items():
            found = pattern.search(sentence)
            if found and stem not in described:
                wrong.append(f"{found.group(0)!r} (no tool of the writer does that)")
    return list(dict.fromkeys(wrong))


@register("promises_backed", "each reply promises only what its writer's own registered tools really do", _boolean)
async def _check_promises(o: Observation, expected: bool) -> str | None:
    if not expected:
        return None
    team: Mapping[str, tuple[Any, ...]] = getattr(o.product, "team", {}) or {}
    called = {r["id"] for r in o.runs if r.get("tool_calls")}
    written = [(m["author"], m["text"], m.get("run_id") in called) for m in o.replies]
    if not written and o.spoken:
        written = [("ava", o.spoken, any(r["agent"] == "ava" and r["id"] in called for r in o.runs))]
    handed = {r["agent"] for r in o.runs if r["trigger"] == "ava"}
    for author, text, did_call in written:
        for sentence in _sentences_of(_TAG.sub(" ", text)):
            specs = tuple(team.get(author, ()))
            if author == "ava":  # she speaks for whom she names or handed on ("Zee can ...", a relay)
                low = sentence.lower()
                for name in team:
                    if name != "ava" and (name in handed or re.search(rf"\b{name}\b", low)):
                        specs += tuple(team[name])
            empty = _unbacked(sentence, specs, did_call)
            if empty:
                return f"{author}: {text!r} promises {empty}, which none of the tools it speaks for provides"
    return None


# What a request asks for, in the eval's own words (never the offline model's), and the
# tools that provide it: a refusal is false when the writer (or, for Ava, anyone in the room)
# has one of them.
_ASKS_FOR: tuple[tuple[re.Pattern[str], frozenset[str]], ...] = tuple(
    (re.compile(pattern, re.IGNORECASE), frozenset(tools.split()))
    for pattern, tools in (
        (r"\b(e-?mails?|mail|inbox|surel|reply|balas\w*)\b", "read_messages send_email"),
        (r"\b(calendar|kalender|events?|meetings?|appointments?|jadwal\w*|rapat|acara)\b", "list_events add_event"),
        (r"\b(contacts?|kontak\w*|phone numbers?|nomor)\b", "list_contacts add_contact"),
        (r"\b(music|songs?|lagu\w*|musik|volume\w*|playlists?|pause|louder|quieter)\b",
         "play pause set_volume search_tracks now_playing skip_next"),
        (r"\b(lights?|lamps?|lampu\w*|ac|aircon|curtains?|gorden\w*|tirai)\b", "send_commands device_status"),
        (r"\b(remind\w*|reminders?|ingatkan|ingetin|pengingat)\b", "schedule_wake"),
    )
)  # fmt: skip
_REFUSAL = re.compile(
    r"\b(I (?:can't|cannot|can not|couldn't)|I'm (?:not able|unable)|we can't|nobody here|no \w+ (?:service|tool)|"
    r"not connected|nothing is connected|(?:aku|saya) (?:belum|nggak|gak|tidak) bisa|belum bisa|"
    r"belum ada (?:yang|layanan)|belum tersambung)\b",
    re.IGNORECASE,
)
_NOT_CONNECTED = re.compile(r"\b(not connected|is connected here|nothing is connected|belum tersambung|"
                            r"yang tersambung)\b", re.IGNORECASE)  # fmt: skip


def _false_refusal(sentence: str, request: str, writer: str, team: Mapping[str, tuple[Any, ...]]) -> str | None:
    mine = {spec.name for spec in team.get(writer, ())}
    room = {spec.name for specs in team.values() for spec in specs}
    able = room if writer == "ava" else mine  # Ava speaks for the room; a specialist for itself
    if _NOT_CONNECTED.search(sentence):
        idle = [name for name in team if name != "ava" and name.lower() in sentence.lower() and team[name]]
        if writer != "ava" and mine:
            return f"{writer} says nothing is connected, but has {len(mine)} tools"
        if idle:
            return f"it says {idle} are not connected, but they have tools"
    for capability in capability_vocabulary():
        named = capability.promise.search(sentence) or capability.en.lower() in sentence.lower()
        if named and capability.tools & able:
            return f"it refuses {capability.name!r}, which {sorted(capability.tools & able)} provide"
    for asks, tools in _ASKS_FOR:
        if asks.search(request) and tools & able:
            return f"the request asks for what {sorted(tools & able)} provide"
    return None


@register("refusals_true", "every refusal is true: no registered tool does what a reply says cannot be done", _boolean)
async def _check_refusals(o: Observation, expected: bool) -> str | None:
    if not expected:
        return None
    team: Mapping[str, tuple[Any, ...]] = getattr(o.product, "team", {}) or {}
    request = " ".join(m["text"] for m in o.messages if m["author"] not in AGENTS)
    for message in o.replies:
        for sentence in _sentences_of(_TAG.sub(" ", message["text"])):
            if not _REFUSAL.search(sentence):
                continue
            wrong = _false_refusal(sentence, request, message["author"], team)
            if wrong:
                return f"{message['author']}: {sentence.strip()!r} is not true: {wrong}"
    return None


# A templated reply whose slot was filled badly: a word twice ("remind you to to buy"), a
# word that needs what follows left hanging at a sentence's end ("at.", "untuk."), a slot
# left empty (" ,", "  ."), or a time said twice ("to tomorrow to buy milk at 07:00").
_DOUBLED = re.compile(r"(?<![\w'])([a-z]+)[ \t]+\1(?![\w'])", re.IGNORECASE)
_DANGLING = re.compile(
    r"(?<![\w'])(to|the|a|an|at|of|for|with|and|by|from|di|ke|untuk|dan|jam|dari|yang)\s*[.!?](?:\s|$)",
    re.IGNORECASE,
)
_EMPTY_SLOT = re.compile(r"\s[,.;:!?](?:\s|$)|\(\s*\)|“\s*”")
_TWO_WHENS = re.compile(r"\bto (?:tomorrow|today|tonight)\b", re.IGNORECASE)


def sentence_fault(reply: str) -> str | None:
    """What reads wrong in one reply ("a doubled word: 'to to'"), or None."""
    # Quoted lines and titles are the person's data as written, not the reply's template.
    own = "\n".join(line for line in reply.splitlines() if not line.lstrip().startswith(("> ", "- ")))
    text = re.sub(r"“[^”]*”", "“x”", _TAG.sub(" ", own))
    for pattern, what in ((_DOUBLED, "a doubled word"), (_DANGLING, "a dangling word"),
                          (_EMPTY_SLOT, "an empty slot"), (_TWO_WHENS, "a time in the task")):  # fmt: skip
        found = pattern.search(text)
        if found:
            return f"{what}: {found.group(0).strip()!r}"
    return None


@register("reads_as_sentences", "no reply doubles a word, leaves one dangling, or leaves a slot empty", _boolean)
async def _check_sentences(o: Observation, expected: bool) -> str | None:
    if not expected:
        return None
    for message in o.replies:
        fault = sentence_fault(message["text"])
        if fault:
            return f"{message['author']}: {message['text']!r} has {fault}"
    return None


# Judged on every turn of every scenario, expectations or not (the runner adds them).
ALWAYS: dict[str, Any] = {"refusals_true": True, "reads_as_sentences": True}


_AT_LOCAL = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}$")


def _wake(value: Any) -> str | None:
    usage = 'must be "none" or {at_local: "YYYY-MM-DDTHH:MM", note_contains: text}'
    if value == "none":
        return None
    if not isinstance(value, dict) or set(value) - {"at_local", "note_contains"} or "at_local" not in value:
        return usage
    if not isinstance(value["at_local"], str) or not _AT_LOCAL.match(value["at_local"]):
        return usage
    try:
        datetime.fromisoformat(value["at_local"])
    except ValueError:
        return f"{value['at_local']!r} is not a real date and time"
    note = value.get("note_contains", "x")
    return None if isinstance(note, str) and note.strip() else usage


@register("wake", 'the person\'s pending wake notes after the turn: one due at this local time, or "none"', _wake)
async def _check_wake(o: Observation, expected: Any) -> str | None:
    reminders = getattr(o.product, "reminders", None)
    if reminders is None:
        return "this deployment keeps no wake notes"
    zone = ZoneInfo(o.time_zone)
    pending = await reminders.upcoming(o.person_id)
    seen = [(n.due_at.astimezone(zone).strftime("%Y-%m-%dT%H:%M"), str(n.text)) for n in pending]
    if expected == "none":
        return f"nothing should be scheduled, but pending are {seen}" if seen else None
    wanted = expected.get("note_contains", "").lower()
    if any(at == expected["at_local"] and wanted in text.lower() for at, text in seen):
        return None
    about = f" with {expected['note_contains']!r}" if wanted else ""
    return f"no pending note due at {expected['at_local']} ({o.time_zone}){about}; pending are {seen}"
