"""``python -m chatledger``: the same as the ``chatledger`` command."""

from chatledger._cli import main

main()
