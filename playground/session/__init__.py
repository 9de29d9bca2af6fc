"""A live session: a scenario (or free play), a backend, a seed and the command log (design.md, principle 4).

One idea per module:
- `store`: the database side: the session's row and its log, one row per command, versioned appends.
- `live`: a session as a process holds it (`Live`), and the log's entries as steps and actors.
- `cache`: this process's live sessions, the simulator checkpoints that bound a replay, recent moments.
- `replay`: catching up with the log, restoring step k, moments of a session (scrubbing, `?at=k`).
- `commands`: the commit loop and the commands through it; `actors`: adding producers and consumers.
- `create`: new sessions and forks; `capability`: who may drive; `realcluster`: re-runs and ends on a real
  cluster; `backends`: building one, and what stands in for a real cluster this process lacks; `runner`: "run".

Everything here is synchronous (Django ORM, the backend) except the runner. Under Daphne, sync code runs in one
thread per process (`sync_to_async(thread_sensitive=True)`), and a lock per session guards the rest.
"""

import atexit

from playground.session.actors import add_consumer, add_producer
from playground.session.backends import (
    BACKEND_FACTORIES,
    LIVE_ONLY_BACKENDS,
    DetachedBackend,
    cluster_problem,
    detached_message,
    kafka_configured,
    live_only,
)
from playground.session.cache import CACHE, CHECKPOINT_EVERY
from playground.session.commands import (
    apply_step,
    back,
    hint,
    kept_on_reset,
    predict,
    reset,
    run_one,
    set_pace,
    set_pipelines,
    set_running,
    step,
    validate_step,
)
from playground.session.create import client_key, create, create_unclaimed, fork, keep_text
from playground.session.live import (
    NAME_RE,
    CommandError,
    Live,
    actor_from_entry,
    actor_to_entry,
    free_play_actors,
    free_play_cluster,
    group_name,
    step_from_entry,
)
from playground.session.realcluster import close_all_at_exit, end, rerun
from playground.session.replay import exists, load, moment
from playground.session.runner import ensure_runner, ensure_watchdog, run_loop, run_speeds, set_speed
from playground.session.store import claim, drive_key, payloads

atexit.register(close_all_at_exit)

__all__ = [
    "BACKEND_FACTORIES",
    "CACHE",
    "CHECKPOINT_EVERY",
    "LIVE_ONLY_BACKENDS",
    "NAME_RE",
    "CommandError",
    "DetachedBackend",
    "Live",
    "actor_from_entry",
    "actor_to_entry",
    "add_consumer",
    "add_producer",
    "apply_step",
    "back",
    "claim",
    "client_key",
    "cluster_problem",
    "create",
    "create_unclaimed",
    "detached_message",
    "drive_key",
    "end",
    "ensure_runner",
    "ensure_watchdog",
    "exists",
    "fork",
    "free_play_actors",
    "free_play_cluster",
    "group_name",
    "hint",
    "kafka_configured",
    "keep_text",
    "kept_on_reset",
    "live_only",
    "load",
    "moment",
    "payloads",
    "predict",
    "rerun",
    "reset",
    "run_loop",
    "run_one",
    "run_speeds",
    "set_pace",
    "set_pipelines",
    "set_running",
    "set_speed",
    "step",
    "step_from_entry",
    "validate_step",
]
