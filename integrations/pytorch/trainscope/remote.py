"""Entry points for `trainscope attach` / `trainscope detach` on live processes.

The CLI enters a running Python process with gdb and queues a call
(Py_AddPendingCall) that the interpreter runs on its main thread, between
two bytecodes, holding the GIL; that call imports this module and runs
attach_from_outside(config) or detach_from_outside(), then writes what they
return (or the exception) to a status file the CLI reads.

Both are also safe on any other thread while the main thread trains: they
only call trainscope.attach()/detach(), which hold the GIL briefly to
register or remove the operator callbacks and the class-level optimizer
patch (Optimizer._optimizer_step_code, which every optimizer's step calls,
including optimizers created before the attach), so step marks start at the
next optimizer step. They never raise for "already attached" / "not
attached": the caller gets a dict that says so.
"""

import os


def _identity():
    """(rank, world_size, local_rank) of this process, or Nones when unknown.

    torch.distributed first (a rank spawned by torch.multiprocessing knows
    its rank only there), then the launcher's environment variables.
    """
    try:
        import torch.distributed as dist

        if dist.is_available() and dist.is_initialized():
            local = os.environ.get("LOCAL_RANK")
            return (
                dist.get_rank(),
                dist.get_world_size(),
                int(local) if local and local.isdigit() else None,
            )
    except Exception:
        pass

    def env_int(name):
        value = os.environ.get(name, "")
        return int(value) if value.isdigit() else None

    return env_int("RANK"), env_int("WORLD_SIZE"), env_int("LOCAL_RANK")


def _describe(session, fallback):
    """What the CLI prints: job, rank, world size, collector, recording."""
    out = dict(fallback)
    for key, names in (
        ("job", ("job", "job_id")),
        ("rank", ("rank",)),
        ("world_size", ("world_size",)),
        ("collector", ("collector", "collector_address")),
        ("recording", ("recording",)),
    ):
        for name in names:
            value = getattr(session, name, None)
            if callable(value):
                try:
                    value = value()
                except Exception:
                    value = None
            if isinstance(value, (str, int, float, bool)) and not isinstance(value, type):
                out[key] = value
                break
    return out


def attach_from_outside(config):
    """Attaches trainscope to this (running) process.

    config: collector ("HOST:PORT"), job, token (each optional; missing ones
    take trainscope.attach's defaults from this process's environment) and
    dormant (bool). Returns a dict for the CLI: job, rank, world_size,
    collector, recording, already_attached.
    """
    import trainscope

    if trainscope.is_attached():
        return _describe(trainscope.session(), {"already_attached": True})
    rank, world_size, local_rank = _identity()
    kwargs = {"recording": not bool(config.get("dormant", False))}
    for key in ("collector", "job", "token"):
        if config.get(key):
            kwargs[key] = str(config[key])
    if rank is not None and world_size is not None and world_size > 0:
        kwargs["rank"] = rank
        kwargs["world_size"] = world_size
        if local_rank is not None:
            kwargs["local_rank"] = local_rank
    session = trainscope.attach(**kwargs)
    fallback = {
        "already_attached": False,
        "recording": kwargs["recording"],
        "pid": os.getpid(),
    }
    for key in ("collector", "job", "rank", "world_size"):
        if key in kwargs:
            fallback[key] = kwargs[key]
    return _describe(session, fallback)


def detach_from_outside():
    """Detaches trainscope from this process; training goes on at full speed.

    Returns {"was_attached": bool}.
    """
    import trainscope

    was_attached = bool(trainscope.is_attached())
    if was_attached:
        trainscope.detach()
    return {"was_attached": was_attached}
