# The two commands: `make run` serves the product, `make test` proves it.
# Both install what they need first (`make install`), so a fresh machine needs only these.
.PHONY: install run test check fmt bench migrate eval

install:
	./scripts/install

run: install
	.venv/bin/avagenc migrate
	.venv/bin/avagenc serve

test: install
	./scripts/test

check: install
	./scripts/check

fmt: install
	.venv/bin/ruff format .
	.venv/bin/ruff check --fix .

migrate: install
	.venv/bin/avagenc migrate

bench: install
	# 24 people at the top level: the server then needs 2×24 statement + 24 lock connections
	# (+10), within the embedded PostgreSQL's 100; 32 people need a server allowing 106.
	.venv/bin/python -m bench.turn_overhead --levels 1,24
	.venv/bin/python -m bench.reminder_lateness
	.venv/bin/python -m bench.knowledge_search
	# Voice on the simulated cloud path, a short run (the full one: --turns 100).
	.venv/bin/python -m bench.cloud_voice --turns 3
	# The phone door beside the speaker door, at a short setting (bench/voice_phone.py).
	.venv/bin/python -m bench.voice_phone --utterances 6 --per-call 2
	# Scale (issue 24) at short settings: a small year of data, and two cold starts each way.
	.venv/bin/python -m bench.year_of_data --quick
	.venv/bin/python -m bench.cold_start --runs 2
	# What tracing costs the voice pipeline's taps, per frame and per live call (issue 23).
	.venv/bin/python -m bench.trace_cost
	# A call's memory, calls in sequence for a leak, rows per spoken turn (the full run: no --quick).
	.venv/bin/python -m bench.call_memory --quick

# Conversation scenarios (docs/eval.md) on the configured model: offline, or Gemini with GEMINI_API_KEY.
eval: install
	.venv/bin/avagenc eval
