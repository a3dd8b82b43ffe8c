"""Loads trainscope's loss_contribution.py on its own, without importing the
trainscope package (whose __init__ loads the compiled extension): the
benchmarks need only PyTorch."""

import importlib.util
import pathlib

MODULE_PATH = (pathlib.Path(__file__).resolve().parents[2]
               / "integrations" / "pytorch" / "trainscope" / "loss_contribution.py")


def load_loss_contribution():
    """The loss_contribution module, loaded from MODULE_PATH."""
    if not MODULE_PATH.exists():
        raise FileNotFoundError(f"the module under test is missing: {MODULE_PATH}")
    spec = importlib.util.spec_from_file_location("loss_contribution", MODULE_PATH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
