"""Run as a script: close a SQLite store while four threads use it, five times.

Closing a connection another thread is using crashes CPython's sqlite3, so
the test runs this in a subprocess and checks that it exits cleanly.
"""

from __future__ import annotations

import sys
import threading
import time

from chatledger import BackendError, RetryPolicy, Store, open_store, user


def work(store: Store, stop: threading.Event) -> None:
    while not stop.is_set():
        try:
            store.session("s").append([user("x" * 100) for _ in range(200)])
            store.session("s").read(last=50)
        except BackendError:
            return  # "the store is closed": what a late caller must see


def main(directory: str) -> None:
    for _ in range(5):
        store = open_store(f"sqlite:///{directory}/busy.db", retry=RetryPolicy.none())
        stop = threading.Event()
        workers = [threading.Thread(target=work, args=(store, stop)) for _ in range(4)]
        for worker in workers:
            worker.start()
        time.sleep(0.2)
        store.close()
        stop.set()
        for worker in workers:
            worker.join()
    print("closed cleanly")


if __name__ == "__main__":
    main(sys.argv[1])
