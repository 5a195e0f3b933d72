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

# Every benchmark in bench/, each at a short setting (about 15 minutes in all on 2 cores); each
# prints its figures and writes bench/results/<name>.md. The full settings, and when each
# figure in BENCHMARKS.md was taken, are in the table at the top of BENCHMARKS.md
# (tests/unit/test_bench_listed.py keeps this list, that table and bench/ in step).
bench: install
	# 24 people at the top level: the server then needs 2×24 statement + 24 lock connections
	# (+10), within the embedded PostgreSQL's 100; 32 people need a server allowing 106.
	.venv/bin/python -m bench.turn_overhead --levels 1,24
	.venv/bin/python -m bench.guard_cost --levels 1,4 --requests 16 --rounds 2 --warmup 4 --history 20
	.venv/bin/python -m bench.ledger_throughput --quick
	.venv/bin/python -m bench.identity_cost 100
	.venv/bin/python -m bench.reminder_lateness
	.venv/bin/python -m bench.knowledge_search
	# Voice on the simulated cloud path, a short run (the full one: --turns 100 --speech-samples 30).
	.venv/bin/python -m bench.cloud_voice --turns 3 --speech-samples 3
	# The speaker door, then the phone door beside it, at short settings.
	.venv/bin/python -m bench.voice_latency --utterances 3 --calls 2 --per-call 1
	.venv/bin/python -m bench.voice_phone --utterances 6 --per-call 2
	# What is heard and how it sounds, on the first clips of each set only.
	.venv/bin/python -m bench.voice_intelligibility --limit 2
	.venv/bin/python -m bench.voice_narrowband --limit 2
	.venv/bin/python -m bench.voice_speculation --rounds 1
	# The turn's end: VAD stops against false cut-offs (issue 28 item 4), two utterances each.
	.venv/bin/python -m bench.turn_end --timings 0.2,0.1 --voices espeak --limit 1
	# Scale (issue 24) at short settings.
	.venv/bin/python -m bench.year_of_data --quick
	.venv/bin/python -m bench.thread_growth --rounds 3
	.venv/bin/python -m bench.load --people 10 --clients 20 --rate 5 --seconds 5 --calls 2 --count-statements
	.venv/bin/python -m bench.instances --instances 2 --people 8 --rate 4 --seconds 5
	.venv/bin/python -m bench.notify_ceiling --writers 4 --seconds 1 --rounds 1
	.venv/bin/python -m bench.cold_start --runs 2
	# The terminal client's start to its prompt, in a pseudo-terminal (issue 23).
	.venv/bin/python -m bench.terminal_start --runs 1
	# What tracing costs the voice pipeline's taps, per frame and per live call (issue 23).
	.venv/bin/python -m bench.trace_cost
	# A call's memory, calls in sequence for a leak, rows per spoken turn (the full run: no --quick).
	.venv/bin/python -m bench.call_memory --quick

# Conversation scenarios (docs/eval.md) on the configured model: offline, or Gemini with GEMINI_API_KEY.
eval: install
	.venv/bin/avagenc eval
