"""bench.load's own arithmetic: the quantile it reports, the pool levels it reads from
`/metrics`, and the CPU it charges to the server's event loop thread and to its others
(issue 24 item 3: what limits one instance under text load and calls)."""

from __future__ import annotations

import math

from bench.load import pool_levels, quantile, thread_ticks
from telemetry.metrics import Gauge


def test_quantile_is_the_nearest_rank_below_and_nan_without_values() -> None:
    values = [float(n) for n in range(100, 0, -1)]  # 1..100, given unsorted
    assert quantile(values, 0.5) == 51.0
    assert quantile(values, 0.99) == 100.0
    assert quantile([0.3], 0.99) == 0.3
    assert math.isnan(quantile([], 0.5))


def test_pool_levels_read_what_the_server_exposes() -> None:
    gauge = Gauge("avagenc_db_connections", "Database connections by pool and state", ("pool", "state"))
    for pool, in_use, idle, size in (("statements", 3, 2, 10), ("turns", 8, 0, 8)):
        gauge.set(in_use, pool=pool, state="in_use")
        gauge.set(idle, pool=pool, state="idle")
        gauge.set(size, pool=pool, state="max")
    page = "\n".join(["# HELP avagenc_sse_clients x", "avagenc_sse_clients 200", *gauge.lines(), ""])
    assert pool_levels(page) == {"statements": (3.0, 10.0), "turns": (8.0, 8.0)}
    assert pool_levels("") == {}


def test_thread_ticks_charge_the_main_thread_to_the_event_loop_and_group_the_others_by_name() -> None:
    def stat(tid: int, name: str, utime: int, stime: int) -> tuple[int, str]:
        # /proc/PID/task/TID/stat: pid (comm) state, then fields; utime and stime are the 14th and 15th.
        fields = ["S", *["0"] * 10, str(utime), str(stime), *["0"] * 30]
        return tid, f"{tid} ({name}) {' '.join(fields)}"

    stats = [stat(40, "python", 500, 20), stat(41, "python", 7, 3), stat(42, "python", 1, 0), stat(43, "a (b) c", 2, 2)]
    assert thread_ticks(stats, main=40) == {"event loop": 520, "python": 11, "a (b) c": 4}
