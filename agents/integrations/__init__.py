"""What the specialists' integrations share: the hints a vendor error becomes
(`hints`), reading a model's arguments (`arguments`), outside content kept as data
(`outside`), which account, sandbox or live, serves a person's run (`accounts`), the
gate risky actions pass (`confirmations`), linking (`linking`: signed OAuth state,
sealed refresh tokens; `oauth`: provider token calls; `connections`: the linking API's
service) and the bearer-token client every live OAuth adapter uses (`vendor`)."""
