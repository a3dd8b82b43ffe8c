#include "launcher_rack.h"

#include <cstdlib>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_split.h"

namespace trainscope::agent {

std::string LauncherRack::FromEnvironment() {
  return FromLookup([](const char* name) { return std::getenv(name); });
}

std::string LauncherRack::FromLookup(const std::function<const char*(const char*)>& lookup) {
  auto value = [&](const char* name) {
    const char* text = lookup(name);
    return std::string(absl::StripAsciiWhitespace(text == nullptr ? "" : text));
  };
  if (std::string rack = value("TRAINSCOPE_RACK"); !rack.empty()) return rack;
  const std::string addr = value("SLURM_TOPOLOGY_ADDR");
  if (addr.empty()) return "";
  const std::vector<std::string> parts = absl::StrSplit(addr, '.');
  const std::string pattern = value("SLURM_TOPOLOGY_ADDR_PATTERN");
  const std::vector<std::string> kinds = absl::StrSplit(pattern, '.');
  if (!pattern.empty() && kinds.size() == parts.size()) {
    // The leaf switch (or block): the last part the pattern says is not the node.
    for (size_t i = parts.size(); i-- > 0;) {
      if (kinds[i] != "node" && !parts[i].empty()) return parts[i];
    }
    return "";
  }
  // No (or a mismatched) pattern: Slurm's address ends with the node, so the
  // part before it is its leaf switch; a lone part is the node itself.
  return parts.size() >= 2 ? parts[parts.size() - 2] : "";
}

}  // namespace trainscope::agent
