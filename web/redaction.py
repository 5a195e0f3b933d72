"""Secrets never reach the access log (docs/http.md#authentication).

Some clients can only put a credential in a URL: browsers' `EventSource` (`?access_token=`
or, better, a single-use `?ticket=`), speakers that cannot set headers (`?token=`). The
server's access log writes each request's path with its query string, so this filter
replaces those parameters' values with `REDACTED` before a line is formatted, whatever
the handler or the format.
"""

from __future__ import annotations

import logging
import re

# Query parameters whose values are credentials (any case; `%5F` for `_` too).
SECRET_PARAMS = ("token", "access_token", "ticket")
_SECRET_VALUE = re.compile(
    r"(?i)([?&](?:" + "|".join(p.replace("_", "(?:_|%5f)") for p in SECRET_PARAMS) + r")=)[^&#\s]*"
)
REDACTED = "REDACTED"


def redact(text: str) -> str:
    """`text` with every credential parameter's value replaced."""
    return _SECRET_VALUE.sub(lambda m: m.group(1) + REDACTED, text)


class RedactCredentials(logging.Filter):
    """Rewrites a log record's message and arguments so no credential parameter survives."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.msg, str):
            record.msg = redact(record.msg)
        if isinstance(record.args, tuple):
            record.args = tuple(redact(a) if isinstance(a, str) else a for a in record.args)
        return True


def redact_access_log(logger_names: tuple[str, ...] = ("uvicorn.access", "uvicorn.error")) -> None:
    """Install the filter on the server's loggers, once however often the app is built."""
    for name in logger_names:
        logger = logging.getLogger(name)
        if not any(isinstance(f, RedactCredentials) for f in logger.filters):
            logger.addFilter(RedactCredentials())
