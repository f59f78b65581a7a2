"""`python -m scheduler_core export k8s|kwok SPEC`: an experiment as Kubernetes YAML.

``k8s`` writes the manifests a user can ``kubectl apply`` (``--policy-only`` leaves out
the simulated Nodes and the Pods bound to them); ``kwok`` writes a snapshot that
``kwokctl snapshot restore`` replays. ``--variant`` writes one variant with its
overrides applied. Bad input is one line on stderr and exit status 2.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from scheduler_core.k8s.export import (
    DEFAULT_NAMESPACE,
    ExportOptions,
    export_kwok_snapshot,
    export_manifests,
)

EPILOG = """examples:
  export k8s s7-three-class-setup -o three-class.yaml
  export k8s my-spec.yaml --variant everything-preempts --policy-only | kubectl apply -f -
  export kwok s2-jump-the-queue -o snapshot.yaml
"""


def register(sub: Any) -> None:
    """Add the ``export`` command to the CLI's subparsers."""
    parser = sub.add_parser(
        "export",
        help="write an experiment as Kubernetes manifests or a KWOK snapshot",
        description=__doc__,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "format",
        choices=("k8s", "kwok"),
        help="k8s: manifests to kubectl apply; kwok: a cluster snapshot",
    )
    parser.add_argument("spec", help="a YAML/JSON file, '-' for stdin, or a preset id")
    parser.add_argument("--variant", help="write this variant (its overrides applied)")
    parser.add_argument("-o", "--output", help="write here; default: stdout")
    parser.add_argument(
        "--namespace",
        default=DEFAULT_NAMESPACE,
        help=f"namespace of the namespaced objects (default {DEFAULT_NAMESPACE})",
    )
    parser.add_argument(
        "--policy-only",
        action="store_true",
        help="k8s: leave out the Nodes and the initial-state Pods (for a real cluster)",
    )
    parser.set_defaults(handler=_export)


def _export(args: argparse.Namespace) -> int:
    from scheduler_core.cli import load_spec_argument  # late: that module imports this one

    spec = load_spec_argument(args.spec)
    if args.format == "kwok":
        text = export_kwok_snapshot(spec, variant=args.variant, namespace=args.namespace)
    else:
        options = ExportOptions(namespace=args.namespace, nodes=not args.policy_only)
        text = export_manifests(spec, variant=args.variant, options=options)
    if args.output:
        Path(args.output).write_text(text, encoding="utf-8")
        print(f"wrote {args.output}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0
