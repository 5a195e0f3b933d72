"""`GeminiExtractor`: the `Extractor` port answered by Gemini's structured output.

It reaches Gemini through `agents.genai`, so its client, timeout, retries and error
mapping are those of the agents' model, and it needs no SDK import of its own.

One request per batch: the person's name, the facts already known (so the model can say
which slot a new fact replaces) and the messages with their ids and authors; the answer
is JSON constrained by a schema, then checked again here, because a claim that names a
message outside the batch, an unknown entity type or an oversized string must never
reach the graph. A refused or unanswered call (`ModelRejected`, `ModelUnavailable`,
chained) and a malformed answer become `ExtractionFailed`; the learning worker retries a
bounded number of times. An answer's usage, as Google reported it, goes back with the
claims, and the learning worker charges it to the person (docs/money.md#learning).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from agents.genai import GeminiClient, usage_of
from agents.knowledge.extraction import (
    NAME_CHARS_MAX,
    SELF,
    TEXT_CHARS_MAX,
    Claim,
    Extraction,
    ExtractionFailed,
    Mention,
)
from agents.knowledge.port import ENTITY_TYPES, EntityType, KnowledgeMessage, ModelSpend
from agents.model import ModelError

_CLAIMS_MAX = 40
_MESSAGE_CHARS_MAX = 2_000
_RELATION_CHARS_MAX = 60

_INSTRUCTION = """You read a chat between a person and their AI assistants and extract lasting facts about \
the person: favourites, likes and dislikes, the people in their life and how they relate to the person, where \
they live and work, allergies, birthdays, and similar durable facts. Only what the person says about \
themselves counts (assistants' messages are context, never a source). Skip questions, jokes, hypotheticals \
and passing states ("I'm tired"). For each fact give the id of the message that states it; the subject is \
"SELF" when it is the person; relation is a short snake_case verb phrase (favourite, likes, dislikes, \
lives_in, works_at, allergic_to, birthday, wife, friend...); text is one English sentence naming the person \
by their name. slot: for a relation that holds one value at a time, a stable key ("favourite:food", \
"lives_in", "relation:wife", "taste:<thing>" for likes/dislikes of one thing), reusing the slot of a known \
fact the new one replaces ("I've switched to soto" replaces the known favourite); empty when facts \
accumulate (friends, allergies). Answer only with JSON matching the schema; no facts is an empty list."""

_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "facts": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "message_id": {"type": "string"},
                    "subject": {"type": "string"},
                    "subject_type": {"type": "string", "enum": list(ENTITY_TYPES)},
                    "relation": {"type": "string"},
                    "object": {"type": "string"},
                    "object_type": {"type": "string", "enum": list(ENTITY_TYPES)},
                    "text": {"type": "string"},
                    "slot": {"type": "string"},
                },
                "required": ["message_id", "subject", "relation", "object", "object_type", "text"],
            },
        }
    },
    "required": ["facts"],
}


class GeminiExtractor:
    """Reads facts out of messages with Gemini. Use one instance per event loop."""

    def __init__(
        self,
        *,
        api_key: str,
        model: str,
        timeout_s: float = 30.0,
        retries_max: int = 1,
        base_url: str | None = None,
        backoff_s: float = 0.5,
    ) -> None:
        self._model = model
        self._client = GeminiClient(
            api_key=api_key,
            timeout_s=timeout_s,
            retries_max=retries_max,
            backoff_s=backoff_s,
            base_url=base_url,
        )

    async def aclose(self) -> None:
        await self._client.aclose()

    async def extract(
        self, *, person_name: str, messages: Sequence[KnowledgeMessage], known: Sequence[Claim]
    ) -> Extraction:
        if not any(m.author == "human" for m in messages):
            return Extraction([])  # nothing the person said: no call, no cost
        answer, spent = await self._generate(_prompt(person_name, messages, known))
        try:
            claims = _claims(answer, person_name=person_name, message_ids={m.id for m in messages})
        except ExtractionFailed as exc:
            raise ExtractionFailed(str(exc), spent=spent) from exc
        return Extraction(claims, spent)

    async def _generate(self, prompt: str) -> tuple[str, ModelSpend]:
        try:
            # A plain dict, which the SDK validates into its config type, keeps this
            # module free of SDK imports.
            response = await self._client.generate(
                model=self._model,
                contents=prompt,
                config={
                    "system_instruction": _INSTRUCTION,
                    "response_mime_type": "application/json",
                    "response_json_schema": _SCHEMA,
                    "temperature": 0.0,
                },
            )
        except ModelError as exc:
            raise ExtractionFailed(f"Gemini could not read the messages ({exc})") from exc
        return response.text or "", ModelSpend(response.model_version or self._model, usage_of(response))


def _prompt(person_name: str, messages: Sequence[KnowledgeMessage], known: Sequence[Claim]) -> str:
    lines = [f"The person's name: {person_name}", "", "Known facts (slot: text):"]
    lines += [f"- {c.slot or '-'}: {c.text}" for c in known] or ["- none"]
    lines += ["", "Messages (id, author, text):"]
    lines += [f"- {m.id} | {m.author} | {m.text[:_MESSAGE_CHARS_MAX]}" for m in messages]
    return "\n".join(lines)


def _entity_type(value: Any, default: EntityType) -> EntityType:
    for entity_type in ENTITY_TYPES:
        if value == entity_type:
            return entity_type
    return default


def _short(value: Any, limit: int) -> str:
    return " ".join(str(value or "").split())[:limit]


def _claims(answer: str, *, person_name: str, message_ids: set[str]) -> list[Claim]:
    try:
        facts = json.loads(answer).get("facts", [])
    except (ValueError, AttributeError) as exc:
        raise ExtractionFailed("Gemini answered with something other than the facts schema") from exc
    claims: list[Claim] = []
    for fact in facts[:_CLAIMS_MAX] if isinstance(facts, list) else ():
        if not isinstance(fact, dict) or fact.get("message_id") not in message_ids:
            continue
        subject_name = _short(fact.get("subject"), NAME_CHARS_MAX)
        obj = _short(fact.get("object"), NAME_CHARS_MAX)
        relation = _short(fact.get("relation"), _RELATION_CHARS_MAX).lower().replace(" ", "_")
        text = _short(fact.get("text"), TEXT_CHARS_MAX)
        if not (subject_name and obj and relation and text):
            continue
        is_self = subject_name.upper() == "SELF" or subject_name.casefold() == person_name.casefold()
        subject = SELF if is_self else Mention(subject_name, _entity_type(fact.get("subject_type"), "person"))
        slot = _short(fact.get("slot"), 120) or None
        claims.append(
            Claim(
                str(fact["message_id"]),
                subject,
                relation,
                Mention(obj, _entity_type(fact.get("object_type"), "thing")),
                text,
                slot,
            )
        )
    return claims
