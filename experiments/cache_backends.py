"""The file cache ``make run`` uses when no Redis is configured.

Django's ``FileBasedCache.add`` is "has_key, then set": two processes can both see the
key missing and both be told they took it. We use ``add`` as a lock (one export build
per file, one build slot per user, one run-page precompute), so on the embedded default
two gunicorn processes could start the same build twice. Redis's ``SET NX`` has no such
gap; this closes it for the file cache with an exclusive lock around the check and the
write.
"""

from __future__ import annotations

import os
from typing import Any

from django.core.cache.backends.base import DEFAULT_TIMEOUT
from django.core.cache.backends.filebased import FileBasedCache
from django.core.files import locks

ADD_LOCK_NAME = "add.lock"


class AtomicAddFileCache(FileBasedCache):
    """``FileBasedCache`` whose ``add`` is atomic across processes.

    One lock file for every ``add``: adds are rare (a lock per build), so serialising them
    costs nothing measurable, and a single file leaves no per-key lock files behind.
    ``get``/``set``/``delete`` are unchanged (``set`` already replaces by rename).
    """

    def __init__(self, dir: str, params: dict[str, Any]) -> None:
        super().__init__(dir, params)
        self._add_lock = os.path.join(os.path.abspath(dir), ADD_LOCK_NAME)

    def add(
        self,
        key: Any,
        value: Any,
        timeout: Any = DEFAULT_TIMEOUT,
        version: int | None = None,
    ) -> bool:
        os.makedirs(os.path.dirname(self._add_lock), exist_ok=True)  # it may be deleted
        with open(self._add_lock, "ab") as lock:
            locks.lock(lock, locks.LOCK_EX)
            try:
                if self.has_key(key, version):
                    return False
                self.set(key, value, timeout, version)
                return True
            finally:
                locks.unlock(lock)
