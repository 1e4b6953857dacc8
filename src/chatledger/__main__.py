"""``python -m chatledger``: the same as the ``chatledger`` command."""

from chatledger.cli import main

main()
