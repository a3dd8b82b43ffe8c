// The viewer's command line: every flag trainscope-viewer takes, with its
// help text. One definition, so that the app, its source loading and the
// tests parse the same flags.
//
// Usage:
//   absl::StatusOr<base::ParsedArgs> args = ViewerFlags().Parse(arguments);
//
// Threading: returns a fresh parser; use it on one thread.
#ifndef TRAINSCOPE_VIEWER_WIDGETS_VIEWER_FLAGS_H_
#define TRAINSCOPE_VIEWER_WIDGETS_VIEWER_FLAGS_H_

#include "trainscope/base/arg_parser.h"

namespace trainscope::viewer {

base::ArgParser ViewerFlags();

}  // namespace trainscope::viewer

#endif  // TRAINSCOPE_VIEWER_WIDGETS_VIEWER_FLAGS_H_
