"""Loads trainscope's C++ extension after checking it matches this torch.

The extension links against libtorch; built for one torch and imported into
another it would fail with an unresolved symbol (or worse, load and crash).
CMake writes the torch version it built against into ``_build_info.py``, which
is compared here with ``torch.__version__`` before ``_C`` is imported.
"""

import re

import torch


def _release(version: str):
    """(major, minor, patch) of a torch version string such as "1.13.0a0+git"."""
    m = re.match(r"^(\d+)\.(\d+)(?:\.(\d+))?", version)
    if m is None:
        return None
    return (int(m.group(1)), int(m.group(2)), int(m.group(3) or 0))


def check_torch_version(compiled: str, runtime: str) -> None:
    """Raises ImportError naming both versions unless their releases match."""
    if _release(compiled) is None or _release(compiled) != _release(runtime):
        raise ImportError(
            f"trainscope's C++ extension was built for torch {compiled}, but this process "
            f"imports torch {runtime} ({torch.__file__}); rebuild trainscope against this torch "
            f"(cmake --build <build dir> --target trainscope_torch) or use the Python it was "
            f"built for (/usr/bin/python3 on Debian)")


def load_extension():
    """Returns the ``trainscope._C`` module, or raises ImportError saying why not."""
    try:
        from . import _build_info  # written by CMake next to _C
    except ImportError as e:
        raise ImportError(
            "trainscope's C++ extension is not built next to this package: build the "
            "'trainscope_torch' target and put <build dir>/python on PYTHONPATH") from e
    check_torch_version(_build_info.TORCH_VERSION, torch.__version__)
    from . import _C  # noqa: PLC0415 (must come after the check)
    return _C
