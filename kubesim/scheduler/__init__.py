"""An emulated kube-scheduler, a stream of training jobs, and a recorder of partial gangs.

To see what the extender does for gangs one needs kube-scheduler's side of the extender protocol
as kube-scheduler really plays it: `EmulatedScheduler` runs that loop against a Kubernetes
apiserver (the test apiserver, or a real one) and a real extender over HTTP; `Workload` is what a
Job controller would create and delete; `Recorder` follows the apiserver's pods and measures
partial gangs; `controllers` creates training jobs as Kubeflow, the MPI operator and JobSet do.
Each module says where it follows kube-scheduler and where it simplifies.
"""

from kubesim.scheduler.apiserver import Apiserver, connect
from kubesim.scheduler.attempt import Attempt
from kubesim.scheduler.binder import BindOutcome
from kubesim.scheduler.clock import Clock, ManualClock, RealClock
from kubesim.scheduler.config import SchedulerConfig, backoff_duration, num_feasible_nodes_to_find
from kubesim.scheduler.extender_client import ExtenderError
from kubesim.scheduler.job_controller import JobRunner, JobState
from kubesim.scheduler.pods import GPU, RDMA, PodKey, bound_node, pod_key, pod_requests
from kubesim.scheduler.recorder import GangKey, GangRecord, Recorder
from kubesim.scheduler.scheduler import EmulatedScheduler
from kubesim.scheduler.workload import Job, Jobs, JobStream, Workload, applied

__all__ = [
    "GPU",
    "RDMA",
    "Apiserver",
    "Attempt",
    "BindOutcome",
    "Clock",
    "EmulatedScheduler",
    "ExtenderError",
    "GangKey",
    "GangRecord",
    "Job",
    "JobRunner",
    "JobState",
    "JobStream",
    "Jobs",
    "ManualClock",
    "PodKey",
    "RealClock",
    "Recorder",
    "SchedulerConfig",
    "Workload",
    "applied",
    "backoff_duration",
    "bound_node",
    "connect",
    "num_feasible_nodes_to_find",
    "pod_key",
    "pod_requests",
]
