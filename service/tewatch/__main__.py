"""`python -m tewatch`: the same as the `tewatch` command."""

from tewatch.cli import main

main()
