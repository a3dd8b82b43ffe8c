#include "trainscope/collector/ingest/hello_validator.h"

#include "absl/strings/str_cat.h"
#include "trainscope/collector/ingest/bad_input.h"
#include "trainscope/proto/protocol.h"
#include "trainscope/proto/protocol_version.h"

namespace trainscope::collector {

absl::Status ValidateJobId(absl::string_view job_id, absl::string_view field) {
  absl::Status s = protocol::ValidateJobId(job_id, field);
  if (s.ok()) return s;
  return BadInput(s.code(), field, s.message());
}

absl::Status ValidateHello(const v1::Hello& hello) {
  auto invalid = [](absl::string_view field, const std::string& message) {
    return BadInput(absl::StatusCode::kInvalidArgument, field, message);
  };
  // Refused only when the agent's versions and ours do not meet.
  if (absl::StatusOr<uint32_t> version = protocol::NegotiateProtocolVersion(
          protocol::AgentVersionRange(hello), protocol::OwnVersionRange(), hello.agent_version());
      !version.ok()) {
    return BadInput(version.status().code(), "hello.protocol_version", version.status().message());
  }
  if (absl::Status s = ValidateJobId(hello.job_id(), "hello.job_id"); !s.ok()) return s;
  if (hello.world_size() < 1 || hello.world_size() > kMaxWorldSize) {
    return invalid("hello.world_size",
                   absl::StrCat("hello.world_size: ", hello.world_size(),
                                " is out of range; expected 1 to ", kMaxWorldSize));
  }
  if (hello.rank() >= hello.world_size()) {
    return invalid("hello.rank",
                   absl::StrCat("hello.rank: ", hello.rank(), " is not below hello.world_size ",
                                hello.world_size()));
  }
  if (hello.agent_instance_id() == 0) {
    return invalid("hello.agent_instance_id",
                   "hello.agent_instance_id: 0 is reserved; expected a random non-zero id per "
                   "agent process");
  }
  if (hello.job_token().size() > kMaxJobTokenLength) {
    return invalid("hello.job_token",
                   absl::StrCat("hello.job_token: ", hello.job_token().size(),
                                " bytes, expected at most ", kMaxJobTokenLength));
  }
  return absl::OkStatus();
}

}  // namespace trainscope::collector
