"""Go's ``math/rand`` seeded source, in Python: the FGD simulator's random stream.

Why: the FGD paper's simulator (hkust-adsl/kubernetes-scheduler-simulator, Go) seeds
the global ``math/rand`` source with the run's seed and then shuffles the pods, samples
them to the target load and draws the node-name prefixes that break score ties from it
(see ``simulator_stream`` in ``placement_study`` and docs/placement-study.md). Seed 42 in
numpy and seed 42 in Go are different streams; with this module a study draws exactly
the numbers the simulator drew, so a seed's run is the simulator's run, not one like it.

What is reproduced, as Go 1.x defines it for ``rand.New(rand.NewSource(seed))`` and for
the global source after ``rand.Seed(seed)`` (the stream of a seeded source is frozen by
Go's compatibility promise and checked by ``math/rand``'s ``regress_test.go``):

- the source: an additive lagged Fibonacci generator of 607 words, tap 273, its state
  seeded by a Park-Miller (48271) sequence XORed with a fixed "cooked" table;
- ``Int63``, ``Uint32``, ``Int31``, ``Int``, ``Int31n`` (modulo with rejection, the
  algorithm ``Intn`` uses below 2**31), ``Int63n``, ``Intn``, ``Float64``, ``Perm``
  (inside-out, one ``Intn(i + 1)`` per element) and ``Shuffle`` (Fisher-Yates from the
  end, drawing with the *unexported* ``int31n``, Lemire's multiply-shift with
  rejection: not ``Intn``, so a shuffle and a permutation of one size differ).

The cooked table is not copied: ``cooked_table`` recomputes it the way Go's
``gen_cooked.go`` defines it (the generator seeded with 1 by a 20/10-bit variant of the
seeding, then advanced 7.8e12 steps) by jumping ahead with polynomial arithmetic modulo
the recurrence's characteristic polynomial x^607 - x^334 - 1 over Z/2^64, in about half
a second, once per process. The algorithm is Go's, (c) 2009 The Go Authors, used under
Go's BSD-style licence (https://go.dev/LICENSE); this is an independent Python
implementation of it.
"""

from __future__ import annotations

from collections.abc import MutableSequence
from functools import lru_cache
from typing import TypeVar

T = TypeVar("T")

LEN = 607
TAP = 273
MASK64 = (1 << 64) - 1
MASK63 = (1 << 63) - 1
INT32_MAX = (1 << 31) - 1
COOKED_STEPS = 7_800_000_000_000
"""``gen_cooked.go``: the table is the generator's state after 7.8e12 steps."""


def _seedrand(x: int) -> int:
    """x' = 48271 x mod (2^31 - 1), Schrage's method as Go writes it (Go's int32 ``/``
    and ``%`` truncate; x is never negative here, so Python's floor division agrees)."""
    hi, lo = divmod(x, 44488)
    x = 48271 * lo - 3399 * hi
    return x + INT32_MAX if x < 0 else x


def _reduce(poly: list[int]) -> list[int]:
    """``poly`` modulo x^607 - x^334 - 1, coefficients mod 2^64: x^d = x^(d-273) + x^(d-607)."""
    a = poly + [0] * max(0, LEN - len(poly))
    for d in range(len(a) - 1, LEN - 1, -1):
        c = a[d]
        if c:
            a[d - TAP] = (a[d - TAP] + c) & MASK64
            a[d - LEN] = (a[d - LEN] + c) & MASK64
    return a[:LEN]


_SLOT = 138
"""Bits per coefficient when a polynomial is packed into one integer (Kronecker
substitution): a product coefficient is a sum of at most 607 products below 2^128."""


def _square(poly: list[int]) -> list[int]:
    packed = 0
    for i, c in enumerate(poly):
        packed |= c << (_SLOT * i)
    product = packed * packed
    slot = (1 << _SLOT) - 1
    out = []
    while product:
        out.append(product & slot & MASK64)
        product >>= _SLOT
    return out


def _x_power(n: int) -> list[int]:
    """x^n modulo the characteristic polynomial, by square-and-multiply."""
    result = [1]
    for bit in bin(n)[2:]:
        result = _reduce(_square(result))
        if bit == "1":
            result = _reduce([0, *result])
    return _reduce(result)


@lru_cache(maxsize=1)
def cooked_table() -> tuple[int, ...]:
    """Go's ``rngCooked`` (as unsigned 64-bit words), recomputed.

    ``gen_cooked.go`` seeds the state with 1 (u = x<<20 ^ x'<<10 ^ x'') and runs
    ``vec[feed] += vec[tap]`` 7.8e12 times with both indexes walking down. Written as a
    sequence, each new word is y_k = y_(k-607) + y_(k-273), so y_n is a fixed linear
    combination of the 607 starting words whose coefficients are those of x^n modulo
    x^607 - x^334 - 1; the final state is the 607 latest words, in the slots the
    walking indexes left them in.
    """
    x = 1
    start = [0] * LEN
    for i in range(-20, LEN):
        x = _seedrand(x)
        if i >= 0:
            u = x << 20
            x = _seedrand(x)
            u ^= x << 10
            x = _seedrand(x)
            u ^= x
            start[i] = u
    feed0 = LEN - TAP
    # z_j = y_(j-606): slot p initially holds y_k with k = (feed0 - p) mod 607 in (-607, 0].
    z = [0] * LEN
    for p in range(LEN):
        k = (feed0 - p) % LEN
        z[(k - LEN if k > 0 else k) + LEN - 1] = start[p]
    coef = _x_power(COOKED_STEPS)
    table = [0] * LEN
    for i in range(LEN):
        k = COOKED_STEPS + i - (LEN - 1)
        table[(feed0 - k) % LEN] = sum(c * w for c, w in zip(coef, z, strict=True)) & MASK64
        coef = _reduce([0, *coef])
    return tuple(table)


class GoRand:
    """``rand.New(rand.NewSource(seed))`` of Go's ``math/rand`` (the same stream as the
    global functions after ``rand.Seed(seed)``). Methods are named as in Go."""

    __slots__ = ("_feed", "_tap", "_vec")

    def __init__(self, seed: int) -> None:
        self.seed(seed)

    def seed(self, seed: int) -> None:
        """``rngSource.Seed``: seed mod (2^31 - 1), 0 replaced by 89482311."""
        cooked = cooked_table()
        self._tap = 0
        self._feed = LEN - TAP
        seed %= INT32_MAX  # Go's % truncates, then adds the modulus to a negative rest
        if seed == 0:
            seed = 89482311
        x = seed
        vec = [0] * LEN
        for i in range(-20, LEN):
            x = _seedrand(x)
            if i >= 0:
                u = x << 40
                x = _seedrand(x)
                u ^= x << 20
                x = _seedrand(x)
                u ^= x
                vec[i] = (u ^ cooked[i]) & MASK64
        self._vec = vec

    def uint64(self) -> int:
        self._tap -= 1
        if self._tap < 0:
            self._tap += LEN
        self._feed -= 1
        if self._feed < 0:
            self._feed += LEN
        x = (self._vec[self._feed] + self._vec[self._tap]) & MASK64
        self._vec[self._feed] = x
        return x

    def int63(self) -> int:
        return self.uint64() & MASK63

    def int_(self) -> int:
        """``Int`` on a 64-bit platform: one ``Int63``."""
        return self.int63()

    def uint32(self) -> int:
        return self.int63() >> 31

    def int31(self) -> int:
        return self.int63() >> 32

    def int31n(self, n: int) -> int:
        """``Int31n``: a power of two masks, otherwise modulo with rejection above
        the largest multiple of n."""
        if n <= 0:
            raise ValueError("invalid argument to Int31n")
        if n & (n - 1) == 0:
            return self.int31() & (n - 1)
        top = INT32_MAX - (1 << 31) % n
        v = self.int31()
        while v > top:
            v = self.int31()
        return v % n

    def int63n(self, n: int) -> int:
        if n <= 0:
            raise ValueError("invalid argument to Int63n")
        if n & (n - 1) == 0:
            return self.int63() & (n - 1)
        top = MASK63 - (1 << 63) % n
        v = self.int63()
        while v > top:
            v = self.int63()
        return v % n

    def intn(self, n: int) -> int:
        """``Intn``: ``Int31n`` below 2^31, else ``Int63n``."""
        if n <= 0:
            raise ValueError("invalid argument to Intn")
        return self.int31n(n) if n <= INT32_MAX else self.int63n(n)

    def _int31n_lemire(self, n: int) -> int:
        """Go's unexported ``int31n`` (used by ``Shuffle``): multiply-shift, rejecting
        the low products below 2^32 mod n."""
        prod = self.uint32() * n
        low = prod & 0xFFFFFFFF
        if low < n:
            thresh = ((1 << 32) - n) % n
            while low < thresh:
                prod = self.uint32() * n
                low = prod & 0xFFFFFFFF
        return prod >> 32

    def float64(self) -> float:
        """``Float64``: Int63 / 2^63, drawn again in the rare case it rounds to 1."""
        while True:
            f = float(self.int63()) / (1 << 63)
            if f != 1.0:
                return f

    def perm(self, n: int) -> list[int]:
        """``Perm``: m[i] = m[j], m[j] = i with j = Intn(i + 1), for i = 0..n-1."""
        m = [0] * n
        for i in range(n):
            j = self.intn(i + 1)
            m[i] = m[j]
            m[j] = i
        return m

    def shuffle(self, items: MutableSequence[T]) -> None:
        """``Shuffle`` of ``items`` in place: for i = n-1 down to 1, swap i with
        int31n(i + 1) (Int63n for i beyond 2^31 - 2, never reached here)."""
        i = len(items) - 1
        while i > INT32_MAX - 1:
            j = self.int63n(i + 1)
            items[i], items[j] = items[j], items[i]
            i -= 1
        while i > 0:
            j = self._int31n_lemire(i + 1)
            items[i], items[j] = items[j], items[i]
            i -= 1
