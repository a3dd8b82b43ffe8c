#include "trainscope/viewer/job_controls_model.h"

#include <utility>

#include "absl/strings/str_cat.h"

namespace trainscope::viewer {

JobControlsModel::JobControlsModel(bool online, std::string job_id)
    : online_(online), job_id_(std::move(job_id)) {}

std::string JobControlsModel::Unreachable() const {
  if (!online_) return "Offline (a stored log): commands need a live collector (--collector)";
  if (state_ == JobStateKind::kFinished) {
    return absl::StrCat("Job ", job_id_,
                        " finished: every rank said goodbye, so no rank would receive it");
  }
  return "";
}

JobControlsModel::Button JobControlsModel::Halt() const {
  if (std::string why = Unreachable(); !why.empty()) return {false, why};
  if (state_ == JobStateKind::kHalted) {
    return {false, absl::StrCat("Job ", job_id_,
                                " is halted already: its ranks stop at the step boundary the "
                                "first halt set")};
  }
  return {true, "Stop every rank at its next step boundary (needs the job's token)"};
}

JobControlsModel::Button JobControlsModel::Switch(const std::string& command) const {
  if (std::string why = Unreachable(); !why.empty()) return {false, why};
  if (command == "enable")
    return {true, absl::StrCat("Start recording on every rank of ", job_id_)};
  if (command == "disable") {
    return {true, "Stop recording (agents stay attached, near-zero cost)"};
  }
  if (command == "enable-loss-contribution") {
    return {true,
            "Install the trainscope.LossContribution hooks on every rank (at its next batch)"};
  }
  return {true, "Remove the loss-contribution hooks on every rank: training runs as without them"};
}

std::string JobControlsModel::SelectionText(std::optional<uint64_t> step, bool following) const {
  if (!step.has_value()) return "no step yet";
  const char* which = !following ? "pinned" : feed_stale_ ? "last seen" : "newest";
  return absl::StrCat("step ", *step, " (", which, ")");
}

std::string JobControlsModel::TokenPrompt(const std::string& job_id, const std::string& command,
                                          const std::string& why) {
  std::string text = absl::StrCat(
      "\"", command, "\" needs the token of job ", job_id,
      ".\n\nIt is the token the job was started with (trainscope run --token, or "
      "TRAINSCOPE_TOKEN in the job's environment). If nobody set one, the collector generated "
      "it and wrote it to jobs/",
      job_id, "/token in the collector's data directory, on the collector's host.");
  if (!why.empty()) absl::StrAppend(&text, "\n\nThe token given could not be used: ", why, ".");
  absl::StrAppend(&text,
                  "\n\nTo skip this prompt, start the viewer with --token-file FILE or with "
                  "TRAINSCOPE_TOKEN set.\n\nToken:");
  return text;
}

}  // namespace trainscope::viewer
