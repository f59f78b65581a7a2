"""The form tab: one small form per item of each list in the spec, plus the top level.

Field names are the spec's own paths in snake_case, ``__`` for nesting
(``checkpoint__interval_seconds`` is ``checkpoint.intervalSeconds``), so mapping a
form to the document and an error back to its field needs no table. Whatever a form
does not show travels in a hidden ``extra`` field as JSON and is merged back, so
editing in the form never drops what was written in the YAML tab.
"""

from __future__ import annotations

from typing import Any, ClassVar, cast

from django import forms
from pydantic.alias_generators import to_camel

from experiments.editor.fields import (
    SpecBooleanField,
    SpecChoiceField,
    SpecDurationField,
    SpecField,
    SpecListField,
    SpecMapField,
    SpecNumberField,
    SpecTaintsField,
    SpecTolerationsField,
    SpecYAMLListField,
    SpecYAMLMapField,
)
from experiments.models import MAX_TAG_LENGTH
from experiments.specs import policy_choices
from scheduler_core.plugins.gpu_scoring import policy_names
from scheduler_core.spec import ControllerKind, PreemptionPolicy, RecoveryModel, WorkloadKind
from scheduler_core.study_spec import published


def spec_path(field_name: str) -> str:
    """``checkpoint__interval_seconds`` → ``checkpoint.intervalSeconds``."""
    return ".".join(to_camel(part) for part in field_name.split("__"))


def _choices(values: list[str]) -> list[tuple[str, str]]:
    return [(value, value) for value in values]


def _enum_choices(enum: Any) -> list[tuple[str, str]]:
    return _choices([member.value for member in enum])


OURS = {"checkpoint-aware": "checkpoint-aware (ours, not a Kubernetes behaviour)"}
"""Policies that are our own model are labelled as such wherever a user picks them."""


def _plugin_choices(kind: str) -> list[tuple[str, str]]:
    return [(value, OURS.get(value, label)) for value, label in _choices(policy_choices()[kind])]


def _placement_choices() -> list[tuple[str, str]]:
    """The replay's placement scorings, then the GPU scoring policies only a placement
    study runs (docs/placement-study.md), labelled as such."""
    replay = _plugin_choices("placement")
    known = {value for value, _ in replay}
    study = [(name, f"{name} (placement study)") for name in policy_names() if name not in known]
    return replay + study


class SpecForm(forms.Form):
    """A form whose fields are spec paths. ``extra`` carries the fields it does not show."""

    extra = forms.CharField(widget=forms.HiddenInput, required=False)
    LAYOUT: ClassVar[tuple[tuple[str, ...], ...]] = ()
    """Rows of field names, for the template."""
    OPTIONAL_OBJECTS: ClassVar[dict[str, tuple[str, ...]]] = {}
    """Sub-objects that exist only while one of their key fields is filled in (path →
    fields), so blanking them in the form removes the object, hidden parts included."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for name, field in self.fields.items():
            if isinstance(field, SpecChoiceField):
                self._keep_unknown_choice(name, field)

    def _keep_unknown_choice(self, name: str, field: SpecChoiceField) -> None:
        value = self.data.get(self.add_prefix(name)) if self.is_bound else self.initial.get(name)
        known = cast("list[tuple[str, str]]", field.choices)  # ChoiceField normalises them
        if value and value not in {key for key, _ in known}:
            field.choices = [*known, (value, f"{value} (unknown)")]

    @classmethod
    def spec_fields(cls) -> dict[str, str]:
        """Form field name → path inside the item, for every field but ``extra``."""
        return {name: spec_path(name) for name in cls.base_fields if name != "extra"}

    def layout_rows(self) -> list[list[forms.BoundField]]:
        return [[self[name] for name in row] for row in self.LAYOUT]


class TopForm(SpecForm):
    name = SpecField(label="Name", max_length=200)
    description = SpecField(
        label="Description", strip=False, widget=forms.Textarea(attrs={"rows": 2})
    )
    horizon_seconds = SpecDurationField(label="Horizon", help_text="e.g. 2h, 1d or seconds")
    seed = SpecNumberField(label="Seed")
    replications = SpecNumberField(label="Replications")
    policy__preemption = SpecChoiceField(
        label="Preemption policy", choices=_plugin_choices("preemption"), blank="default"
    )
    policy__placement = SpecChoiceField(
        label="Placement scoring", choices=_placement_choices(), blank="default"
    )
    policy__min_candidate_nodes_percentage = SpecNumberField(
        label="Min candidate nodes %", help_text="DefaultPreemption: 10"
    )
    policy__min_candidate_nodes_absolute = SpecNumberField(
        label="Min candidate nodes", help_text="DefaultPreemption: 100"
    )
    policy__pod_initial_backoff_seconds = SpecDurationField(
        label="Initial backoff", help_text="kube-scheduler: 1s"
    )
    policy__pod_max_backoff_seconds = SpecDurationField(
        label="Max backoff", help_text="kube-scheduler: 10s"
    )
    policy__checkpoint_victims = SpecBooleanField(
        label="Victims checkpoint in their grace period (ours)"
    )
    policy__checkpoint_aware_weights = SpecMapField(
        label="Checkpoint-aware weights (ours)",
        help_text="lostWork=1, strandedCapacity=1, startup=1, recovery=1, session=3600",
    )
    policy__min_runtime_seconds = SpecDurationField(
        label="Min runtime before preemption",
        help_text="anti-thrashing guard (KAI): e.g. 10m; blank: none",
    )
    policy__preemption_rate_limit__per_minute = SpecNumberField(
        label="Preemption rate limit (per minute)",
        help_text="anti-thrashing guard: evictions a minute, cluster-wide; blank: none",
    )
    policy__preemption_rate_limit__burst = SpecNumberField(
        label="Rate limit burst", help_text="evictions at once; default 1"
    )
    wait_for_pods_ready__timeout_seconds = SpecDurationField(
        label="Kueue waitForPodsReady timeout",
        help_text="queued workloads: evict and requeue if not all Ready; e.g. 5m; blank: off",
    )
    wait_for_pods_ready__requeuing_strategy__backoff_base_seconds = SpecDurationField(
        label="Requeue backoff base", help_text="Kueue: 60s, doubled per requeue"
    )
    wait_for_pods_ready__requeuing_strategy__backoff_max_seconds = SpecDurationField(
        label="Requeue backoff max", help_text="Kueue: 1h"
    )
    wait_for_pods_ready__requeuing_strategy__backoff_limit_count = SpecNumberField(
        label="Requeues before deactivation", help_text="blank: requeue forever"
    )
    origin = SpecChoiceField(
        label="Origin",
        choices=_choices(["spec", "snapshot"]),
        blank="spec",
        help_text="snapshot: a recorded cluster may be over-committed (warned, not refused)",
    )
    fair_sharing__preemption_strategies = SpecListField(
        label="Kueue fair sharing: strategies",
        help_text="blank: off; LessThanOrEqualToFinalShare, LessThanInitialShare",
    )
    placement_study__arrived_load_percent = SpecNumberField(
        label="Placement study: arrived load %",
        help_text="time-less packing study (FGD paper), e.g. 130; blank: a time-based replay",
    )
    placement_study__paper_workload = SpecChoiceField(
        label="Paper's workload (drawn beside ours)",
        choices=_choices(sorted(published())),
        blank="none",
        help_text="openb workload whose published results the chart shows",
    )
    placement_study__random_stream = SpecChoiceField(
        label="Placement study: random stream",
        choices=_choices(["go", "numpy"]),
        blank="go (the simulator's)",
        help_text="go: each seed draws what the FGD simulator draws; numpy: other numbers",
    )
    grid = SpecYAMLMapField(
        label="Grid (one variant per combination)",
        help_text="one per line, e.g. workloads.training.checkpoint.intervalSeconds: [600, 1800]",
    )
    LAYOUT = (
        ("name", "horizon_seconds", "seed", "replications"),
        ("policy__preemption", "policy__placement", "policy__checkpoint_victims"),
        (
            "policy__min_candidate_nodes_percentage",
            "policy__min_candidate_nodes_absolute",
            "policy__pod_initial_backoff_seconds",
            "policy__pod_max_backoff_seconds",
            "policy__checkpoint_aware_weights",
        ),
        (
            "policy__min_runtime_seconds",
            "policy__preemption_rate_limit__per_minute",
            "policy__preemption_rate_limit__burst",
        ),
        (
            "wait_for_pods_ready__timeout_seconds",
            "wait_for_pods_ready__requeuing_strategy__backoff_base_seconds",
            "wait_for_pods_ready__requeuing_strategy__backoff_max_seconds",
            "wait_for_pods_ready__requeuing_strategy__backoff_limit_count",
        ),
        ("grid", "origin", "fair_sharing__preemption_strategies"),
        (
            "placement_study__arrived_load_percent",
            "placement_study__paper_workload",
            "placement_study__random_stream",
        ),
        ("description",),
    )
    OPTIONAL_OBJECTS = {"placementStudy": ("placement_study__arrived_load_percent",)}


class NodeForm(SpecForm):
    """A named node; also the shape every node of a pool shares."""

    name = SpecField(label="Node")
    gpus = SpecNumberField(label="GPUs")
    cpu = SpecNumberField(label="CPU")
    memory = SpecNumberField(label="Memory (GiB)")
    spot = SpecBooleanField(label="Spot")
    labels = SpecMapField(label="Labels", help_text="zone=a, rack=r1")
    taints = SpecTaintsField(label="Taints", help_text="key=value:NoSchedule, ...")
    max_pods = SpecNumberField(label="Max pods", help_text="kubelet: 110")
    gpu_model = SpecField(label="GPU model", help_text="e.g. V100M16")
    mig = SpecMapField(label="MIG instances", help_text="1g.10gb=7, 3g.40gb=2")
    LAYOUT: ClassVar[tuple[tuple[str, ...], ...]] = (
        ("name", "gpus", "cpu", "memory", "max_pods", "spot", "labels", "taints"),
        ("gpu_model", "mig"),
    )


class NodePoolForm(NodeForm):
    count = SpecNumberField(label="Nodes")
    standby__mode = SpecChoiceField(
        label="Standby (spare pool)",
        choices=_choices(["warm", "cold"]),
        blank="no: serving",
        help_text="out of service until a failure calls a spare in",
    )
    standby__activation_seconds = SpecDurationField(
        label="Spare ready after", help_text="default warm 60s, cold 15m"
    )
    standby__replaces = SpecField(label="Spare for pool", help_text="blank: any serving pool")
    LAYOUT = (
        ("name", "count", "gpus", "cpu", "memory", "max_pods", "spot", "labels", "taints"),
        ("gpu_model", "mig"),
        ("standby__mode", "standby__activation_seconds", "standby__replaces"),
    )
    OPTIONAL_OBJECTS = {
        "standby": ("standby__mode", "standby__activation_seconds", "standby__replaces"),
    }

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["name"].label = "Pool"
        self.fields["gpus"].label = "GPUs per node"


class PriorityClassForm(SpecForm):
    name = SpecField(label="Name")
    value = SpecNumberField(label="Value")
    preemption_policy = SpecChoiceField(
        label="Preemption policy", choices=_enum_choices(PreemptionPolicy)
    )
    global_default = SpecBooleanField(label="Global default")
    description = SpecField(label="Description")
    LAYOUT = (("name", "value", "preemption_policy", "global_default", "description"),)


class WorkloadForm(SpecForm):
    name = SpecField(label="Name")
    kind = SpecChoiceField(label="Kind", choices=_enum_choices(WorkloadKind))
    members = SpecNumberField(label="Members")
    gpus = SpecNumberField(label="GPUs per member")
    gpu_milli = SpecNumberField(label="GPU share (milli)", help_text="1-999, instead of GPUs")
    gpu_models = SpecListField(label="GPU models", help_text="V100M16, V100M32 (any of)")
    mig = SpecMapField(label="MIG per member", help_text="3g.40gb=1, instead of GPUs")
    cpu = SpecNumberField(label="CPU")
    memory = SpecNumberField(label="Memory (GiB)")
    priority_class_name = SpecField(
        label="Priority class", widget=forms.TextInput(attrs={"list": "priority-classes"})
    )
    urgent = SpecBooleanField(label="Urgent (the preemptor)")
    arrival = SpecDurationField(label="Arrival", help_text="e.g. 10m, or seconds")
    duration_seconds = SpecDurationField(label="Duration", help_text="blank: until the horizon")
    startup_seconds = SpecDurationField(label="Startup time")
    termination_grace_period_seconds = SpecDurationField(label="Grace period")
    stop_seconds = SpecDurationField(label="Stop time", help_text="after SIGTERM")
    checkpoint__interval_seconds = SpecDurationField(
        label="Checkpoint every", help_text="blank: never"
    )
    checkpoint__write_seconds = SpecDurationField(label="Checkpoint write time")
    checkpoint__on_sigterm = SpecBooleanField(label="Checkpoint on SIGTERM")
    recovery__model = SpecChoiceField(label="Recovery model", choices=_enum_choices(RecoveryModel))
    controller__kind = SpecChoiceField(label="Controller", choices=_enum_choices(ControllerKind))
    pod_group__min_count = SpecNumberField(label="PodGroup minCount", help_text="blank: no gang")
    pod_group__disruption_mode = SpecChoiceField(
        label="PodGroup disruption", choices=_choices(["Single", "All"])
    )
    pod_group__scheduling = SpecChoiceField(
        label="PodGroup scheduling", choices=_choices(["gang", "basic"])
    )
    pod_group__priority_class_name = SpecField(
        label="PodGroup class", widget=forms.TextInput(attrs={"list": "priority-classes"})
    )
    pod_group__topology = SpecYAMLMapField(
        label="PodGroup topology", help_text="e.g. levels: [zone, rack] / required: rack"
    )
    recovery__min_members = SpecNumberField(label="Elastic: min members")
    controller__pod_replacement_policy = SpecChoiceField(
        label="Pod replacement", choices=_choices(["TerminatingOrFailed", "Failed"])
    )
    controller__restart = SpecChoiceField(
        label="JobSet restart", choices=_choices(["member", "group"])
    )
    controller__backoff_limit = SpecNumberField(
        label="Job backoffLimit", help_text="pod failures before the Job fails; blank: uncounted"
    )
    node_selector = SpecMapField(label="Node selector", help_text="pool=gpu, zone=a")
    tolerations = SpecTolerationsField(
        label="Tolerations", help_text="key=value:NoSchedule, key:NoExecute, key, *"
    )
    pdb__min_available = SpecNumberField(label="PDB minAvailable")
    pdb__max_unavailable = SpecNumberField(label="PDB maxUnavailable")
    pdb__disrupted_pods = SpecNumberField(
        label="PDB disrupted now", help_text="status.disruptedPods of a snapshot"
    )
    queue = SpecField(label="Admission queue")
    queue_priority = SpecNumberField(label="Queue priority")
    LAYOUT = (
        ("name", "kind", "members", "gpus", "cpu", "memory", "priority_class_name", "urgent"),
        (
            "arrival",
            "duration_seconds",
            "startup_seconds",
            "termination_grace_period_seconds",
            "stop_seconds",
        ),
        (
            "checkpoint__interval_seconds",
            "checkpoint__write_seconds",
            "checkpoint__on_sigterm",
            "recovery__model",
            "controller__kind",
        ),
        (
            "recovery__min_members",
            "controller__pod_replacement_policy",
            "controller__restart",
            "controller__backoff_limit",
            "queue",
            "queue_priority",
        ),
        (
            "pod_group__min_count",
            "pod_group__disruption_mode",
            "pod_group__scheduling",
            "pod_group__priority_class_name",
            "pod_group__topology",
        ),
        ("gpu_milli", "gpu_models", "mig"),
        (
            "node_selector",
            "tolerations",
            "pdb__min_available",
            "pdb__max_unavailable",
            "pdb__disrupted_pods",
        ),
    )
    OPTIONAL_OBJECTS = {
        "podGroup": ("pod_group__min_count",),
        "pdb": ("pdb__min_available", "pdb__max_unavailable"),
    }


class TimelineEventForm(SpecForm):
    at = SpecDurationField(label="At", help_text="e.g. 1h30m, or seconds")
    type = SpecChoiceField(label="Type", choices=_plugin_choices("disruptions"))
    pool = SpecField(label="Pool")
    count = SpecNumberField(label="Nodes (count)")
    fraction = SpecNumberField(label="or fraction")
    nodes = SpecListField(label="or nodes", help_text="n1, n2")
    notice_seconds = SpecDurationField(label="Notice")
    recover_after_seconds = SpecDurationField(label="Back after", help_text="blank: never")
    timeout_seconds = SpecDurationField(
        label="Drain gives up after", help_text="drains only; default 1h"
    )
    toleration_seconds = SpecDurationField(
        label="Pods evicted after",
        help_text="node-failure: NotReady toleration, e.g. 300; blank: at once",
    )
    LAYOUT = (
        (
            "at",
            "type",
            "pool",
            "count",
            "fraction",
            "nodes",
            "notice_seconds",
            "recover_after_seconds",
            "timeout_seconds",
            "toleration_seconds",
        ),
    )


class FailureModelForm(SpecForm):
    name = SpecField(label="Name")
    kind = SpecChoiceField(
        label="Kind", choices=_choices(["random", "correlated", "trace"]), blank="random"
    )
    pool = SpecField(label="Pool", help_text="blank: every node")
    selector = SpecMapField(label="Node selector", help_text="rack=r1")
    per = SpecChoiceField(
        label="Clock",
        choices=_choices(["node", "scope"]),
        blank="node",
        help_text="node: each node (domain) on its own",
    )
    inter_arrival = SpecYAMLMapField(
        label="Time between failures",
        help_text="e.g. distribution: exponential, meanSeconds: 30d (weibull: shape; "
        "lognormal: sigma; empirical: samplesSeconds)",
    )
    repair = SpecYAMLMapField(label="Repair time", help_text="blank: never back")
    domain_label = SpecField(label="Domain label", help_text="correlated: e.g. rack")
    fraction = SpecNumberField(label="Fraction of the domain", help_text="correlated: 0.5")
    toleration_seconds = SpecDurationField(
        label="Pods evicted after", help_text="NotReady toleration: 300"
    )
    csv = SpecField(
        label="Trace rows",
        strip=False,
        widget=forms.Textarea(attrs={"rows": 3, "spellcheck": "false"}),
        help_text="trace: time,target,duration (target: node or label=value)",
    )
    disruption = SpecChoiceField(
        label="Disruption",
        choices=_choices(["node-failure", "spot-reclaim", "drain"]),
        blank="node-failure",
    )
    notice_seconds = SpecDurationField(label="Spot notice", help_text="spot-reclaim: 2m, 30s")
    LAYOUT = (
        ("name", "kind", "disruption", "pool", "selector", "per", "domain_label", "fraction"),
        ("toleration_seconds", "notice_seconds", "inter_arrival", "repair"),
        ("csv",),
    )


class AdmissionQueueForm(SpecForm):
    name = SpecField(label="Queue")
    concurrency = SpecNumberField(label="Workloads at once")
    nominal_gpus = SpecNumberField(label="Nominal GPUs")
    cohort = SpecField(label="Cohort")
    borrowing_limit_gpus = SpecNumberField(label="Borrowing limit (GPUs)")
    order_by = SpecChoiceField(label="Order by", choices=_choices(["queuePriority", "priority"]))
    queueing_strategy = SpecChoiceField(
        label="Queueing", choices=_choices(["StrictFIFO", "BestEffortFIFO"])
    )
    preemption__within_cluster_queue = SpecChoiceField(
        label="Preempt within queue",
        choices=_choices(["Never", "LowerPriority", "LowerOrNewerEqualPriority"]),
    )
    preemption__reclaim_within_cohort = SpecChoiceField(
        label="Reclaim within cohort", choices=_choices(["Never", "LowerPriority", "Any"])
    )
    preemption__borrow_within_cohort__policy = SpecChoiceField(
        label="Borrow within cohort", choices=_choices(["Never", "LowerPriority"])
    )
    preemption__borrow_within_cohort__max_priority_threshold = SpecNumberField(
        label="Borrow: max victim priority"
    )
    resource_groups = SpecYAMLListField(
        label="Resource groups (instead of nominal GPUs)",
        help_text="- {coveredResources: [gpus, cpu], flavors: [{name: spot, resources: "
        "[{name: gpus, nominalQuota: 8}, {name: cpu, nominalQuota: 64}]}]}",
    )
    flavor_fungibility__when_can_borrow = SpecChoiceField(
        label="Flavor: when it can borrow",
        choices=_choices(["MayStopSearch", "TryNextFlavor"]),
        blank="default (MayStopSearch)",
    )
    flavor_fungibility__when_can_preempt = SpecChoiceField(
        label="Flavor: when it can preempt",
        choices=_choices(["MayStopSearch", "TryNextFlavor"]),
        blank="default (TryNextFlavor)",
    )
    fair_sharing__weight = SpecNumberField(
        label="Fair-sharing weight", help_text="default 1; with top-level fair sharing"
    )
    LAYOUT = (
        ("name", "concurrency", "nominal_gpus", "cohort", "borrowing_limit_gpus"),
        (
            "order_by",
            "queueing_strategy",
            "preemption__within_cluster_queue",
            "preemption__reclaim_within_cohort",
            "preemption__borrow_within_cohort__policy",
            "preemption__borrow_within_cohort__max_priority_threshold",
        ),
        (
            "flavor_fungibility__when_can_borrow",
            "flavor_fungibility__when_can_preempt",
            "fair_sharing__weight",
            "resource_groups",
        ),
    )
    OPTIONAL_OBJECTS = {
        "preemption.borrowWithinCohort": (
            "preemption__borrow_within_cohort__policy",
            "preemption__borrow_within_cohort__max_priority_threshold",
        )
    }


class ResourceQuotaForm(SpecForm):
    priority_class_name = SpecField(
        label="Priority class", widget=forms.TextInput(attrs={"list": "priority-classes"})
    )
    gpus = SpecNumberField(label="GPUs at most")
    LAYOUT = (("priority_class_name", "gpus"),)


class InitialPodForm(SpecForm):
    workload = SpecField(label="Workload")
    member = SpecNumberField(label="Member", help_text="blank: the next one")
    node = SpecField(label="Node")
    started_at = SpecDurationField(label="Started at", help_text="<= 0, e.g. -2h")
    terminating_until = SpecDurationField(
        label="Terminating until", help_text="a deletionTimestamp: frees then"
    )
    nominated = SpecBooleanField(label="Pending, nominated to the node")
    LAYOUT = (("workload", "member", "node", "started_at", "terminating_until", "nominated"),)


class VariantForm(SpecForm):
    name = SpecField(label="Variant")
    preemption = SpecChoiceField(
        label="Preemption policy", choices=_plugin_choices("preemption"), blank="experiment's"
    )
    placement = SpecChoiceField(
        label="Placement scoring", choices=_placement_choices(), blank="experiment's"
    )
    set = SpecYAMLMapField(
        label="Overrides",
        help_text="one per line, e.g. workloads.batch-job.terminationGracePeriodSeconds: 30",
    )
    LAYOUT = (("name", "preemption", "placement"), ("set",))


class MetaForm(forms.Form):
    """What belongs to the experiment rather than to the spec: tags and sharing."""

    tags = forms.CharField(
        required=False,
        max_length=500,
        help_text="comma-separated",
        widget=forms.TextInput(attrs={"placeholder": "e.g. gpu-a100, q3"}),
    )
    shared_with = forms.CharField(
        required=False,
        max_length=2000,
        label="Share with",
        help_text="usernames, comma-separated; they can view it and clone it",
        widget=forms.TextInput(attrs={"placeholder": "usernames"}),
    )

    def clean_tags(self) -> list[str]:
        tags = [tag.strip() for tag in self.cleaned_data["tags"].split(",") if tag.strip()]
        too_long = [tag for tag in tags if len(tag) > MAX_TAG_LENGTH]
        if too_long:
            raise forms.ValidationError(
                f"a tag may have at most {MAX_TAG_LENGTH} characters: {too_long[0]}"
            )
        return tags

    def clean_shared_with(self) -> list[Any]:
        from experiments.selectors import users_by_username

        names = [n.strip() for n in self.cleaned_data["shared_with"].split(",") if n.strip()]
        users, unknown = users_by_username(usernames=names)
        if unknown:
            raise forms.ValidationError(f"no user named {', '.join(unknown)}")
        return users


class YAMLForm(forms.Form):
    text = forms.CharField(
        required=False,
        strip=False,
        label="Spec (YAML or JSON)",
        widget=forms.Textarea(attrs={"rows": 30, "spellcheck": "false", "class": "code"}),
    )
