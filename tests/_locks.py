"""A build lock held by another thread: ``flock`` contends between two open files of one process as between two
processes, so a thread stands in for a second run (the lock is re-entrant only within the thread holding it)."""
import contextlib
import threading
from pathlib import Path

import pyterrier_garen._atomic as atomic


@contextlib.contextmanager
def held_elsewhere(path):
    """The build lock of ``path`` held by another thread for the block."""
    entered, release = threading.Event(), threading.Event()

    def hold():
        with atomic._lock(Path(path)):
            entered.set()
            release.wait(60)
    holder = threading.Thread(target=hold, daemon=True)
    holder.start()
    assert entered.wait(10), 'the other thread did not get the lock'
    try:
        yield
    finally:
        release.set()
        holder.join(10)
