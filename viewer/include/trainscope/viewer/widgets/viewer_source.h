// Where the viewer's job comes from, chosen by its command line: a synthetic
// job (--synthetic and its shape flags), a stored job (--data-dir, --job,
// --steps, --max-operators) or a live collector (--feed/--snapshot, --job; with
// --render its history is fetched at once). Every bad combination or value is
// an error naming the flag and what was expected.
//
// Usage:
//   absl::StatusOr<ViewerSource> source = LoadViewerSource(args);
//   if (source.ok()) state.Load(source->data);
//
// Threading: blocking (reads the stored job or asks the snapshot port); call
// it before the UI starts, on the main thread.
#ifndef TRAINSCOPE_VIEWER_WIDGETS_VIEWER_SOURCE_H_
#define TRAINSCOPE_VIEWER_WIDGETS_VIEWER_SOURCE_H_

#include <functional>
#include <string>

#include "absl/status/statusor.h"
#include "trainscope/base/arg_parser.h"
#include "trainscope/client/client_security.h"
#include "trainscope/viewer/range_statistics.h"
#include "trainscope/viewer/records.h"

namespace trainscope::viewer {

struct ViewerSource {
  JobData data;
  std::string source;  // shown in the window: "synthetic", the data dir or the endpoint
  bool live = false;   // a collector's feed follows
  client::ClientSecurity security;
  // A stored job (--data-dir): loads a step range of it with the same
  // --max-operators (MainWindow::Config::load_steps); null otherwise.
  std::function<absl::StatusOr<JobData>(StepSpan)> load_steps;
};

absl::StatusOr<ViewerSource> LoadViewerSource(const base::ParsedArgs& args);

}  // namespace trainscope::viewer

#endif  // TRAINSCOPE_VIEWER_WIDGETS_VIEWER_SOURCE_H_
