"""How much each mode of the harness does: ``quick`` (under a minute), ``ci`` (what CI
runs) and ``long`` (the big one)."""

from __future__ import annotations

from typing import Final

import attrs

__all__ = ["PROFILES", "Profile"]


@attrs.frozen
class Profile:
    name: str
    agents: int
    """Agents per workload run (each with its own canary)."""
    clients: int
    """Concurrent client tasks per workload run."""
    operations: int
    """Operations per workload run (over all clients)."""
    workload_runs: int
    """In-process workload runs, each with its own derived seed."""
    socket_runs: int
    """Workload runs against a real server over its socket, one client connection each."""
    kill_trials: int
    """SIGKILLs of a real server at a random moment of a workload."""
    crash_point_seeds: int
    """Seeds per named crash point."""
    crash_points: int
    """Named crash points tried per seed, a seeded sample (0: every one)."""
    fault_indexes: int
    """Fault positions tried per write operation and fault kind (0: every one)."""
    fault_trials: int
    """At most this many fault trials, a seeded sample of the rest (0: no limit)."""
    load_seconds: float
    """How long the socket load test runs once warm (resources sampled and compared)."""
    load_warmup_seconds: float
    """How long its clients run first, unmeasured: the server's caches fill meanwhile."""
    load_clients: int
    schedule_seeds: int
    """Scheduler seeds of the schedules mode, each with its own short workload."""
    schedule_operations: int
    """Operations per scheduler seed (over all clients)."""


PROFILES: Final = {
    profile.name: profile
    for profile in (
        Profile(
            "quick",
            agents=3,
            clients=4,
            operations=80,
            workload_runs=2,
            socket_runs=1,
            kill_trials=2,
            crash_point_seeds=1,
            crash_points=2,
            fault_indexes=1,
            fault_trials=8,
            load_seconds=5.0,
            load_warmup_seconds=3.0,
            load_clients=8,
            schedule_seeds=2,
            schedule_operations=80,
        ),
        Profile(
            "ci",
            agents=4,
            clients=6,
            operations=200,
            workload_runs=4,
            socket_runs=2,
            kill_trials=4,
            crash_point_seeds=1,
            crash_points=0,
            fault_indexes=2,
            fault_trials=40,
            load_seconds=10.0,
            load_warmup_seconds=8.0,
            load_clients=16,
            schedule_seeds=4,
            schedule_operations=200,
        ),
        Profile(
            "long",
            agents=8,
            clients=12,
            operations=600,
            workload_runs=500,
            socket_runs=40,
            kill_trials=200,
            crash_point_seeds=10,
            crash_points=0,
            fault_indexes=0,
            fault_trials=0,
            load_seconds=600.0,
            load_warmup_seconds=30.0,
            load_clients=16,
            schedule_seeds=500,
            schedule_operations=200,
        ),
    )
}
