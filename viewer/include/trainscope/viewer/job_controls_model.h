// What the Controls panel offers for the shown job, and why not: each
// command button's enabled state and tooltip from whether a collector is
// there to send to and the job's state (the collector's, JobsModel), and the
// token prompt's text. Halt is not offered on a finished or halted job
// (issue 23.5: a halt on a finished job "succeeded" with 0 ranks).
//
// Usage:
//   JobControlsModel controls(/*online=*/true, "job-1");
//   controls.SetJobState(JobStateKind::kFinished);
//   const JobControlsModel::Button halt = controls.Halt();  // disabled, with the reason
//   std::string prompt = JobControlsModel::TokenPrompt("job-1", "halt", "");
//
// Threading: not thread-safe; the UI thread owns it.
#ifndef TRAINSCOPE_VIEWER_JOB_CONTROLS_MODEL_H_
#define TRAINSCOPE_VIEWER_JOB_CONTROLS_MODEL_H_

#include <cstdint>
#include <optional>
#include <string>

#include "trainscope/viewer/records.h"

namespace trainscope::viewer {

class JobControlsModel {
 public:
  struct Button {
    bool enabled = false;
    std::string tooltip;  // what it does, or why it is off
  };

  JobControlsModel(bool online, std::string job_id);

  void SetJobState(JobStateKind state) { state_ = state; }
  JobStateKind job_state() const { return state_; }

  // Whether the feed is gone (ConnectionModel::data_stale): the newest step
  // shown is then only the last one seen, not the job's newest.
  void SetFeedStale(bool stale) { feed_stale_ = stale; }

  // The Controls bar's step label: "no step yet", "step N (newest)",
  // "step N (pinned)", or "step N (last seen)" while following a feed that
  // is gone (issue 23.1: it said "newest" with the collector down).
  std::string SelectionText(std::optional<uint64_t> step, bool following) const;

  Button Halt() const;
  // Recording on/off and the loss-contribution hooks on/off: `command` is
  // the collector's name ("enable", "disable", "enable-loss-contribution",
  // "disable-loss-contribution").
  Button Switch(const std::string& command) const;

  // The token dialog's text: which token `command` needs and where it is;
  // `why` is the resolver's complaint about a source that was given (an
  // empty --token-file, ...), empty when none was given. Never suggests
  // --data-dir: that flag opens a stored log offline, without commands.
  static std::string TokenPrompt(const std::string& job_id, const std::string& command,
                                 const std::string& why);

 private:
  // Why no command can change the job, or empty.
  std::string Unreachable() const;

  bool online_;
  std::string job_id_;
  JobStateKind state_ = JobStateKind::kUnknown;
  bool feed_stale_ = false;
};

}  // namespace trainscope::viewer

#endif  // TRAINSCOPE_VIEWER_JOB_CONTROLS_MODEL_H_
