"""Prints what the extension's CMakeLists.txt needs to know about this
interpreter and its torch, as KEY=VALUE lines. Run by CMake with the target
interpreter; imports torch but never its C++ extension helpers' compiler
checks."""
import os
import re
import sys
import sysconfig

import torch

torch_dir = os.path.dirname(torch.__file__)
include = os.path.join(torch_dir, "include")
wheel = os.path.isfile(os.path.join(include, "torch", "extension.h"))
release = re.match(r"^(\d+)\.(\d+)(?:\.(\d+))?", torch.__version__)
out = {
    "TORCH_VERSION": torch.__version__,
    "TORCH_MAJOR": release.group(1),
    "TORCH_MINOR": release.group(2),
    "TORCH_RELEASE": "%s.%s.%s" % (release.group(1), release.group(2), release.group(3) or 0),
    "CXX11_ABI": int(bool(torch._C._GLIBCXX_USE_CXX11_ABI)),
    "TORCH_LAYOUT": "wheel" if wheel else "system",
    "TORCH_INCLUDE_DIRS": ";".join(
        [include, os.path.join(include, "torch", "csrc", "api", "include")] if wheel else []),
    "TORCH_LIB_DIR": os.path.join(torch_dir, "lib"),
    "PYTHON_VERSION": "%d.%d.%d" % sys.version_info[:3],
    "PYTHON_INCLUDE_DIR": sysconfig.get_paths()["include"],
    "PYTHON_TAG": sys.implementation.cache_tag,
    "EXT_SUFFIX": sysconfig.get_config_var("EXT_SUFFIX") or ".so",
}
for key, value in out.items():
    print("%s=%s" % (key, value))
