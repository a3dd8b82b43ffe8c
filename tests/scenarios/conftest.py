"""Fixtures for the scenario suite: the plugin tests' `collector` and
`trainscope_module` fixtures and their helpers (tests/python/conftest.py and
jobs_util.py), loaded under names of their own so both suites run together."""

import importlib.util
import pathlib
import sys

_PYTHON_TESTS = pathlib.Path(__file__).resolve().parents[1] / "python"
if str(_PYTHON_TESTS) not in sys.path:
    sys.path.insert(0, str(_PYTHON_TESTS))  # jobs_util


def _load(name: str, path: pathlib.Path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # the tests reach its helpers (CLI_BIN) by this name
    spec.loader.exec_module(module)
    return module


support = _load("trainscope_python_test_support", _PYTHON_TESTS / "conftest.py")
collector = support.collector
trainscope_module = support.trainscope_module
pytest_configure = support.pytest_configure
