"""The extension matches whatever torch runs the tests (scripts/test.sh runs
this file with Debian's /usr/bin/python3 and torch 1.13, and again with a pip
PyTorch 2.11 in a virtual environment, where `import trainscope` builds the
extension into $TRAINSCOPE_CACHE_DIR on first use).

Run: /usr/bin/python3 -m pytest tests/python/test_any_torch.py
     TRAINSCOPE_CACHE_DIR=build/torch-ext VENV/bin/python -m pytest tests/python/test_any_torch.py
"""

import os
import pathlib
import shutil
import subprocess
import sys

import pytest
import torch

from conftest import PYTHON_DIR

TORCH_DIR = pathlib.Path(torch.__file__).parent
# A pip wheel carries its own headers; Debian's torch/include links to /usr/include.
WHEEL = (TORCH_DIR / "include" / "torch" / "extension.h").is_file() and not (
    TORCH_DIR / "include" / "torch").is_symlink()


def test_extension_is_built_for_this_torch_abi_and_python(trainscope_module):
    from trainscope import _loader
    c = trainscope_module._C
    assert c.TORCH_BUILD_VERSION == torch.__version__
    so = pathlib.Path(c.__file__)
    assert so.name.endswith(".so") and sys.implementation.cache_tag.split("-")[1] in so.name
    if so.parent != PYTHON_DIR / "trainscope":
        # Built by the loader: in the cache folder named after this interpreter.
        assert so.parent == pathlib.Path(_loader.cache_dir())
        assert so.parent.name == _loader.runtime_key()
        assert torch.__version__ in so.parent.name
        abi = int(torch._C._GLIBCXX_USE_CXX11_ABI)
        assert f"cxx11abi{abi}" in so.parent.name


@pytest.mark.skipif(not WHEEL, reason="Debian's torch: its headers are /usr/include's")
def test_a_pip_torch_build_never_reads_debians_torch_headers(trainscope_module):
    from trainscope import _loader
    build = pathlib.Path(_loader.cache_dir()) / "build"
    if not (build / "build.ninja").exists() or shutil.which("ninja") is None:
        pytest.skip(f"no Ninja build of the extension in {build}")
    deps = subprocess.run(["ninja", "-C", str(build), "-t", "deps"], capture_output=True,
                          text=True, check=True).stdout
    headers = [line.strip() for line in deps.splitlines() if line.startswith("    ")]
    foreign = [h for h in headers
               if h.startswith(("/usr/include/torch", "/usr/include/ATen", "/usr/include/c10",
                                "/usr/include/caffe2", "/usr/include/pybind11",
                                "/usr/lib/python3/dist-packages/torch"))]
    assert not foreign, foreign[:5]
    own = str(TORCH_DIR / "include")
    assert any(h.startswith(own + "/ATen/record_function.h") for h in headers)
    assert any(h.startswith(own + "/pybind11/") for h in headers)
    # And links this torch's libraries, not the system's.
    needed = subprocess.run(["ldd", trainscope_module._C.__file__], capture_output=True,
                            text=True).stdout
    torch_libs = [line for line in needed.splitlines() if "libtorch" in line or "libc10" in line]
    assert torch_libs and all(str(TORCH_DIR / "lib") in line for line in torch_libs), torch_libs


def test_a_cached_build_is_reused(trainscope_module, tmp_path):
    """The stamp matches: a second interpreter imports the cached build, builds nothing."""
    from trainscope import _loader
    cache = pathlib.Path(_loader.cache_dir())
    if not (cache / "stamp").exists():
        pytest.skip("the extension next to the package serves this torch (no cache build)")
    before = (cache / "stamp").stat().st_mtime_ns
    env = dict(os.environ, PYTHONPATH=str(PYTHON_DIR))
    done = subprocess.run([sys.executable, "-c", "import trainscope"], capture_output=True,
                          text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "building the extension" not in done.stderr
    assert (cache / "stamp").stat().st_mtime_ns == before


def test_gpu_activity_follows_the_device_and_without_one_training_goes_on(trainscope_module,
                                                                        monkeypatch):
    """GPU activity is asked for where torch sees a CUDA device (TRAINSCOPE_GPU
    overrides); asked for without a GPU (as here), the agent says why once and
    records the host side as usual."""
    ts = trainscope_module
    model = torch.nn.Linear(8, 4)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

    def train():
        for _ in range(3):
            optimizer.zero_grad()
            model(torch.randn(2, 8)).sum().backward()
            optimizer.step()

    expected_default = "off" if not torch.cuda.is_available() else None
    for env, gpu, expected in ((None, None, expected_default), ("1", None, "unavailable"),
                               (None, True, "unavailable"), ("1", False, "off")):
        if env is None:
            monkeypatch.delenv("TRAINSCOPE_GPU", raising=False)
        else:
            monkeypatch.setenv("TRAINSCOPE_GPU", env)
        kw = {} if gpu is None else {"gpu": gpu}
        ts.attach(collector="127.0.0.1:1", job="gpu-off", halt_grace_s=None, log_to_stderr=False,
                  **kw)
        try:
            train()
            stats = ts.stats()
        finally:
            ts.detach(timeout_s=0.1)
        if expected is not None and torch.cuda.is_available() is False:
            assert stats["gpu_activity"] == expected, (env, gpu, stats["gpu_activity"])
        assert stats["step"] == 3 and stats["events_recorded"] > 3 * 5, stats
    monkeypatch.setenv("TRAINSCOPE_GPU", "maybe")
    with pytest.raises(ValueError, match="TRAINSCOPE_GPU='maybe'"):
        ts.attach(collector="127.0.0.1:1", job="gpu-off")


@pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler")
def test_the_session_header_is_plain_c_and_the_agent_library_links_alone(trainscope_module,
                                                                         tmp_path):
    """What any extension needs of trainscope: two C headers and one library."""
    from trainscope import _loader
    _, agent, include_dirs = _loader.layout()
    source = tmp_path / "use.c"
    source.write_text("""
        #include <stdio.h>
        #include "trainscope_session.h"
        static int install(void* user, const trainscope_observer* observer, trainscope_hook* out,
                           char* error, size_t error_len) {
          (void)user; (void)observer; (void)out; (void)error; (void)error_len;
          return 1;
        }
        int main(void) {
          trainscope_session_options o;
          trainscope_session_options_init(&o);
          trainscope_session* s = (trainscope_session*)1;
          char error[256];
          /* No job id: refused, naming the field; *out reset to NULL. */
          int rc = trainscope_session_start(&o, install, NULL, &s, error, sizeof error);
          printf("%u %d %d %s\\n", trainscope_session_abi_version(), rc, s == NULL, error);
          return 0;
        }
        """)
    exe = tmp_path / "use"
    subprocess.run(["cc", "-std=c99", "-Wall", "-Werror", "-pedantic",
                    *[f"-I{d}" for d in include_dirs], str(source), agent,
                    f"-Wl,-rpath,{os.path.dirname(agent)}", "-o", str(exe)], check=True)
    out = subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout.split(
        maxsplit=3)
    assert int(out[0]) == trainscope_module._C.SESSION_ABI_VERSION
    assert out[1] == "1" and out[2] == "1" and "job_id" in out[3], out
