"""Money is whole micro-rupiah (µRp) in an `int`, end to end: never a float.

1 IDR = 1,000,000 µRp. A price in rupiah per million tokens times a token count is
therefore exactly micro-rupiah, which is why this unit was chosen.
"""

from __future__ import annotations

MICROS_PER_RUPIAH = 1_000_000
# One posting moves at most Rp 1,000,000,000; BIGINT balances then cannot overflow in
# any plausible lifetime (9.2e18 µRp is over nine thousand such postings).
AMOUNT_MICROS_MAX = 10**15


def format_rupiah(amount_micros: int) -> str:
    """'Rp 4.999' (Indonesian grouping), floored so a balance never displays rounder."""
    rupiah = amount_micros // MICROS_PER_RUPIAH
    sign = "-" if rupiah < 0 else ""
    return f"{sign}Rp {abs(rupiah):,}".replace(",", ".")
