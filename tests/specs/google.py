"""Our reading of Google's references for Gmail v1, Calendar v3 and People v1, and Google's
OAuth token and revoke endpoints, for the calls `GoogleWorkspace` and the OAuth client
make: restated in our own words and shapes, not copied.

Sources, read on 2026-12-02:
- The discovery documents https://gmail.googleapis.com/$discovery/rest?version=v1,
  https://www.googleapis.com/discovery/v1/apis/calendar/v3/rest and
  https://people.googleapis.com/$discovery/rest?version=v1 (as republished in
  github.com/googleapis/google-api-go-client: gmail/v1/gmail-api.json,
  calendar/v3/calendar-api.json, people/v1/people-api.json) and their reference pages
  (https://developers.google.com/workspace/gmail/api/reference/rest/v1/users.messages/list,
  .../people/api/rest/v1/people.connections/list): parameters, bounds, enums, bodies.
- https://support.google.com/mail/answer/7190 ("Search operators you can use with
  Gmail"): the operators a `q` may use; Gmail reads an unknown `word:value` as text.
- https://developers.google.com/workspace/gmail/api/guides/handle-errors and
  https://developers.google.com/workspace/calendar/api/guides/errors: the error statuses
  and the 403 reasons for usage limits (`rateLimitExceeded`, `userRateLimitExceeded`,
  `dailyLimitExceeded`, `quotaExceeded`) and `domainPolicy`.
- https://developers.google.com/identity/protocols/oauth2/web-server: the token and
  revoke endpoints.
"""

from __future__ import annotations

import re

from tests.specs.checker import Choice, Endpoint, Fields, Many, Maybe, OneOf, Param, Spec

GMAIL, CALENDAR, PEOPLE = "gmail.googleapis.com", "www.googleapis.com", "people.googleapis.com"
MESSAGES_LIMIT_MAX = 500
EVENTS_LIMIT_MAX = 2500
CONNECTIONS_LIMIT_MAX = 1000

# Gmail's documented search operators (the `key:` form; OR, AND, quotes, braces and a
# leading minus are documented too and need no key).
GMAIL_OPERATORS = frozenset(
    {
        "from",
        "to",
        "cc",
        "bcc",
        "subject",
        "label",
        "category",
        "has",
        "list",
        "filename",
        "in",
        "is",
        "after",
        "before",
        "older",
        "newer",
        "older_than",
        "newer_than",
        "deliveredto",
        "size",
        "larger",
        "smaller",
        "rfc822msgid",
    }
)
_TERM = re.compile(r'"[^"]*"|(-?)(\w+):("[^"]*"|\S+)')
_DATE = re.compile(r"\d{4}/\d{1,2}/\d{1,2}|\d{1,2}/\d{1,2}/\d{4}|\d{9,11}")  # a date, or epoch seconds
_AGE = re.compile(r"\d+[dmy]")


def gmail_query(q: str) -> str | None:
    """What in a `q` Gmail does not document, or None."""
    for match in _TERM.finditer(q):
        key, value = match.group(2), match.group(3)
        if key is None:
            continue
        if key.lower() not in GMAIL_OPERATORS:
            return f"{key}: is not a Gmail search operator"
        if key.lower() in ("after", "before", "older", "newer") and not _DATE.fullmatch(value):
            return f"{key}:{value} is not a date Gmail reads (YYYY/MM/DD or epoch seconds)"
        if key.lower() in ("older_than", "newer_than") and not _AGE.fullmatch(value):
            return f"{key}:{value} is not an age Gmail reads (d, m or y)"
    return None


def rfc3339(value: str) -> str | None:
    pattern = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)"
    return None if re.fullmatch(pattern, value) else f"{value!r} is not an RFC 3339 time with an offset"


_HEADER = Fields({"name": str, "value": str}, frozenset({"name", "value"}))
_BODY = Fields({"size": int, "data": str, "attachmentId": str})
PART = Fields(
    {"partId": str, "mimeType": str, "filename": str, "headers": Many(_HEADER), "body": _BODY, "parts": object}
)
PART.fields["parts"] = Many(PART)  # a MIME tree: parts hold parts
MESSAGE = Fields(
    {
        "id": str,
        "threadId": str,
        "labelIds": Many(str),
        "snippet": str,
        "historyId": str,
        "internalDate": str,  # epoch milliseconds, as a string (int64 in discovery)
        "payload": PART,
        "sizeEstimate": int,
        "raw": str,
    },
    frozenset({"id"}),
)
_EVENT_TIME = Fields({"date": str, "dateTime": str, "timeZone": str})
_ATTENDEE = Fields({"email": str, "displayName": str, "responseStatus": str, "optional": bool}, frozenset({"email"}))
EVENT = Fields(
    {
        "kind": Choice.of("calendar#event"),
        "id": str,
        "status": Choice.of("confirmed", "tentative", "cancelled"),
        "htmlLink": str,
        "summary": str,
        "description": str,
        "location": str,
        "start": _EVENT_TIME,
        "end": _EVENT_TIME,
        "attendees": Many(_ATTENDEE),
    }
)
_NEW_EVENT = Fields(
    {k: v for k, v in EVENT.fields.items() if k not in ("kind", "id", "status", "htmlLink")},
    frozenset({"start", "end"}),
)
_NAME = Fields({"displayName": str, "givenName": str, "familyName": str})
_VALUE = Fields({"value": str, "type": str})
PERSON = Fields(
    {
        "resourceName": str,
        "etag": str,
        "names": Many(_NAME),
        "emailAddresses": Many(_VALUE),
        "phoneNumbers": Many(_VALUE),
    }
)
_NEW_PERSON = Fields({k: PERSON.fields[k] for k in ("names", "emailAddresses", "phoneNumbers")})
# The person fields a `personFields` mask may name that the adapter could ask for.
PERSON_FIELDS = frozenset(
    {
        "addresses",
        "biographies",
        "birthdays",
        "emailAddresses",
        "metadata",
        "names",
        "nicknames",
        "organizations",
        "phoneNumbers",
        "photos",
        "relations",
        "urls",
    }
)
_PERSON_FIELDS = Param(str, choices=PERSON_FIELDS, listed=True, required=True)
_STANDARD = {"prettyPrint": Param(bool), "fields": Param(str), "alt": Param(str, choices=frozenset({"json"}))}

_TOKEN_FORM = {
    "grant_type": Param(str, choices=frozenset({"authorization_code", "refresh_token"}), required=True),
    "code": Param(str),
    "redirect_uri": Param(str),
    "refresh_token": Param(str),
    "client_id": Param(str, required=True),
    "client_secret": Param(str, required=True),
}

_GOOGLE_ERROR = Fields(
    {
        "error": Fields(
            {
                "code": int,
                "message": str,
                "status": str,
                "errors": Many(Fields({"domain": str, "reason": str, "message": str, "location": str})),
            },
            frozenset({"code", "message"}),
        )
    },
    frozenset({"error"}),
)
_OAUTH_ERROR = Fields({"error": str, "error_description": str}, frozenset({"error"}))

GOOGLE = Spec(
    vendor="Google",
    sources=(
        "https://gmail.googleapis.com/$discovery/rest?version=v1",
        "https://www.googleapis.com/discovery/v1/apis/calendar/v3/rest",
        "https://people.googleapis.com/$discovery/rest?version=v1",
        "https://support.google.com/mail/answer/7190",
        "https://developers.google.com/workspace/gmail/api/guides/handle-errors",
        "https://developers.google.com/workspace/calendar/api/guides/errors",
        "https://developers.google.com/identity/protocols/oauth2/web-server",
    ),
    read_on="2026-12-02",
    endpoints=(
        Endpoint(
            "gmail.users.messages.list",
            "GET",
            GMAIL,
            "/gmail/v1/users/{userId}/messages",
            query={
                "q": Param(str, reads=gmail_query),
                "maxResults": Param(int, low=1, high=MESSAGES_LIMIT_MAX),
                "pageToken": Param(str),
                "labelIds": Param(str),
                "includeSpamTrash": Param(bool),
                **_STANDARD,
            },
            answers={
                200: Fields(
                    {
                        "messages": Many(Fields({"id": str, "threadId": str}, frozenset({"id", "threadId"}))),
                        "nextPageToken": str,
                        "resultSizeEstimate": int,
                    }
                )
            },
            scopes=("https://www.googleapis.com/auth/gmail.readonly",),
        ),
        Endpoint(
            "gmail.users.messages.get",
            "GET",
            GMAIL,
            "/gmail/v1/users/{userId}/messages/{id}",
            query={
                "format": Param(str, choices=frozenset({"minimal", "full", "raw", "metadata"})),
                "metadataHeaders": Param(str),
                **_STANDARD,
            },
            answers={200: MESSAGE},
            scopes=("https://www.googleapis.com/auth/gmail.readonly",),
        ),
        Endpoint(
            "gmail.users.messages.send",
            "POST",
            GMAIL,
            "/gmail/v1/users/{userId}/messages/send",
            body=Fields({"raw": str, "threadId": str}, frozenset({"raw"})),
            answers={200: MESSAGE},
            scopes=("https://www.googleapis.com/auth/gmail.send",),
        ),
        Endpoint(
            "calendar.events.list",
            "GET",
            CALENDAR,
            "/calendar/v3/calendars/{calendarId}/events",
            query={
                "timeMin": Param(str, reads=rfc3339),
                "timeMax": Param(str, reads=rfc3339),
                "singleEvents": Param(bool),
                "orderBy": Param(str, choices=frozenset({"startTime", "updated"})),
                "maxResults": Param(int, low=1, high=EVENTS_LIMIT_MAX),
                "timeZone": Param(str),
                "q": Param(str),
                "pageToken": Param(str),
                "showDeleted": Param(bool),
                **_STANDARD,
            },
            answers={
                200: Fields(
                    {
                        "kind": Choice.of("calendar#events"),
                        "items": Many(EVENT),
                        "nextPageToken": str,
                        "summary": str,
                        "timeZone": str,
                    }
                )
            },
            scopes=("https://www.googleapis.com/auth/calendar.events",),
        ),
        Endpoint(
            "calendar.events.insert",
            "POST",
            CALENDAR,
            "/calendar/v3/calendars/{calendarId}/events",
            query={"sendUpdates": Param(str, choices=frozenset({"all", "externalOnly", "none"})), **_STANDARD},
            body=_NEW_EVENT,
            answers={200: EVENT},
            scopes=("https://www.googleapis.com/auth/calendar.events",),
        ),
        Endpoint(
            "people.people.connections.list",
            "GET",
            PEOPLE,
            "/v1/people/me/connections",
            query={
                "personFields": _PERSON_FIELDS,
                "pageSize": Param(int, low=1, high=CONNECTIONS_LIMIT_MAX),
                "pageToken": Param(str),
                "sortOrder": Param(
                    str,
                    choices=frozenset(
                        {
                            "LAST_MODIFIED_ASCENDING",
                            "LAST_MODIFIED_DESCENDING",
                            "FIRST_NAME_ASCENDING",
                            "LAST_NAME_ASCENDING",
                        }
                    ),
                ),
                **_STANDARD,
            },
            answers={
                200: Fields({"connections": Many(PERSON), "nextPageToken": str, "totalPeople": int, "totalItems": int})
            },
            scopes=("https://www.googleapis.com/auth/contacts",),
        ),
        Endpoint(
            "people.people.createContact",
            "POST",
            PEOPLE,
            "/v1/people:createContact",
            query={"personFields": _PERSON_FIELDS, **_STANDARD},
            body=_NEW_PERSON,
            answers={200: PERSON},
            scopes=("https://www.googleapis.com/auth/contacts",),
        ),
        Endpoint(
            "oauth2.token",
            "POST",
            "oauth2.googleapis.com",
            "/token",
            form=_TOKEN_FORM,
            answers={
                200: Fields(
                    {
                        "access_token": str,
                        "token_type": Choice.of("Bearer"),
                        "expires_in": int,
                        "scope": str,
                        "refresh_token": str,
                        "id_token": str,
                        "refresh_token_expires_in": int,
                    },
                    frozenset({"access_token", "token_type", "expires_in"}),
                )
            },
        ),
        Endpoint(
            "oauth2.revoke",
            "POST",
            "oauth2.googleapis.com",
            "/revoke",
            form={"token": Param(str, required=True)},
            answers={200: Maybe(Fields({}))},
        ),
    ),
    error_statuses=frozenset({400, 401, 403, 404, 409, 410, 412, 429, 500, 503}),
    error_body=OneOf((_GOOGLE_ERROR, _OAUTH_ERROR)),
)
