#include "trainscope/client/environment.h"

#include <cstdlib>

namespace trainscope::client {

EnvLookup ProcessEnv() {
  return [](std::string_view name) -> std::optional<std::string> {
    const char* value = std::getenv(std::string(name).c_str());
    if (value == nullptr || *value == '\0') return std::nullopt;
    return std::string(value);
  };
}

}  // namespace trainscope::client
