"""`python -m cli`: the same command as `avagenc`, for a checkout that is not installed."""

from cli import main

main()
