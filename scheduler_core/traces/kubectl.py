"""The ``kubectl`` import format: an alias of the Kubernetes reader (``scheduler_core.k8s``),
kept so ``python -m scheduler_core import kubectl snapshot.json`` goes on working."""

from scheduler_core.k8s import read_snapshot

__all__ = ["read_snapshot"]
