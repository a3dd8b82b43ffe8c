// Finds the trainscope Python package for `trainscope run`, `attach` and
// `detach`: the directory to put on sys.path (it holds trainscope/ with its
// C++ extension) and the auto-attach sitecustomize directory.
//
// Looked up, first found wins: --python-dir, the TRAINSCOPE_PYTHON_DIR
// variable, then next to the binary: <bindir>/../python (the build tree,
// where the plugin's CMake lays the package out) and
// <bindir>/../lib/trainscope/python (an install). The sitecustomize
// directory is <python dir>/sitecustomize.
//
// Usage:
//   absl::StatusOr<PluginPaths> paths = PluginLocator::Locate(flag, ctx.env, SelfExecutable());
//
// Threading: stateless.
#ifndef TRAINSCOPE_CLI_PLUGIN_LOCATOR_H_
#define TRAINSCOPE_CLI_PLUGIN_LOCATOR_H_

#include <filesystem>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "trainscope/cli/command_context.h"

namespace trainscope::cli {

struct PluginPaths {
  std::filesystem::path python_dir;         // holds trainscope/__init__.py
  std::filesystem::path sitecustomize_dir;  // holds sitecustomize.py
};

class PluginLocator {
 public:
  // NOT_FOUND naming every place looked at when no candidate holds the
  // package (and, with `need_sitecustomize`, its sitecustomize.py).
  static absl::StatusOr<PluginPaths> Locate(const std::optional<std::string>& flag,
                                            const client::EnvLookup& env,
                                            const std::filesystem::path& self_executable,
                                            bool need_sitecustomize);
};

// The running binary (/proc/self/exe), empty when unknown.
std::filesystem::path SelfExecutable();

}  // namespace trainscope::cli

#endif  // TRAINSCOPE_CLI_PLUGIN_LOCATOR_H_
