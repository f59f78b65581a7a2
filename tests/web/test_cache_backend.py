"""The embedded default's file cache: ``add`` is a lock, so it must be atomic."""

from __future__ import annotations

import multiprocessing
import time
from pathlib import Path
from typing import Any

import pytest
from django.core.cache.backends.filebased import FileBasedCache

from experiments.cache_backends import AtomicAddFileCache

RACERS = 4
HAS_KEY = FileBasedCache.has_key


def _slow_has_key(self: FileBasedCache, key: Any, version: int | None = None) -> bool:
    """``has_key`` that lingers after looking, the window in which a rival could write."""
    found = HAS_KEY(self, key, version)
    time.sleep(0.05)
    return found


def _race(backend: type[FileBasedCache], directory: str, start: Any, wins: Any) -> None:
    cache = backend(directory, {})
    start.wait()
    if cache.add("build-lock", 1, 60):
        wins.put(1)


def _winners(backend: type[FileBasedCache], directory: Path, monkeypatch: Any) -> int:
    monkeypatch.setattr(FileBasedCache, "has_key", _slow_has_key)
    context = multiprocessing.get_context("fork")  # the children keep the patched class
    start, wins = context.Barrier(RACERS), context.Queue()
    racers = [
        context.Process(target=_race, args=(backend, str(directory), start, wins))
        for _ in range(RACERS)
    ]
    for racer in racers:
        racer.start()
    for racer in racers:
        racer.join(30)
        assert racer.exitcode == 0
    count = 0
    while not wins.empty():
        count += wins.get()
    return count


def test_only_one_of_several_processes_takes_the_same_key(tmp_path, monkeypatch):
    assert _winners(AtomicAddFileCache, tmp_path, monkeypatch) == 1


def test_djangos_own_file_cache_lets_several_take_it(tmp_path, monkeypatch):
    """Why the subclass exists: the same race hands Django's ``add`` to more than one."""
    assert _winners(FileBasedCache, tmp_path, monkeypatch) > 1


def test_add_keeps_its_meaning(tmp_path):
    cache = AtomicAddFileCache(str(tmp_path), {})

    assert cache.add("k", "first", 60) is True
    assert cache.add("k", "second", 60) is False
    assert cache.get("k") == "first"
    cache.delete("k")
    assert cache.add("k", "third", 60) is True
    assert cache.get("k") == "third"


def test_an_expired_key_can_be_taken_again(tmp_path):
    cache = AtomicAddFileCache(str(tmp_path), {})

    assert cache.add("k", 1, 0.01) is True
    time.sleep(0.05)
    assert cache.add("k", 2, 60) is True
    assert cache.get("k") == 2


def test_clear_leaves_a_working_cache(tmp_path):
    cache = AtomicAddFileCache(str(tmp_path), {})
    cache.add("k", 1, 60)
    cache.clear()

    assert cache.add("k", 2, 60) is True


@pytest.mark.parametrize("timeout", [None, 30])
def test_the_lock_file_is_not_counted_as_an_entry(tmp_path, timeout):
    cache = AtomicAddFileCache(str(tmp_path), {"OPTIONS": {"MAX_ENTRIES": 2}})
    for number in range(5):
        cache.add(f"k{number}", number, timeout)

    assert len(cache._list_cache_files()) <= 3
