"""Who this process is in its job: collector, job id, rank, world size, ...

Sources, first that applies: attach()'s arguments; torch.distributed once it is
initialised; the environment of torchrun / torch.distributed.run (RANK,
LOCAL_RANK, WORLD_SIZE, TORCHELASTIC_RUN_ID, TORCHELASTIC_RESTART_COUNT,
MASTER_ADDR / MASTER_PORT) and TRAINSCOPE_* variables; defaults.
"""

import dataclasses
import os
import re
import socket
import sys
from typing import Optional

import torch

DEFAULT_COLLECTOR = "127.0.0.1:7070"
_JOB_CHARS = re.compile(r"[^A-Za-z0-9._-]+")


@dataclasses.dataclass
class Identity:
    collector: str
    job: str
    run_id: str
    rank: int
    world_size: int
    local_rank: int
    restart_count: int
    token: str
    host: str
    device: str


def _env_int(name: str) -> Optional[int]:
    value = os.environ.get(name)
    if value is None or value.strip() == "":
        return None
    try:
        return int(value)
    except ValueError:
        raise ValueError(f"environment variable {name}={value!r} is not an integer") from None


def _dist_rank_world():
    """(rank, world_size) from an initialised default process group, else (None, None)."""
    try:
        import torch.distributed as dist  # noqa: PLC0415
        if dist.is_available() and dist.is_initialized():
            return dist.get_rank(), dist.get_world_size()
    except Exception:  # a half-initialised group must not stop attach
        pass
    return None, None


def _script_name() -> str:
    argv0 = sys.argv[0] if sys.argv and sys.argv[0] not in ("", "-c", "-m") else "python"
    name = os.path.splitext(os.path.basename(argv0))[0] or "python"
    return name


def sanitize_job(job: str) -> str:
    """Maps any text onto the protocol's job ids: [A-Za-z0-9._-]{1,128}, not "." or ".."
    (trainscope/proto/job_id.h; a job id names a directory)."""
    cleaned = _JOB_CHARS.sub("-", job).strip("-")[:128]
    return "job" if cleaned in ("", ".", "..") else cleaned


def default_job() -> str:
    job = os.environ.get("TRAINSCOPE_JOB") or os.environ.get("TORCHELASTIC_RUN_ID")
    if job:
        return sanitize_job(job)
    port = os.environ.get("MASTER_PORT")
    # One process without a launcher: the pid keeps two runs of a script apart.
    suffix = port if port else str(os.getpid())
    return sanitize_job(f"{_script_name()}-{suffix}")


def _device(local_rank: int) -> str:
    try:
        if torch.cuda.is_available():
            index = torch.cuda.current_device() if torch.cuda.is_initialized() else local_rank
            return f"cuda:{index}"
    except Exception:
        pass
    return "cpu"


def resolve(collector=None, job=None, rank=None, world_size=None, local_rank=None,
            restart_count=None, token=None) -> Identity:
    dist_rank, dist_world = _dist_rank_world()
    if rank is None:
        rank = dist_rank if dist_rank is not None else _env_int("RANK")
    if world_size is None:
        world_size = dist_world if dist_world is not None else _env_int("WORLD_SIZE")
    if local_rank is None:
        local_rank = _env_int("LOCAL_RANK")
    rank = 0 if rank is None else int(rank)
    world_size = 1 if world_size is None else int(world_size)
    local_rank = rank if local_rank is None else int(local_rank)
    if world_size < 1 or not 0 <= rank < world_size:
        raise ValueError(f"trainscope.attach: rank {rank} is outside world_size {world_size} "
                         f"(expected 0 <= rank < world_size)")
    if restart_count is None:
        restart_count = _env_int("TORCHELASTIC_RESTART_COUNT") or 0
    return Identity(
        collector=collector or os.environ.get("TRAINSCOPE_COLLECTOR") or DEFAULT_COLLECTOR,
        job=sanitize_job(job) if job else default_job(),
        run_id=os.environ.get("TORCHELASTIC_RUN_ID", ""),
        rank=rank,
        world_size=world_size,
        local_rank=local_rank,
        restart_count=int(restart_count),
        token=token if token is not None else os.environ.get("TRAINSCOPE_TOKEN", ""),
        host=socket.gethostname(),
        device=_device(local_rank),
    )
