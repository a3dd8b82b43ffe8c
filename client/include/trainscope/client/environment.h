// The environment variables a front end reads (TRAINSCOPE_COLLECTOR,
// TRAINSCOPE_TOKEN, ...) as a lookup function, so that a test passes its own
// instead of changing the process's environment.
//
// Usage:
//   EnvLookup env = ProcessEnv();
//   std::optional<std::string> collector = env("TRAINSCOPE_COLLECTOR");
//
// Threading: ProcessEnv's lookup reads getenv and may be called from any
// thread as long as nothing sets variables meanwhile.
#ifndef TRAINSCOPE_CLIENT_ENVIRONMENT_H_
#define TRAINSCOPE_CLIENT_ENVIRONMENT_H_

#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace trainscope::client {

// Returns the variable's value, or nullopt when unset or empty.
using EnvLookup = std::function<std::optional<std::string>(std::string_view)>;

// The process's real environment (getenv), for main().
EnvLookup ProcessEnv();

}  // namespace trainscope::client

#endif  // TRAINSCOPE_CLIENT_ENVIRONMENT_H_
