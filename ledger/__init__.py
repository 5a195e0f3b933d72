"""The wallet: a double-entry ledger in micro-rupiah, prices, the guard and receipts."""
