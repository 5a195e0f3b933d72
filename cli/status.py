"""The terminal client's status line: the wallet's balance and whether live events are flowing
(docs/http.md#terminal-client).

It exists so a person who chats in a terminal sees what the web app shows beside the thread —
what is left in the wallet — without asking. The balance comes from `GET /v1/wallet` once at
the start, then from each `wallet.changed` live event (a turn's charges, a top-up); the client
reads the wallet again only when it cannot trust the stream (after a turn while the stream is
down, and when it comes back), so it never polls.
"""

from __future__ import annotations

from collections.abc import Callable

MICROS_PER_RUPIAH = 1_000_000
# The web app shows rupiah to two decimals at most (web/static/api.js `rupiah`).
MICROS_PER_HUNDREDTH = MICROS_PER_RUPIAH // 100


def rupiah(amount_micros: int) -> str:
    """'Rp 4.999,5' as the web app writes a balance: Indonesian grouping, at most two decimals
    (rounded half away from zero, as the browser's toLocaleString does), none when whole."""
    sign = "-" if amount_micros < 0 else ""
    hundredths = (abs(amount_micros) + MICROS_PER_HUNDREDTH // 2) // MICROS_PER_HUNDREDTH
    whole, fraction = divmod(hundredths, 100)
    decimals = f",{fraction:02d}".rstrip("0") if fraction else ""
    return f"Rp {sign}{whole:,}".replace(",", ".") + decimals


class Status:
    """What the status line shows; `changed` is called when any of it changes (the prompt
    redraws its bottom line then, and only then)."""

    def __init__(self) -> None:
        self.balance_micros: int | None = None
        # None until the live events first open or fail; then whether they are open now.
        self.live: bool | None = None
        self.on_call = False
        self.changed: Callable[[], None] = lambda: None

    def balance(self, amount_micros: int) -> None:
        if amount_micros != self.balance_micros:
            self.balance_micros = amount_micros
            self.changed()

    def streaming(self, live: bool | None) -> None:
        """True: events flow; False: the stream is lost and being opened again; None: this
        server has none for us (the line says nothing of them)."""
        if live != self.live:
            self.live = live
            self.changed()

    def calling(self, on_call: bool) -> None:
        if on_call != self.on_call:
            self.on_call = on_call
            self.changed()

    def line(self) -> str:
        """' wallet Rp 4.999 · live' — what the bottom toolbar says."""
        parts = [f"wallet {rupiah(self.balance_micros)}" if self.balance_micros is not None else "wallet …"]
        if self.live is False:
            parts.append("offline — reconnecting")
        elif self.live:
            parts.append("live")
        if self.on_call:
            parts.append("on a call — /hangup ends it")
        return " " + " · ".join(parts)
