"""trainscope: in-situ profiler and live monitor for PyTorch training.

    import trainscope
    trainscope.attach(collector="127.0.0.1:7070", job="resnet", on_halt=save_checkpoint)
    for batch in loader:            # every optimizer.step() marks a step boundary
        ...
    trainscope.detach()

Records every operator (RecordFunction), collective and send/recv, step marks,
phases, FLOPs of matrix/convolution operators and memory per step into the
trainscope agent, which streams them to the collector. LossContribution (see
loss_contribution.py) finds the training items that resist learning. See _session.py for the
full API and docs/ for the collector, CLI and viewer.
"""

from ._session import (  # noqa: F401
    HaltRequested,
    Session,
    _attach_from_env,
    attach,
    detach,
    is_attached,
    phase,
    session,
    set_stage,
    stats,
    step,
)
from ._session import _C  # noqa: F401
from .loss_contribution import LossContribution, TrackedDataset, track  # noqa: F401

__all__ = ["attach", "detach", "step", "phase", "set_stage", "HaltRequested", "is_attached",
           "stats", "session", "Session", "track", "TrackedDataset", "LossContribution"]
