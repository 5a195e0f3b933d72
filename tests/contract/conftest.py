"""The storage ports' implementations, side by side: every contract test in this folder
that takes `stores`, `ledger` or `prices` runs once on PostgreSQL and once in memory."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from chat import People, PeopleStore, Runs, RunStore, Threads, ThreadStore
from chat.memory import MemoryEvents, MemoryPeople, MemoryRuns, MemoryThreads
from ledger import Ledger, PostgresLedger, PriceBook
from ledger.memory import MemoryLedger, MemoryPrices

BACKENDS = ["postgres", "memory"]


@dataclass
class Stores:
    people: PeopleStore
    threads: ThreadStore
    runs: RunStore


@pytest.fixture(params=BACKENDS)
def stores(request: pytest.FixtureRequest) -> Stores:
    if request.param == "postgres":
        pool = request.getfixturevalue("pool")
        return Stores(People(pool, default_time_zone="UTC"), Threads(pool), Runs(pool))
    events = MemoryEvents()
    return Stores(MemoryPeople(default_time_zone="UTC"), MemoryThreads(events), MemoryRuns(events))


@pytest.fixture(params=BACKENDS)
def ledger(request: pytest.FixtureRequest) -> Ledger:
    return PostgresLedger(request.getfixturevalue("pool")) if request.param == "postgres" else MemoryLedger()


@pytest.fixture(params=BACKENDS)
def prices(request: pytest.FixtureRequest) -> PriceBook | MemoryPrices:
    return PriceBook(request.getfixturevalue("pool")) if request.param == "postgres" else MemoryPrices.flat()
