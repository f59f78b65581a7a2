"""Business logic that writes: experiments, runs, and the execution of a run's tasks.

Keyword-only, typed functions (HackSoft style). Views, tasks, the admin and (later) the
REST API call these and nothing else to change data.
"""

from experiments.services.execution import Outcome, replication_execute
from experiments.services.experiments import (
    ExperimentChangedError,
    experiment_clone,
    experiment_create,
    experiment_delete,
    experiment_update,
    presets_install,
)
from experiments.services.runs import (
    RunStartThrottledError,
    run_cancel,
    run_enqueue,
    run_fail,
    run_finalize,
    run_start,
    runs_sweep_stale,
)
from experiments.services.study import study_chunk_execute

__all__ = [
    "ExperimentChangedError",
    "Outcome",
    "RunStartThrottledError",
    "experiment_clone",
    "experiment_create",
    "experiment_delete",
    "experiment_update",
    "presets_install",
    "replication_execute",
    "run_cancel",
    "run_enqueue",
    "run_fail",
    "run_finalize",
    "run_start",
    "runs_sweep_stale",
    "study_chunk_execute",
]
