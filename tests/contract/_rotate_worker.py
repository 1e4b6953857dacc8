"""A rotation that stops for good mid-way: run as ``python -m tests.contract._rotate_worker
URL NAMESPACE CALLS`` with CHATLEDGER_KEYRING set. After CALLS re-seal calls it says
"paused" and waits for the SIGKILL the test sends."""

from __future__ import annotations

import os
import sys
import time

from chatledger import Keyring, open_store
from chatledger._sync import rotation


def main(url: str, namespace: str, calls: int) -> None:
    rotation.PAGE = 2  # many small pages: many places to die between
    keyring = Keyring.parse(os.environ["CHATLEDGER_KEYRING"])
    with open_store(url, namespace=namespace, encryption=keyring) as store:
        reseal, made = store._backend.reseal, []

        def counted(session: str, entries: list[tuple[int, bytes, bytes]]) -> int:
            if len(made) == calls:
                print("paused", flush=True)
                while True:  # until killed
                    time.sleep(60)
            made.append(session)
            return reseal(session, entries)

        store._backend.reseal = counted  # type: ignore[method-assign]
        store.rotate_key()
    print("finished", flush=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]))
