#include "trainscope/tier/tier_subjects.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "trainscope/proto/job_id.h"

namespace trainscope::tier {

std::string SubjectToken(absl::string_view name) {
  std::string out;
  out.reserve(name.size() + 4);
  for (char c : name) {
    if (c == '_') {
      out += "__";
    } else if (c == '.') {
      out += "_d";
    } else {
      out += c;
    }
  }
  return out;
}

std::string RecordSubject(absl::string_view job_id, absl::string_view node) {
  return absl::StrCat("trainscope.rec.", SubjectToken(job_id), ".", SubjectToken(node));
}

std::string CommandSubject(absl::string_view job_id) {
  return absl::StrCat("trainscope.cmd.", SubjectToken(job_id));
}

std::string CommandSubject(absl::string_view job_id, v1::TierCommand::Kind kind) {
  const char* state = "other";
  switch (kind) {
    case v1::TierCommand::KIND_HALT:
      state = "halt";
      break;
    case v1::TierCommand::KIND_ENABLE_RECORDING:
    case v1::TierCommand::KIND_DISABLE_RECORDING:
      state = "recording";
      break;
    case v1::TierCommand::KIND_ENABLE_LOSS_CONTRIBUTION:
    case v1::TierCommand::KIND_DISABLE_LOSS_CONTRIBUTION:
      state = "loss";
      break;
    default:
      break;
  }
  return absl::StrCat(CommandSubject(job_id), ".", state);
}

absl::Status ValidateNodeName(absl::string_view node, absl::string_view flag) {
  if (protocol::IsValidJobId(node)) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat(flag, ": '", node, "' is not a node name; expected 1..128 of [A-Za-z0-9._-]"));
}

StreamKey KeyOf(const v1::TierRecord& record) {
  StreamKey key{record.job_id(), record.hello().rank(), record.hello().agent_instance_id()};
  return key;
}

std::string RecordMsgId(const v1::TierRecord& record) {
  const std::string stream = absl::StrFormat("%s/%u/%016x", record.job_id(), record.hello().rank(),
                                             record.hello().agent_instance_id());
  switch (record.body_case()) {
    case v1::TierRecord::kBatch:
      return absl::StrCat(stream, "/b", record.batch().batch().sequence());
    case v1::TierRecord::kOpened:
      return absl::StrCat(stream, "/o", record.logged_unix_ns());
    case v1::TierRecord::kClosed:
      return absl::StrCat(stream, "/c", record.logged_unix_ns());
    case v1::TierRecord::BODY_NOT_SET:
      break;
  }
  return absl::StrCat(stream, "/x", record.logged_unix_ns());
}

}  // namespace trainscope::tier
