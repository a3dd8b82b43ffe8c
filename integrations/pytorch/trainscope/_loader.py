"""Finds, or builds once, trainscope's C++ extension for this interpreter's torch.

The extension (``trainscope._C``) links against libtorch, whose C++ ABI changes
with every release: one built for one torch and imported into another would
fail with an unresolved symbol (or worse, load and crash). So the extension is
picked per (torch version, C++11 ABI, Python) and built from source where none
fits:

1. ``_C`` next to this package (the build tree's, for Debian's torch), when its
   ``_build_info.py`` names this torch, ABI and Python;
2. else the cache: ``$TRAINSCOPE_CACHE_DIR`` (default ``~/.cache/trainscope``)
   ``/ext/<torch version>-cxx11abi<0|1>-<python tag>/``, when built there from
   the same sources;
3. else it is built there now, with CMake and a C++ compiler, from the sources
   and the agent library that ``_layout.py`` names (the build tree or the
   bundle, scripts/bundle_agent.sh), under a file lock (ranks starting
   together build once). ``TRAINSCOPE_EXT_BUILD=0`` forbids building: then a
   mismatch is an ImportError naming both versions.

See docs/pytorch-plugin.md.
"""

import fcntl
import hashlib
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import time

import torch

_PKG_DIR = os.path.dirname(os.path.abspath(__file__))
_DOC = "docs/pytorch-plugin.md"


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
            f"imports torch {runtime} ({torch.__file__}); build the extension for this torch "
            f"(unset TRAINSCOPE_EXT_BUILD and run `python -c \"import trainscope\"` with "
            f"this python; see {_DOC}) or use the Python it was built for")


def runtime_key() -> str:
    """The cache key of this interpreter: torch version, C++11 ABI, Python tag."""
    abi = int(bool(torch._C._GLIBCXX_USE_CXX11_ABI))
    return f"{torch.__version__}-cxx11abi{abi}-{sys.implementation.cache_tag}"


def cache_dir() -> str:
    root = os.environ.get("TRAINSCOPE_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "trainscope")
    return os.path.join(root, "ext", runtime_key())


def _read_info(directory: str):
    """The _build_info.py of an extension directory as a dict, or None."""
    path = os.path.join(directory, "_build_info.py")
    if not os.path.isfile(path):
        return None
    values = {}
    with open(path, encoding="utf-8") as f:
        exec(compile(f.read(), path, "exec"), {}, values)  # noqa: S102 (written by our CMake)
    return values


def _matches(info) -> bool:
    abi = int(bool(torch._C._GLIBCXX_USE_CXX11_ABI))
    return (info is not None and _release(str(info.get("TORCH_VERSION", ""))) ==
            _release(torch.__version__) and info.get("CXX11_ABI", abi) == abi and
            info.get("PYTHON_TAG", sys.implementation.cache_tag) == sys.implementation.cache_tag)


def _find_so(directory: str):
    suffix = None
    info = _read_info(directory)
    if info is not None:
        suffix = info.get("EXT_SUFFIX")
    for name in sorted(os.listdir(directory)) if os.path.isdir(directory) else []:
        if name.startswith("_C.") and name.endswith(".so") and (suffix is None or
                                                                 name == "_C" + suffix):
            return os.path.join(directory, name)
    return None


def _import_from(path: str):
    spec = importlib.util.spec_from_file_location("trainscope._C", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    sys.modules["trainscope._C"] = module
    return module


# ---- the layout: where the sources and the agent library are ----------------

def layout():
    """(extension source dir, agent library, [agent include dirs]) or raises ImportError."""
    try:
        from . import _layout  # noqa: PLC0415 (written by CMake or bundle_agent.sh)
    except ImportError as e:
        raise ImportError(
            "trainscope: this package has no _layout.py (where the extension's sources and "
            "libtrainscope_agent.so are); use the package from a build tree (<build>/python) or "
            "from the bundle (scripts/bundle_agent.sh)") from e

    def resolve(p):
        return os.path.normpath(os.path.join(_PKG_DIR, p))

    return (resolve(_layout.EXTENSION_SOURCE_DIR), resolve(_layout.AGENT_LIBRARY),
            [resolve(p) for p in _layout.AGENT_INCLUDE_DIRS])


def _source_digest(source_dir, agent_library, include_dirs) -> str:
    """What a cached build depends on: the extension's sources, the C headers,
    which agent library it links (the library's contents may change freely:
    the C API is versioned, see TRAINSCOPE_SESSION_ABI_VERSION)."""
    h = hashlib.sha256()
    h.update(agent_library.encode())
    files = []
    for d in [os.path.join(source_dir, "extension"), os.path.join(source_dir, "csrc")]:
        for name in sorted(os.listdir(d)) if os.path.isdir(d) else []:
            files.append(os.path.join(d, name))
    for d in include_dirs:
        for name in ("trainscope_agent.h", "trainscope_session.h"):
            files.append(os.path.join(d, name))
    for path in files:
        if os.path.isfile(path):
            h.update(path.encode())
            with open(path, "rb") as f:
                h.update(f.read())
    return h.hexdigest()


def _tool_path() -> str:
    """PATH, with a virtual environment's bin/ first: its pip-installed cmake
    and ninja count even when the venv is not activated."""
    path = os.environ.get("PATH", "")
    if sys.prefix != sys.base_prefix:
        path = os.pathsep.join([os.path.join(sys.prefix, "bin"), path])
    return path


def _which(tool):
    return shutil.which(tool, path=_tool_path())


def _missing_tools():
    missing = [tool for tool in ("cmake",) if _which(tool) is None]
    cxx = os.environ.get("CXX") or "c++"
    if _which(cxx) is None and _which("g++") is None:
        missing.append("a C++ compiler (c++/g++, or $CXX)")
    return missing


def build_extension(out_dir=None, verbose=False):
    """Builds _C for this interpreter into out_dir (default: the cache) and
    returns the .so's path. Raises ImportError saying what is missing."""
    source_dir, agent_library, include_dirs = layout()
    out_dir = out_dir or cache_dir()
    if not os.path.isfile(agent_library):
        raise ImportError(f"trainscope: the agent library {agent_library} is missing; build "
                          f"the trainscope_agent_shared target (or unpack the bundle again)")
    missing = _missing_tools()
    if missing:
        raise ImportError(
            f"trainscope: no extension for torch {torch.__version__} "
            f"({sys.executable}) and it cannot be built here: {', '.join(missing)} not found. "
            f"Install them, or build it once on a machine that has them with the same torch "
            f"and Python (`python -c \"import trainscope\"`) and copy {out_dir}; see {_DOC}")
    os.makedirs(out_dir, exist_ok=True)
    digest = _source_digest(source_dir, agent_library, include_dirs)
    stamp = os.path.join(out_dir, "stamp")
    with open(os.path.join(out_dir, ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another rank may be building the same
        so = _find_so(out_dir)
        if so and os.path.isfile(stamp) and open(stamp).read() == digest and _matches(
                _read_info(out_dir)):
            return so
        build = os.path.join(out_dir, "build")
        log_path = os.path.join(out_dir, "build.log")
        sys.stderr.write(f"trainscope: building the extension for torch {torch.__version__} "
                         f"(Python {sys.version.split()[0]}) in {out_dir}; once per torch, "
                         f"about a minute\n")
        sys.stderr.flush()
        started = time.monotonic()
        cmake = _which("cmake")
        generator = ["-G", "Ninja"] if _which("ninja") else []
        configure = [cmake, "-S", os.path.join(source_dir, "extension"), "-B", build,
                     *generator, "-DCMAKE_BUILD_TYPE=Release",
                     f"-DTRAINSCOPE_PYTHON={sys.executable}",
                     f"-DTRAINSCOPE_AGENT_LIBRARY={agent_library}",
                     f"-DTRAINSCOPE_AGENT_INCLUDE_DIRS={';'.join(include_dirs)}",
                     f"-DTRAINSCOPE_EXT_OUTPUT_DIR={out_dir}"]
        jobs = str(max(1, min(os.cpu_count() or 1, 8)))
        # CMake runs this interpreter (probe_torch.py imports torch): under
        # `trainscope run` its sitecustomize would attach there and land here
        # again, waiting on the lock this process holds.
        env = {k: v for k, v in os.environ.items() if k != "TRAINSCOPE_COLLECTOR"}
        env["PATH"] = _tool_path()
        with open(log_path, "w") as log:
            for cmd in (configure, [cmake, "--build", build, "-j", jobs]):
                log.write("$ " + " ".join(cmd) + "\n")
                log.flush()
                rc = subprocess.call(cmd, stdout=None if verbose else log,
                                     stderr=subprocess.STDOUT if not verbose else None, env=env)
                if rc != 0:
                    with open(log_path, errors="replace") as f:
                        tail = "".join(f.readlines()[-25:])
                    raise ImportError(
                        f"trainscope: building the extension for torch {torch.__version__} "
                        f"failed ({' '.join(cmd[:2])} exited {rc}); log: {log_path}\n{tail}")
        with open(stamp, "w") as f:
            f.write(digest)
        so = _find_so(out_dir)
        if so is None:
            raise ImportError(f"trainscope: the build in {out_dir} produced no _C module")
        sys.stderr.write(f"trainscope: extension built in {time.monotonic() - started:.0f} s\n")
        return so


def load_extension():
    """Returns the ``trainscope._C`` module, or raises ImportError saying why not."""
    local = None
    try:
        from . import _build_info as local  # noqa: PLC0415 (written by CMake next to _C)
    except ImportError:
        pass
    if local is not None and _matches(vars(local)) and _find_so(_PKG_DIR):
        from . import _C  # noqa: PLC0415 (must come after the check)
        return _C
    directory = cache_dir()
    if os.environ.get("TRAINSCOPE_EXT_BUILD", "1") == "0":
        so = _find_so(directory)
        if so and _matches(_read_info(directory)):
            return _import_from(so)
        if local is not None:
            check_torch_version(local.TORCH_VERSION, torch.__version__)
        raise ImportError(
            f"trainscope: no extension built for torch {torch.__version__} ({sys.executable}) "
            f"next to the package or in {directory}, and TRAINSCOPE_EXT_BUILD=0 forbids "
            f"building one; see {_DOC}")
    return _import_from(build_extension(directory))
