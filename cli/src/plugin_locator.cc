#include "trainscope/cli/plugin_locator.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace trainscope::cli {

std::filesystem::path SelfExecutable() {
  std::error_code ec;
  std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::filesystem::path() : self;
}

absl::StatusOr<PluginPaths> PluginLocator::Locate(const std::optional<std::string>& flag,
                                                  const client::EnvLookup& env,
                                                  const std::filesystem::path& self_executable,
                                                  bool need_sitecustomize) {
  std::vector<std::pair<std::filesystem::path, std::string>> candidates;  // dir, from where
  if (flag.has_value()) {
    candidates.emplace_back(*flag, "--python-dir");
  } else if (std::optional<std::string> dir = env("TRAINSCOPE_PYTHON_DIR"); dir.has_value()) {
    candidates.emplace_back(*dir, "TRAINSCOPE_PYTHON_DIR");
  } else if (!self_executable.empty()) {
    const std::filesystem::path bindir = self_executable.parent_path();
    candidates.emplace_back(bindir / ".." / "python", "next to the trainscope binary");
    candidates.emplace_back(bindir / ".." / "lib" / "trainscope" / "python",
                            "next to the trainscope binary");
  }
  std::vector<std::string> tried;
  for (const auto& [dir, origin] : candidates) {
    std::error_code ec;
    const std::filesystem::path normal = std::filesystem::weakly_canonical(dir, ec);
    const std::filesystem::path python_dir = ec ? std::filesystem::absolute(dir) : normal;
    const bool has_package =
        std::filesystem::is_regular_file(python_dir / "trainscope" / "__init__.py", ec);
    const bool has_site =
        std::filesystem::is_regular_file(python_dir / "sitecustomize" / "sitecustomize.py", ec);
    if (has_package && (has_site || !need_sitecustomize)) {
      return PluginPaths{python_dir, python_dir / "sitecustomize"};
    }
    tried.push_back(absl::StrCat(
        python_dir.string(), " (", origin,
        "): ", !has_package ? "no trainscope/__init__.py" : "no sitecustomize/sitecustomize.py"));
  }
  if (tried.empty()) {
    return absl::NotFoundError(
        "cannot find the trainscope Python package: give --python-dir DIR or set "
        "TRAINSCOPE_PYTHON_DIR (DIR holds trainscope/__init__.py)");
  }
  return absl::NotFoundError(absl::StrCat(
      "cannot find the trainscope Python package; looked in ", absl::StrJoin(tried, "; "),
      ". Build the PyTorch plugin (integrations/pytorch) or give --python-dir DIR (DIR holds "
      "trainscope/__init__.py",
      need_sitecustomize ? " and sitecustomize/sitecustomize.py)" : ")"));
}

}  // namespace trainscope::cli
