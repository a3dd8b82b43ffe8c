#include "trainscope/proto/job_id.h"

#include <string>

#include "absl/strings/str_cat.h"

namespace trainscope::protocol {

bool IsValidJobId(absl::string_view job_id) {
  if (job_id.empty() || job_id.size() > kMaxJobIdLength) return false;
  if (job_id == "." || job_id == "..") return false;  // would escape <data-dir>/jobs
  for (char c : job_id) {
    const bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                    c == '.' || c == '_' || c == '-';
    if (!ok) return false;
  }
  return true;
}

absl::Status ValidateJobId(absl::string_view job_id, absl::string_view what) {
  if (IsValidJobId(job_id)) return absl::OkStatus();
  // A garbage id may be megabytes long: show enough of it to recognise.
  std::string shown(job_id.substr(0, 64));
  if (job_id.size() > 64) shown += "...";
  return absl::InvalidArgumentError(absl::StrCat(
      what, ": '", shown, "' (", job_id.size(), " bytes) is not a valid job id; expected 1 to ",
      kMaxJobIdLength, " characters from [A-Za-z0-9._-], not '.' or '..'"));
}

}  // namespace trainscope::protocol
