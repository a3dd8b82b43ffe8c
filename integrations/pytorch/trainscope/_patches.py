"""The Python-side hooks trainscope installs while attached, all removable.

* ``torch.optim.Optimizer._optimizer_step_code``: every optimizer's ``step``
  (wrapped by ``Optimizer._hook_for_profile`` in torch 1.13) calls it after the
  step, so patching it at class level is a post-step hook for every optimizer,
  including ones created before attach. The original (a no-op the profiler
  traces) is still called.
* ``torch.distributed`` send/recv/isend/irecv and the collectives: c10d's
  RecordFunction events name neither the peer nor the process group, so the
  wrappers tag the call (one C++ call each way; collectives on the default
  group skip even that). The tag rides in c10's thread-local debug info, which
  c10d hands to the gloo worker thread that starts the collective's
  RecordFunction (csrc/collective_tag.h). Subgroups are named
  "pg:<name>[r0,r1,...]" with their global ranks (agent.proto).

* ``torch.autograd.profiler._prepare_profiler`` / ``_disable_profiler``: every
  torch profiler (torch.profiler.profile, its schedules, the legacy
  torch.autograd.profiler.profile, in torch 1.13 and 2.x alike) prepares
  through the first, where Kineto takes CUPTI, and stops through the second.
  Wrapping them lets GPU activity yield CUPTI before Kineto asks for it and
  take it back once no profiler runs (install_profiler_watch).

Threading: install/uninstall under trainscope's attach lock; the wrappers run
on whatever thread calls them.
"""

import functools
import inspect
import weakref
from typing import Callable, Dict, List, Optional, Tuple

import torch

_state = {"step_hook": None}  # the callable the optimizer patch forwards to
_originals: List[Tuple[object, str, object]] = []  # (owner, attribute, original)


def _patch(owner, name: str, replacement) -> None:
    _originals.append((owner, name, owner.__dict__[name] if isinstance(owner, type)
                       else getattr(owner, name)))
    setattr(owner, name, replacement)


def install_step_hook(on_step: Callable[[], None]) -> None:
    """Calls on_step() after every optimizer step (until uninstall_all)."""
    _state["step_hook"] = on_step
    optimizer_cls = torch.optim.Optimizer
    original = optimizer_cls.__dict__["_optimizer_step_code"]

    @functools.wraps(original)
    def _optimizer_step_code(self):
        original(self)
        hook = _state["step_hook"]
        if hook is not None:
            hook()

    _patch(optimizer_cls, "_optimizer_step_code", _optimizer_step_code)


# torch.distributed functions: (name, peer parameter or None).
_DISTRIBUTED = [
    ("send", "dst"), ("isend", "dst"), ("recv", "src"), ("irecv", "src"),
    ("all_reduce", None), ("broadcast", None), ("reduce", None), ("all_gather", None),
    ("all_gather_into_tensor", None), ("_all_gather_base", None), ("gather", None),
    ("scatter", None), ("reduce_scatter", None), ("reduce_scatter_tensor", None),
    ("_reduce_scatter_base", None), ("all_to_all", None), ("all_to_all_single", None),
    ("barrier", None),
]


# id(group) -> (weakref to the group, its name): computing a name walks c10d's
# tables, and tagged calls are frequent (every send/recv of a pipeline).
_group_names: Dict[int, Tuple[object, str]] = {}


def _group_ranks(group, c10d) -> Optional[List[int]]:
    """The group's global ranks, ascending; None when c10d does not say."""
    get_ranks = getattr(c10d, "get_process_group_ranks", None)  # torch >= 2.0
    try:
        if get_ranks is not None:
            return sorted(int(r) for r in get_ranks(group))
        return sorted(int(r) for r in c10d._pg_group_ranks[group])  # global -> group rank
    except Exception:  # e.g. GroupMember.NON_GROUP_MEMBER: the call does nothing anyway
        return None


def _group_name(group) -> str:
    """"" for the default group, else "pg:<name>[r0,r1,...]" with the group's
    global ranks ascending (agent.proto's group names: the collector reads the
    members from it). Cached per group object."""
    if group is None:
        return ""
    cached = _group_names.get(id(group))
    if cached is not None and cached[0]() is group:
        return cached[1]
    name = _compute_group_name(group)
    try:
        _group_names[id(group)] = (weakref.ref(group), name)
    except TypeError:  # not weak-referenceable: computed each time (no stale entry risk)
        pass
    return name


def _compute_group_name(group) -> str:
    from torch.distributed import distributed_c10d as c10d  # noqa: PLC0415
    world = getattr(c10d.GroupMember, "WORLD", None)
    if group is world:
        return ""
    try:
        if group is c10d._get_default_group():
            return ""
    except Exception:
        pass
    names = getattr(c10d, "_pg_names", None)
    if names is None:  # torch >= 2.1 keeps the tables on c10d._world
        names = getattr(getattr(c10d, "_world", None), "pg_names", None) or {}
    try:
        name = names.get(group)
    except Exception:
        name = None
    base = f"pg:{name}" if name else f"pg:@{id(group):x}"
    ranks = _group_ranks(group, c10d)
    return base if ranks is None else f"{base}[{','.join(map(str, ranks))}]"


def _global_rank(group, group_rank: int) -> int:
    """The global rank of `group_rank` in `group` (None: the default group)."""
    import torch.distributed as dist  # noqa: PLC0415
    if group is None or group is dist.GroupMember.WORLD:
        return group_rank
    try:
        return dist.get_global_rank(group, group_rank)
    except Exception:
        return -1


def _wrap(fn, peer_param: Optional[str], session):
    params = list(inspect.signature(fn).parameters)
    group_index = params.index("group") if "group" in params else None
    peer_index = params.index(peer_param) if peer_param in params else None
    set_tag = session.set_collective_tag
    clear_tag = session.clear_collective_tag

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        group = kwargs.get("group") if group_index is None or len(args) <= group_index \
            else args[group_index]
        if peer_index is None:
            if group is None:
                return fn(*args, **kwargs)  # default group: nothing to tag
            peer = -1
        else:
            peer = kwargs.get(peer_param) if len(args) <= peer_index else args[peer_index]
            if peer is None:
                # torch >= 2.5 also names the peer by its rank in the group
                # (group_dst / group_src); torch 2.x's send calls isend so.
                group_peer = kwargs.get("group_" + peer_param)
                peer = -1 if group_peer is None else _global_rank(group, int(group_peer))
            peer = int(peer)
        set_tag(peer, _group_name(group))
        try:
            return fn(*args, **kwargs)
        finally:
            clear_tag()

    wrapper.__trainscope_wrapped__ = fn
    return wrapper


def install_distributed_tags(session) -> None:
    """Wraps torch.distributed's send/recv and collectives to tag peer and group."""
    try:
        import torch.distributed as dist  # noqa: PLC0415
        if not dist.is_available():
            return
        from torch.distributed import distributed_c10d as c10d  # noqa: PLC0415
    except Exception:
        return
    wrapped: Dict[int, object] = {}
    for name, peer_param in _DISTRIBUTED:
        fn = getattr(c10d, name, None)
        if fn is None or hasattr(fn, "__trainscope_wrapped__"):
            continue
        wrapper = wrapped.setdefault(id(fn), _wrap(fn, peer_param, session))
        _patch(c10d, name, wrapper)
        if getattr(dist, name, None) is fn:
            _patch(dist, name, wrapper)


def profiler_active() -> bool:
    """Whether a torch profiler is recording in this process now."""
    try:
        return bool(torch._C._autograd._profiler_enabled())
    except Exception:
        return False


def install_profiler_watch(on_start: Callable[[], None], on_stop: Callable[[], None]) -> None:
    """Calls on_start() before a torch profiler prepares (Kineto takes CUPTI
    there) and on_stop() after one is disabled. Neither may raise into the
    profiler: a failing callback is reported once and the profiler runs on."""
    try:
        from torch.autograd import profiler as autograd_profiler  # noqa: PLC0415
    except Exception:
        return
    prepare = getattr(autograd_profiler, "_prepare_profiler", None)
    disable = getattr(autograd_profiler, "_disable_profiler", None)
    if prepare is None or disable is None or hasattr(prepare, "__trainscope_wrapped__"):
        return

    def guarded(callback):
        try:
            callback()
        except Exception as e:  # the user's profiler must run regardless
            if not _state.get("profiler_error_said"):
                _state["profiler_error_said"] = True
                import sys  # noqa: PLC0415
                print(f"trainscope: GPU hand-over around torch.profiler failed: {e}",
                      file=sys.stderr)

    @functools.wraps(prepare)
    def _prepare_profiler(*args, **kwargs):
        guarded(on_start)
        return prepare(*args, **kwargs)

    @functools.wraps(disable)
    def _disable_profiler(*args, **kwargs):
        try:
            return disable(*args, **kwargs)
        finally:
            guarded(on_stop)

    _prepare_profiler.__trainscope_wrapped__ = prepare
    _disable_profiler.__trainscope_wrapped__ = disable
    _patch(autograd_profiler, "_prepare_profiler", _prepare_profiler)
    _patch(autograd_profiler, "_disable_profiler", _disable_profiler)


def uninstall_all() -> None:
    """Restores everything install_* replaced, newest first."""
    _state["step_hook"] = None
    _group_names.clear()
    while _originals:
        owner, name, original = _originals.pop()
        setattr(owner, name, original)
