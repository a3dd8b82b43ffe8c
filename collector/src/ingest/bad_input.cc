#include "trainscope/collector/ingest/bad_input.h"

#include <optional>

#include "absl/strings/ascii.h"
#include "absl/strings/cord.h"

namespace trainscope::collector {
namespace {
constexpr char kCauseUrl[] = "type.trainscope.dev/bad-input-cause";
}  // namespace

absl::Status BadInput(absl::StatusCode code, absl::string_view cause, absl::string_view message) {
  absl::Status status(code, message);
  status.SetPayload(kCauseUrl, absl::Cord(cause));
  return status;
}

std::string BadInputCause(const absl::Status& status) {
  if (auto cause = status.GetPayload(kCauseUrl)) return std::string(*cause);
  return absl::AsciiStrToLower(absl::StatusCodeToString(status.code()));
}

}  // namespace trainscope::collector
