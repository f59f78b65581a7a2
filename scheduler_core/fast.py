"""Array-speed helpers for the engine's hot paths (issue #14).

Each helper here has a plain-Python reference elsewhere in the core and a differential
test that the two agree exactly; nothing here decides anything on its own.
"""

from __future__ import annotations

import random

import numpy as np

BULK_MIN = 32
"""Below this many draws the plain loop is as fast as the array round trip."""


def skip_randrange(rng: random.Random, n: int, count: int) -> None:
    """Advance ``rng`` exactly as ``count`` calls of ``rng.randrange(n)`` would.

    A replayed verdict must still make the random draw its attempt would have made, so a
    run stays the same whether twins are replayed one by one or as a class. CPython's
    ``randrange(n)`` takes ``k = n.bit_length()`` bits of one 32-bit Mersenne Twister
    word (the word shifted right by ``32 - k``) and draws again while the value is
    ``>= n``; ``getrandbits(32 * m)`` returns the next ``m`` words, least significant
    first. So the words are fetched in bulk and the rejections counted with numpy: each
    round fetches exactly as many words as draws are still owed, so it never takes a
    word too many. A test checks the generator's state against the plain loop."""
    if count <= 0:
        return
    k = n.bit_length()
    if k > 32 or n <= 0:
        for _ in range(count):
            rng.randrange(n)
        return
    if count < BULK_MIN:
        # randrange(n) is getrandbits(k) until below n (Random._randbelow_with_getrandbits);
        # calling getrandbits directly skips two Python frames per draw
        bits = rng.getrandbits
        for _ in range(count):
            while bits(k) >= n:
                pass
        return
    shift = np.uint32(32 - k)
    limit = np.uint32(n)
    owed = count
    while owed:
        words = np.frombuffer(rng.getrandbits(32 * owed).to_bytes(4 * owed, "little"), dtype="<u4")
        owed -= int(np.count_nonzero((words >> shift) < limit))
