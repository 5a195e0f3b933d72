"""The memory of device tokens on its own (chat.device_tokens): what it forgets, when it is
not trusted, its bounds, and a lookup that raced a revocation."""

from __future__ import annotations

from chat import DeviceCaller, KnownDeviceTokens


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def caller(n: int) -> DeviceCaller:
    return DeviceCaller(person_id=f"usr_{n}", device_id=f"dev_{n}")


def test_remembered_until_its_age_and_never_while_not_listening() -> None:
    clock, listening = Clock(), [True]
    known = KnownDeviceTokens(listening=lambda: listening[0], age_max_s=60, clock=clock)
    known.put("d1", caller(1), epoch=known.epoch)
    assert known.get("d1") == caller(1)
    listening[0] = False
    assert known.get("d1") is None, "not trusted while a revocation could go unheard"
    known.put("d2", caller(2), epoch=known.epoch)
    assert len(known) == 1, "nor filled"
    listening[0] = True
    clock.now += 61
    assert known.get("d1") is None and len(known) == 0


def test_a_lookup_that_raced_a_revocation_is_not_remembered() -> None:
    known = KnownDeviceTokens(listening=lambda: True)
    epoch = known.epoch  # a lookup begins...
    known.forget("dev_1")  # ...a revocation is heard while it runs...
    known.put("d1", caller(1), epoch=epoch)  # ...and what it found is dropped
    assert known.get("d1") is None


def test_forget_one_device_or_everything_and_the_size_bound() -> None:
    known = KnownDeviceTokens(listening=lambda: True, size_max=3)
    for n in range(5):
        known.put(f"d{n}", caller(n), epoch=known.epoch)
    assert len(known) == 3 and known.get("d0") is None and known.get("d4") == caller(4)
    known.forget("dev_3")
    assert known.get("d3") is None and known.get("d2") == caller(2)
    known.forget(None)
    assert len(known) == 0
