// Early returns on a failed absl::Status or absl::StatusOr, the macros the
// headers' usage comments are written with.
//
// Usage:
//   absl::StatusOr<Summary> Run(const Options& options) {
//     RETURN_IF_ERROR(Validate(options));                       // returns its error
//     ASSIGN_OR_RETURN(LogReader reader, LogReader::Open(dir)); // declares `reader`
//     ASSIGN_OR_RETURN(summary.plan, Plan(reader));             // assigns an lvalue
//     ...
//   }
//
// Both work in any function whose return type an absl::Status converts to
// (absl::Status, absl::StatusOr<T>). The expression is evaluated once; the
// error is returned unchanged. ASSIGN_OR_RETURN declares a hidden local named
// after the line, so use it at most once per line.
//
// Threading: macros; nothing shared.
#ifndef TRAINSCOPE_BASE_STATUS_MACROS_H_
#define TRAINSCOPE_BASE_STATUS_MACROS_H_

#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define RETURN_IF_ERROR(...)                                         \
  do {                                                               \
    ::absl::Status trainscope_return_if_error_ = (__VA_ARGS__);      \
    if (!trainscope_return_if_error_.ok()) {                         \
      return trainscope_return_if_error_;                            \
    }                                                                \
  } while (false)

// `lhs` is a declaration (`auto x`, `LogReader reader`) or an lvalue; the
// expression may contain commas (a lambda, a braced initializer).
#define ASSIGN_OR_RETURN(lhs, ...)                                                         \
  TRAINSCOPE_ASSIGN_OR_RETURN_IMPL(                                                        \
      TRAINSCOPE_STATUS_MACROS_CONCAT(trainscope_assign_or_return_, __LINE__), lhs,         \
      __VA_ARGS__)

#define TRAINSCOPE_ASSIGN_OR_RETURN_IMPL(statusor, lhs, ...) \
  auto statusor = (__VA_ARGS__);                             \
  if (!statusor.ok()) {                                      \
    return std::move(statusor).status();                     \
  }                                                          \
  lhs = *std::move(statusor)

#define TRAINSCOPE_STATUS_MACROS_CONCAT_INNER(a, b) a##b
#define TRAINSCOPE_STATUS_MACROS_CONCAT(a, b) TRAINSCOPE_STATUS_MACROS_CONCAT_INNER(a, b)

#endif  // TRAINSCOPE_BASE_STATUS_MACROS_H_
