"""attach / detach and the per-process session behind trainscope's API.

Threading: attach/detach/session/stats may be called from any thread (also
from code injected into a running process by gdb, next to a training thread
that keeps running): one lock serialises them. Step boundaries, phases and
on_halt run on the training thread. The exit hooks run on the thread that
ends the process; the fork hook in the child, before anything else runs.

Ending: a process that ends normally says goodbye to the collector without
the script calling detach() (see _close_at_exit): the collector then knows
the rank finished rather than vanished, and raises no lost_device for it.
"""

import atexit
import ctypes
import multiprocessing.util
import os
import sys
import threading
from typing import Callable, Optional

import torch

from . import _identity, _patches
from ._loader import load_extension

_C = load_extension()

PHASES = {"data_wait": 1, "forward": 2, "backward": 3, "optimizer": 4}


class HaltRequested(Exception):
    """Raised at the step boundary the collector chose for a halt (every rank
    stops at the same one). ``reason`` is what the halt's requester gave."""

    def __init__(self, reason: str):
        super().__init__(f"trainscope: training halted: {reason}")
        self.reason = reason


class Session:
    """One attachment: returned by trainscope.attach() and trainscope.session()."""

    def __init__(self, native, identity: _identity.Identity,
                 on_halt: Optional[Callable[[str], None]], gpu: bool = False):
        self._native = native
        self._gpu = gpu  # GPU activity was asked for
        self._profiler_yields = 0
        self._said_profiler = False
        self.identity = identity
        self._on_halt = on_halt
        self._manual_steps = False
        self._pid = os.getpid()  # a forked child inherits this object, not the agent's threads
        self._cuda_memory = identity.device.startswith("cuda")

    job = property(lambda self: self.identity.job)
    rank = property(lambda self: self.identity.rank)
    world_size = property(lambda self: self.identity.world_size)
    collector = property(lambda self: self.identity.collector)

    @property
    def token(self) -> str:
        """The job's token (the collector's, once it generated one)."""
        return self._native.job_token

    @property
    def recording(self) -> bool:
        return self._native.recording

    @property
    def step(self) -> int:
        """The step now running (the value of the last step mark)."""
        return self._native.step

    @property
    def attached(self) -> bool:
        return not self._native.closed

    def stats(self) -> dict:
        d = self._native.stats()
        d["gpu_profiler_yields"] = self._profiler_yields
        d["step"] = self._native.step
        d["attached"] = not self._native.closed
        return d

    def detach(self, timeout_s: float = 5.0) -> None:
        if _state.session is self:
            detach(timeout_s)

    # -- CUPTI hand-over ---------------------------------------------------
    # Only one CUPTI activity client can run in a process. How trainscope
    # detects another one (docs/pytorch-plugin.md, "GPU activity"):
    #  1. torch's profilers, through the profiler watch (_patches): before
    #     one prepares, GPU activity yields CUPTI; once none is recording
    #     after one stopped, it takes CUPTI back. Said once per session.
    #  2. any other client (Nsight Systems, a Kineto started from C++, ...):
    #     CUPTI refuses the agent's probe subscription
    #     (CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED); the agent yields,
    #     says so once and retries at step marks.
    #  3. at attach, a refused probe while no torch profiler records and no
    #     CUDA injection tool is loaded (CUDA_INJECTION64_PATH, how Nsight
    #     tools attach) is the subscription Kineto keeps for good after the
    #     process's first torch.profiler run: trainscope takes CUPTI back.

    def _profiler_starting(self) -> None:
        if not self._gpu:
            return
        self._profiler_yields += 1
        self._native.yield_gpu()
        if not self._said_profiler:
            self._said_profiler = True
            state = self._native.stats().get("gpu_activity", "unknown")
            print("trainscope: torch.profiler is starting: trainscope's GPU activity lets CUPTI "
                  "go to it (one CUPTI activity client per process; kernels are not recorded "
                  "while it runs, operators are) and takes it back when it stops "
                  f"(GPU activity {state}; said once)", file=sys.stderr, flush=True)

    def _profiler_stopped(self) -> None:
        if self._gpu and not _patches.profiler_active():
            self._native.resume_gpu()

    def _take_cupti_from_a_finished_profiler(self) -> None:
        """Case 3 above, at attach."""
        if not self._gpu or self._native.stats().get("gpu_activity") != "yielded":
            return
        if _patches.profiler_active():
            self._profiler_starting()  # it ends through the watch
        elif not os.environ.get("CUDA_INJECTION64_PATH"):
            self._native.resume_gpu()

    # -- training thread --------------------------------------------------

    def _device_memory(self):
        """(allocated, peak, reserved) bytes of this rank's GPU as torch's CUDA
        caching allocator reports them, or Nones (no CUDA device, CUDA not
        initialised yet, a failing query): the agent then reports the process's
        resident set. The peak is torch's max_memory_allocated: since the
        process started or the script's last torch.cuda.reset_peak_memory_stats
        (trainscope never resets it: the script may read it too)."""
        if not self._cuda_memory:
            return None, None, None
        try:
            cuda = torch.cuda
            if cuda.is_initialized():
                return (int(cuda.memory_allocated()), int(cuda.max_memory_allocated()),
                        int(cuda.memory_reserved()))
        except Exception:
            pass
        return None, None, None

    def _boundary(self, completed_step: Optional[int]) -> None:
        allocated, peak, reserved = self._device_memory()
        reason = self._native.step_boundary(completed_step, allocated, peak, reserved)
        if reason is not None:
            self._halt(reason)

    @property
    def on_halt(self) -> Optional[Callable[[str], None]]:
        """The callback a halt calls before raising HaltRequested (replaceable)."""
        return self._on_halt

    @on_halt.setter
    def on_halt(self, callback: Optional[Callable[[str], None]]) -> None:
        self._on_halt = callback

    @property
    def stage(self) -> Optional[int]:
        """The pipeline stage this device reports (set_stage), None if unset."""
        return self._native.stage

    def _on_optimizer_step(self) -> None:
        if not self._manual_steps:
            self._boundary(None)

    def _halt(self, reason: str) -> None:
        self._native.halt_handled()  # the SIGTERM fallback stands down
        if self._on_halt is not None:
            self._on_halt(reason)
        raise HaltRequested(reason)


class _State:
    lock = threading.RLock()
    session: Optional[Session] = None
    retired = None  # the last closed native session, kept alive one cycle (see detach)
    last_stats: Optional[dict] = None
    deferred = False
    stage: Optional[int] = None  # set_stage before attach: applied at attach


_state = _State()


def _stage_from_env() -> Optional[int]:
    text = os.environ.get("TRAINSCOPE_STAGE", "").strip()
    if not text:
        return None
    try:
        stage = int(text)
    except ValueError:
        stage = -1
    if stage < 0:
        raise ValueError(f"TRAINSCOPE_STAGE={text!r}: expected a pipeline stage >= 0")
    return stage


def _gpu_from_env() -> bool:
    """GPU activity unless asked otherwise: TRAINSCOPE_GPU=0/1, else whether
    torch sees a CUDA device (a CPU-only torch or machine: off, no message)."""
    text = os.environ.get("TRAINSCOPE_GPU", "").strip()
    if text in ("0", "1"):
        return text == "1"
    if text:
        raise ValueError(f"TRAINSCOPE_GPU={text!r}: expected 0 or 1")
    try:
        return bool(torch.cuda.is_available())
    except Exception:
        return False


def _halt_policy_from_env() -> dict:
    """The job's halt policy as `trainscope run --halt-when R --for K` sets it:
    TRAINSCOPE_HALT_WHEN (rule names, comma-separated), TRAINSCOPE_HALT_FOR
    (steps) and TRAINSCOPE_HALT_BELOW_EFFICIENCY. The collector checks it."""
    when = [r.strip() for r in os.environ.get("TRAINSCOPE_HALT_WHEN", "").split(",") if r.strip()]
    efficiency_text = os.environ.get("TRAINSCOPE_HALT_BELOW_EFFICIENCY", "").strip()
    if not when and not efficiency_text:
        return {}
    steps_text = os.environ.get("TRAINSCOPE_HALT_FOR", "").strip()
    try:
        steps = int(steps_text)
        efficiency = float(efficiency_text) if efficiency_text else 0.0
    except ValueError:
        raise ValueError(f"TRAINSCOPE_HALT_FOR={steps_text!r} / TRAINSCOPE_HALT_BELOW_EFFICIENCY="
                         f"{efficiency_text!r}: expected a step count and a fraction") from None
    return {"halt_when": when, "halt_for_steps": steps, "halt_below_efficiency": efficiency}


def attach(collector: Optional[str] = None, job: Optional[str] = None,
           rank: Optional[int] = None, world_size: Optional[int] = None,
           local_rank: Optional[int] = None, restart_count: Optional[int] = None,
           token: Optional[str] = None, recording: bool = True,
           on_halt: Optional[Callable[[str], None]] = None, halt_grace_s: Optional[float] = 30.0,
           shapes: bool = True, **advanced) -> Session:
    """Starts recording this process into a trainscope collector.

    Idempotent: while attached (also by TRAINSCOPE_COLLECTOR's auto-attach or
    ``trainscope attach --pid``), returns the current session; only a given
    ``on_halt`` is applied to it (it replaces the session's callback), every
    other argument is ignored. Never waits for the collector (events are
    buffered, then dropped and counted). The pipeline stage is the one given
    to set_stage(), else the environment's TRAINSCOPE_STAGE, if any.
    ``halt_grace_s=None`` (or <= 0) disables the SIGTERM fallback of a halt.
    Advanced keywords: first_step, shapes_every_n_steps, clock ("auto" or
    "monotonic"), log_to_stderr, shutdown_timeout_s, and the job's halt policy
    halt_when (rule names), halt_for_steps, halt_below_efficiency (default:
    from TRAINSCOPE_HALT_WHEN, TRAINSCOPE_HALT_FOR, TRAINSCOPE_HALT_BELOW_EFFICIENCY),
    gpu (kernels, copies and memsets through CUPTI, each tied to its operator;
    default: TRAINSCOPE_GPU=1/0, else on when torch sees a CUDA device) and
    cupti_library (default: found beside torch's CUDA libraries).
    """
    with _state.lock:
        if _state.session is not None:
            if on_halt is not None:
                _state.session._on_halt = on_halt
            return _state.session
        stage = _state.stage if _state.stage is not None else _stage_from_env()
        if _state.deferred:  # an explicit attach supersedes a deferred auto-attach
            _state.deferred = False
            _patches.uninstall_all()
        identity = _identity.resolve(collector, job, rank, world_size, local_rank,
                                     restart_count, token)
        if "halt_when" not in advanced and "halt_below_efficiency" not in advanced:
            advanced.update(_halt_policy_from_env())
        gpu = advanced.pop("gpu", None)
        advanced["gpu_activity"] = _gpu_from_env() if gpu is None else bool(gpu)
        native = _C.Session(
            collector=identity.collector, job=identity.job, run_id=identity.run_id,
            token=identity.token, rank=identity.rank, world_size=identity.world_size,
            local_rank=identity.local_rank, restart_count=identity.restart_count,
            host=identity.host, device=identity.device, framework_version=torch.__version__,
            recording=bool(recording), shapes=bool(shapes),
            halt_grace_s=halt_grace_s if halt_grace_s and halt_grace_s > 0 else None,
            **advanced)
        session = Session(native, identity, on_halt, gpu=advanced["gpu_activity"])
        try:
            if stage is not None:
                native.set_stage(stage)
            _patches.install_step_hook(session._on_optimizer_step)
            _patches.install_distributed_tags(native)
            _patches.install_profiler_watch(session._profiler_starting,
                                            session._profiler_stopped)
            session._take_cupti_from_a_finished_profiler()
        except Exception:
            _patches.uninstall_all()
            native.close(0.0)
            raise
        _state.session = session
        _install_exit_hooks()
        return session


def detach(timeout_s: float = 5.0) -> None:
    """Removes every callback, hook and patch, flushes what was recorded (for
    at most ``timeout_s``) and disconnects. The job runs on at full speed."""
    _detach(timeout_s)


def _detach(timeout_s: float, error: str = "") -> None:
    """detach(); `error` (the goodbye's): why the process ends abnormally."""
    with _state.lock:
        session = _state.session
        if session is None:
            return
        _state.session = None
        _patches.uninstall_all()
        session._native.close(float(timeout_s), error)
        _state.last_stats = session.stats()
        # An operator callback that read the session's pointers just before they
        # were unpublished may still be using them: free them one cycle later.
        _state.retired = session._native


def step(step: Optional[int] = None) -> None:
    """A step boundary for loops the optimizer hook does not see. ``step`` is
    the index of the step that just ended (default: one more than the last).
    Once called, optimizer steps no longer mark boundaries themselves.
    Raises HaltRequested at the boundary a halt chose (after on_halt)."""
    session = _state.session
    if session is None:
        return
    session._manual_steps = True
    session._boundary(None if step is None else int(step))


def set_stage(stage: int) -> None:
    """Declares this process's pipeline stage (0 = first). Recorded at once
    (the "pipeline.stage" counter) and again at every step boundary, so a
    collector that connects later still learns it. Callable before attach
    (applied when attaching) and without trainscope attached; it overrides
    the environment's TRAINSCOPE_STAGE."""
    stage = int(stage)
    if stage < 0:
        raise ValueError(f"trainscope.set_stage: expected a stage >= 0, got {stage}")
    with _state.lock:
        _state.stage = stage
        session = _state.session
        if session is not None:
            session._native.set_stage(stage)


class phase:
    """Context manager marking an explicit phase of the current step:
    "data_wait" | "forward" | "backward" | "optimizer". While any explicit
    phase is used, trainscope no longer derives phases on its own."""

    __slots__ = ("_kind", "_start")

    def __init__(self, name: str):
        kind = PHASES.get(name)
        if kind is None:
            raise ValueError(f"trainscope.phase: unknown phase {name!r}; expected one of "
                             f"{', '.join(PHASES)}")
        self._kind = kind
        self._start = 0

    def __enter__(self):
        self._start = _C.now_ns()
        return self

    def __exit__(self, *exc):
        session = _state.session
        if session is not None:
            session._native.record_phase(self._kind, self._start, _C.now_ns())
        return False


def is_attached() -> bool:
    return _state.session is not None


def session() -> Optional[Session]:
    return _state.session


def stats() -> dict:
    """The agent's counters (see agent_stats.h) plus ``step`` and ``attached``;
    after detach, the final counters of the last session; {} before any."""
    session = _state.session
    if session is not None:
        return session.stats()
    return dict(_state.last_stats) if _state.last_stats is not None else {}


def _env_flag(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in ("1", "true", "yes", "on")


def _attach_from_env() -> Optional[Session]:
    """Auto-attach for the sitecustomize of ``trainscope run``: attaches when
    TRAINSCOPE_COLLECTOR is set (TRAINSCOPE_JOB, TRAINSCOPE_TOKEN and
    TRAINSCOPE_DORMANT=1 apply). When the process does not know its rank yet
    (no RANK variable and no process group, e.g. a torch.multiprocessing.spawn
    child or a launcher's parent), attaching waits until
    torch.distributed.init_process_group returns or, without one, until the
    first optimizer step. Never raises: a failure is reported on stderr."""
    if not os.environ.get("TRAINSCOPE_COLLECTOR"):
        return None
    try:
        rank_known = "RANK" in os.environ or _identity._dist_rank_world()[0] is not None
        if rank_known:
            return attach(recording=not _env_flag("TRAINSCOPE_DORMANT"))
        _defer_attach()
    except Exception as e:  # the user's program must run regardless
        print(f"trainscope: auto-attach failed: {e}", file=sys.stderr)
    return None


def _attach_deferred() -> None:
    try:
        with _state.lock:
            if not _state.deferred:
                return
            _state.deferred = False
            _patches.uninstall_all()  # the deferral hooks
        attach(recording=not _env_flag("TRAINSCOPE_DORMANT"))
    except Exception as e:
        print(f"trainscope: auto-attach failed: {e}", file=sys.stderr)


def _defer_attach() -> None:
    with _state.lock:
        if _state.deferred or _state.session is not None:
            return
        _state.deferred = True
        _patches.install_step_hook(_attach_deferred)
        try:
            import torch.distributed as dist  # noqa: PLC0415
            if dist.is_available():
                from torch.distributed import distributed_c10d as c10d  # noqa: PLC0415
                init = c10d.init_process_group

                def init_process_group(*args, **kwargs):
                    result = init(*args, **kwargs)
                    _attach_deferred()
                    return result

                _patches._patch(c10d, "init_process_group", init_process_group)
                if getattr(dist, "init_process_group", None) is init:
                    _patches._patch(dist, "init_process_group", init_process_group)
        except Exception:
            pass


# ---------------------------------------------------------------- ending

# How long an exiting process waits, at most, for its last events to reach the
# collector before saying goodbye (a dead collector costs the exit this much,
# plus the agent's 0.5 s of slack to cancel a blocked write).
DEFAULT_EXIT_TIMEOUT_S = 2.0
# Multiprocessing finalizers run in descending priority; this runs before the
# ones of priority 0 and below (e.g. a Manager's), while torch is still usable.
_EXIT_PRIORITY = 100


def _exit_timeout_s() -> float:
    text = os.environ.get("TRAINSCOPE_EXIT_TIMEOUT_S", "").strip()
    try:
        return max(0.0, float(text)) if text else DEFAULT_EXIT_TIMEOUT_S
    except ValueError:
        return DEFAULT_EXIT_TIMEOUT_S


def _leak(native) -> None:
    """Keeps a native session alive until the process ends: its destructor
    would say goodbye (an unclean end must not) or, in a forked child, join
    threads that exist only in the parent and hang."""
    try:
        ctypes.pythonapi.Py_IncRef(ctypes.py_object(native))
    except Exception:
        _leaked.append(native)


_leaked: list = []


def _abnormal_end() -> str:
    """Why the process ends abnormally, or "" when it ends normally: an
    exception on its way out (a multiprocessing child's finalizers run inside
    the `finally` its run() unwinds through, so sys.exc_info() shows it),
    SystemExit with a code other than 0 or None, or an uncaught exception
    reported by the interpreter (sys.last_value, set before the atexit
    handlers run). HaltRequested is a normal end. `sys.exit(1)` at the top
    level of a script is indistinguishable from a clean exit here."""
    def why(exc) -> str:
        if exc is None or isinstance(exc, HaltRequested):  # a halt stops ranks on purpose
            return ""
        if isinstance(exc, SystemExit) and exc.code in (None, 0):
            return ""
        return f"{type(exc).__name__}: {exc}"[:500]

    for exc in (sys.exc_info()[1], getattr(sys, "last_value", None),
                getattr(sys, "last_exc", None)):
        if why(exc):
            return why(exc)
    return ""


def _close_at_exit() -> None:
    """Says goodbye when the process ends normally: interpreter exit and
    sys.exit (atexit), the end of a multiprocessing / torch.multiprocessing
    worker, spawned or forked (they leave through os._exit after running
    multiprocessing's finalizers, never through atexit). Bounded by
    TRAINSCOPE_EXIT_TIMEOUT_S (default 2 s). An abnormal end (an exception on
    its way out, e.g. a collective broken by a peer that died) says goodbye
    with the error: the rank did not vanish, it failed, and the collector
    keeps the one that vanished first apart from the peers it took down.
    Never raises: the process is ending anyway."""
    try:
        with _state.lock:
            session = _state.session
            if session is None or session._pid != os.getpid():
                return
        _detach(_exit_timeout_s(), _abnormal_end())
    except Exception as e:
        try:
            print(f"trainscope: closing at exit failed: {e}", file=sys.stderr)
        except Exception:
            pass


_exit_hooks_pid: Optional[int] = None


def _install_exit_hooks() -> None:
    """Once per process (a forked child installs its own: the parent's
    multiprocessing finalizers are cleared in a multiprocessing child)."""
    global _exit_hooks_pid
    if _exit_hooks_pid == os.getpid():
        return
    _exit_hooks_pid = os.getpid()
    atexit.register(_close_at_exit)
    multiprocessing.util.Finalize(None, _close_at_exit, exitpriority=_EXIT_PRIORITY)


def _after_fork_in_child() -> None:
    """A forked child (a DataLoader worker, a fork-started worker) inherits the
    parent's session but none of its agent's threads: it forgets the session
    without closing it (closing would wait for threads that are not there)
    and removes the Python patches, so the child runs at full speed and may
    attach on its own (a fork-started rank attaches at init_process_group)."""
    _state.lock = threading.RLock()  # a parent's thread may have held it at the fork
    session = _state.session
    if session is None:
        return
    _state.session = None
    _leak(session._native)
    try:
        _patches.uninstall_all()
    except Exception:
        pass


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
