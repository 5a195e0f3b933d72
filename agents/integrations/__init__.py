"""What the specialists' integrations share: the hints a vendor error becomes, outside
content kept as data, which account (sandbox or live) serves a person's run, and linking
(signed OAuth state, encrypted refresh tokens, provider token calls)."""
