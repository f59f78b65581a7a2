"""GPU devices tracked one by one, for clusters where pods share a device (#18 §1).

A node's devices are a list of free milli-GPU, one entry per device (1,000 when free).
A whole-GPU pod takes fully free devices; a pod with ``gpuMilli`` takes that share of one
device. Shares on one device never add up to more than 1,000, and a pod that leaves
gives back exactly what it took, on the devices it took it from.

The list exists only when some workload of the experiment shares a device: a cluster of
whole GPUs keeps counting free GPUs per node and allocates nothing per device.

Which device a share goes to is our choice (docs/shared-gpus.md): the fullest device it
fits on (best fit), the lowest index among equals; whole devices are the lowest-indexed
free ones. The same rule answers "does it fit" (:func:`devices_fit`) and "where does it
go" (:func:`take`), so a pod that fits always lands.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from scheduler_core.spec import MILLI_PER_GPU

if TYPE_CHECKING:
    from scheduler_core.model import Node, Pod

FULL = MILLI_PER_GPU


def best_device(free: Sequence[int], milli: int) -> int:
    """The fullest device with at least ``milli`` free (lowest index among equals), or -1."""
    best, best_free = -1, FULL + 1
    for i, left in enumerate(free):
        if milli <= left < best_free:
            best, best_free = i, left
    return best


def devices_fit(free: Sequence[int], whole: int, shares: Sequence[int] = ()) -> bool:
    """Can ``whole`` full devices and every share of ``shares`` be placed at once?

    1. whole devices come from the fully free ones;
    2. shares go largest first, each on the fullest device left that holds it.
    Exact for one share (the common case: the pod itself); for several (nominated pods
    besides) it is the greedy packing :func:`take` would do, one pod after another."""
    full = sum(1 for left in free if left == FULL)
    if full < whole:
        return False
    if not shares:
        return True
    rest = [left for left in free if left < FULL] + [FULL] * (full - whole)
    for share in sorted(shares, reverse=True):
        i = best_device(rest, share)
        if i < 0:
            return False
        rest[i] -= share
    return True


def take(free: list[int], whole: int, milli: int) -> tuple[int, ...]:
    """Hold a pod's devices in ``free``: ``whole`` full devices, or a ``milli`` share of
    one. Returns the device indexes taken (the caller checked the fit)."""
    if milli:
        i = best_device(free, milli)
        assert i >= 0, (free, milli)
        free[i] -= milli
        return (i,)
    taken = tuple(i for i, left in enumerate(free) if left == FULL)[:whole]
    assert len(taken) == whole, (free, whole)
    for i in taken:
        free[i] = 0
    return taken


def give_back(free: list[int], devices: Sequence[int], milli: int) -> None:
    """Undo :func:`take`: exactly the share, on the devices it was taken from."""
    for i in devices:
        free[i] += milli if milli else FULL
        assert free[i] <= FULL, (free, devices, milli)


def full_devices(free: Sequence[int]) -> int:
    """Devices with nothing on them: what a whole-GPU pod can use."""
    return sum(1 for left in free if left == FULL)


def mig_fits(free: dict[str, int], need: Sequence[tuple[str, int]]) -> bool:
    """Every MIG profile asked for has that many instances free."""
    return all(free.get(profile, 0) >= count for profile, count in need)


class DryRun:
    """A node's devices as a preemption dry run sees them: every pod of lower priority
    removed (each freeing exactly its share, on its own devices), then put back one by
    one. Works on copies; the node itself is never touched (§4.3)."""

    __slots__ = ("cpu", "free", "mem", "mig", "node", "slots", "tracked")

    def __init__(self, node: Node, potential: Sequence[Pod]) -> None:
        self.node = node
        self.tracked = node.dev_free is not None
        self.free: list[int] = (
            list(node.dev_free) if node.dev_free is not None else [FULL] * node.free_gpus
        )
        """Free milli per device; untracked (whole GPUs only): one FULL per free GPU."""
        self.mig = dict(node.mig_free)
        self.cpu = node.free_cpu + 1e-9
        self.mem = node.free_mem + 1e-9
        self.slots = node.max_pods - node.npods
        for pod in potential:
            self.remove(pod)

    def remove(self, pod: Pod) -> None:
        """The pod is gone: its share, instances, CPU, memory and slot are free."""
        if self.tracked:
            give_back(self.free, pod.devices, pod.milli)
        else:
            self.free.extend([FULL] * pod.gpus)
        for profile, count in pod.mig:
            self.mig[profile] = self.mig.get(profile, 0) + count
        self.cpu += pod.cpu
        self.mem += pod.mem
        self.slots += 1

    def put_back(self, pod: Pod) -> None:
        """Undo :meth:`remove`: the pod holds its own devices again."""
        if self.tracked:
            for i in pod.devices:
                self.free[i] -= pod.milli if pod.milli else FULL
        else:
            del self.free[len(self.free) - pod.gpus :]
        for profile, count in pod.mig:
            self.mig[profile] -= count
        self.cpu -= pod.cpu
        self.mem -= pod.mem
        self.slots -= 1

    def fits(self, pod: Pod, others: Sequence[Pod]) -> bool:
        """NodeResourcesFit of ``pod`` with ``others`` (nominated) counted, per device."""
        need_c, need_m = pod.cpu, pod.mem
        for other in others:
            need_c += other.cpu
            need_m += other.mem
        return (
            need_c <= self.cpu
            and need_m <= self.mem
            and 1 + len(others) <= self.slots
            and self.devices_fit(pod, others)
        )

    def devices_fit(self, pod: Pod, others: Sequence[Pod]) -> bool:
        whole, shares = pod.gpus, [pod.milli] if pod.milli else []
        mig = dict(pod.mig)
        for other in others:
            whole += other.gpus
            if other.milli:
                shares.append(other.milli)
            for profile, count in other.mig:
                mig[profile] = mig.get(profile, 0) + count
        return devices_fit(self.free, whole, shares) and mig_fits(self.mig, tuple(mig.items()))

    def split(self, pod: Pod) -> bool:
        """The GPU capacity is there in total but not on the devices the pod needs: the
        free milli-GPU add up to its request, yet no device (or not enough whole devices)
        holds it: the freed shares are on different devices."""
        need = pod.milli or pod.gpus * FULL
        return (
            need > 0
            and sum(self.free) >= need
            and not devices_fit(self.free, pod.gpus, [pod.milli] if pod.milli else [])
        )
