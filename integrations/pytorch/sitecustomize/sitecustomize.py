"""trainscope auto-attach, with no change to the training code.

`trainscope run -- PROGRAM ...` puts this directory first on PYTHONPATH (and
the trainscope package's directory after it) and sets TRAINSCOPE_COLLECTOR;
doing the same by hand works too. Python imports this module at start-up in
every process, including the ranks that torchrun or
torch.multiprocessing.spawn start. It

  1. runs the sitecustomize it shadows (Debian's, a virtualenv's), so that
     nothing the interpreter did before changes;
  2. when TRAINSCOPE_COLLECTOR is set, waits for `import torch` (processes
     that never import torch pay nothing: no torch import at start-up) and
     then calls trainscope._attach_from_env(): it attaches at once when the
     rank is known (RANK set, as torchrun does), otherwise right after
     torch.distributed.init_process_group or at the first optimizer step.
     Launchers (torchrun's agent, the parent of mp.spawn) do neither, so
     they never attach in a rank's place.

It never breaks the interpreter: any failure prints one line on stderr and
the program goes on without trainscope. TRAINSCOPE_JOB, TRAINSCOPE_TOKEN and
TRAINSCOPE_DORMANT=1 (recording off until `trainscope enable JOB`) apply.
"""

import os
import sys

_warned = set()


def _warn(what, exc):
    if what in _warned:
        return  # one line per cause
    _warned.add(what)
    try:
        sys.stderr.write(
            "trainscope: auto-attach: %s failed, the program goes on without trainscope: %s: %s\n"
            % (what, type(exc).__name__, exc)
        )
        sys.stderr.flush()
    except Exception:
        pass


def _chain_to_shadowed_sitecustomize():
    """Runs the next sitecustomize on sys.path, as if this one did not exist."""
    import importlib.machinery
    import importlib.util

    here = os.path.dirname(os.path.abspath(__file__))
    path = [p for p in sys.path if os.path.abspath(p or os.curdir) != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", path)
    if spec is None or spec.loader is None or spec.origin in (None, "namespace"):
        return  # none, or only a directory named sitecustomize (a namespace package)
    if os.path.abspath(spec.origin) == os.path.abspath(__file__):
        return
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)


def _on_torch_imported():
    try:
        import trainscope

        trainscope._attach_from_env()  # reports its own failures, never raises
    except Exception as exc:
        _warn("importing trainscope", exc)


class _TorchImportWatcher:
    """A meta path finder that runs _on_torch_imported once `import torch` completes."""

    def find_spec(self, name, path=None, target=None):
        if name != "torch":
            return None
        try:
            sys.meta_path.remove(self)  # one shot
        except ValueError:
            pass
        try:
            spec = None
            for finder in sys.meta_path:
                find = getattr(finder, "find_spec", None)
                if find is None:
                    continue
                spec = find(name, path, target)
                if spec is not None:
                    break
            if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
                return spec
            exec_module = spec.loader.exec_module

            def exec_then_attach(module):
                exec_module(module)  # torch's own errors propagate as usual
                _on_torch_imported()

            spec.loader.exec_module = exec_then_attach
            return spec
        except Exception as exc:
            _warn("watching for torch", exc)
            return None  # the normal import machinery takes over


def _install():
    if not os.environ.get("TRAINSCOPE_COLLECTOR"):
        return
    if "torch" in sys.modules:  # imported by the shadowed sitecustomize
        _on_torch_imported()
    else:
        sys.meta_path.insert(0, _TorchImportWatcher())


try:
    _chain_to_shadowed_sitecustomize()
except Exception as _exc:
    _warn("the shadowed sitecustomize", _exc)
try:
    _install()
except Exception as _exc:
    _warn("setting up", _exc)
