"""The composition roots: Settings -> adapters -> domains, one root per program.

`app.server` builds the serving process, `app.records` the database alone for the
command line's verbs, `app.evaluation` the product as a scenario run drives it. Each
root builds what it needs from the small shared builders beside it (`app.database`,
`app.model`, `app.knowledge`, `app.reminders`, `app.voice`, …) and none imports another
root's module, save evaluation, which runs the whole server. Nothing in the domains
imports this package; it is the only place that decides which adapter serves each port.
"""

import os

# Pipecat logs through loguru at DEBUG from the moment it is imported (through voice);
# the product's own logging is the standard library's. Unless asked otherwise, only
# Pipecat's warnings reach the console. Set here, before any root can import voice.
os.environ.setdefault("LOGURU_LEVEL", "WARNING")
