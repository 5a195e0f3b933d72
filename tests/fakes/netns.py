"""A network namespace joined to this one by a veth pair, for WebRTC tests.

ICE never uses loopback (aioice skips 127.0.0.1, Chromium skips lo entirely), so a
machine with nothing but `lo` — a CI container without network — finds no candidates.
The veth pair gives each side a real interface: `host_address` in this namespace, where
the server runs, and `peer_address` inside `namespace`, where a browser can run with
`ip netns exec`. It needs root, which CI has; without it the test fails and says why.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest


@dataclass(frozen=True, slots=True)
class VethPair:
    namespace: str
    host_address: str
    peer_address: str


def _ip(*args: str) -> None:
    result = subprocess.run(["ip", *args], capture_output=True, text=True, timeout=10, check=False)
    if result.returncode != 0:
        raise RuntimeError(f"ip {' '.join(args)}: {result.stderr.strip()}")


@contextlib.contextmanager
def veth_pair() -> Iterator[VethPair]:
    """Create the namespace and the pair; both are removed afterwards, even on failure."""
    if shutil.which("ip") is None:
        pytest.fail("WebRTC tests need iproute2's `ip` to make a network namespace (apt-get install iproute2).")
    tag = _free_tag()
    pair = VethPair(f"avagenc-test-{tag}", f"10.200.{tag}.1", f"10.200.{tag}.2")
    host_if, peer_if = f"avh{tag}", f"avp{tag}"
    try:
        _ip("netns", "add", pair.namespace)
        _ip("link", "add", host_if, "type", "veth", "peer", "name", peer_if)
        _ip("link", "set", peer_if, "netns", pair.namespace)
        _ip("addr", "add", f"{pair.host_address}/24", "dev", host_if)
        _ip("link", "set", host_if, "up")
        _ip("-n", pair.namespace, "addr", "add", f"{pair.peer_address}/24", "dev", peer_if)
        _ip("-n", pair.namespace, "link", "set", peer_if, "up")
        _ip("-n", pair.namespace, "link", "set", "lo", "up")
    except RuntimeError as exc:
        _remove(pair.namespace, host_if)
        pytest.fail(
            f"Could not make a network namespace with a veth pair ({exc}). WebRTC tests need root "
            "(CI runs as root) because ICE finds no candidates on loopback alone."
        )
    try:
        yield pair
    finally:
        _remove(pair.namespace, host_if)


def _free_tag() -> int:
    """A number no other test run on this machine is using (names and subnet both carry
    it); one left behind by a killed run is skipped, not deleted, as it may be live."""
    for offset in range(200):
        tag = (os.getpid() + offset) % 200 + 1
        if not Path(f"/run/netns/avagenc-test-{tag}").exists() and not Path(f"/sys/class/net/avh{tag}").exists():
            return tag
    pytest.fail("No free network namespace name: remove stale ones with `ip netns del avagenc-test-N`.")


def _remove(namespace: str, host_if: str) -> None:
    # Deleting the namespace deletes the veth end inside it, and with it the pair.
    for args in (("netns", "del", namespace), ("link", "del", host_if)):
        with contextlib.suppress(RuntimeError):
            _ip(*args)
