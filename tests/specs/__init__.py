"""The vendors' published API references, restated as data the vendor fakes are held to
(see checker.py)."""
