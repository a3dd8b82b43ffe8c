// Where job pipelines hand each record once it is durable in the job's log:
// the node collector's publisher to the job-level collector (tier/,
// docs/scale.md) implements it.
//
// Records arrive per job in log order: a stream's StreamOpened, its accepted
// batches (refused ones are not handed on), its StreamClosed. Probe samples
// and commands are not handed on: they belong to this collector's clock and
// to this collector's commands.
//
// Threading: OnDurable is called on the job's pipeline thread, for different
// jobs on different threads at once; it must be thread-safe and never block
// (an agent's ack waits behind it).
#ifndef TRAINSCOPE_COLLECTOR_PUBLISH_RECORD_SINK_H_
#define TRAINSCOPE_COLLECTOR_PUBLISH_RECORD_SINK_H_

#include "absl/strings/string_view.h"
#include "trainscope/v1/log.pb.h"

namespace trainscope::collector {

class RecordSink {
 public:
  virtual ~RecordSink() = default;
  virtual void OnDurable(absl::string_view job_id, const trainscope::v1::LogRecord& record) = 0;
};

// Whether a record of the log is one a RecordSink gets (the same rule for the
// live hand-off and for reading a log back).
inline bool IsSinkRecord(const trainscope::v1::LogRecord& record) {
  switch (record.body_case()) {
    case trainscope::v1::LogRecord::kStreamOpened:
    case trainscope::v1::LogRecord::kStreamClosed:
      return true;
    case trainscope::v1::LogRecord::kBatch:
      return record.batch().refused_reason().empty();
    default:
      return false;
  }
}

}  // namespace trainscope::collector

#endif  // TRAINSCOPE_COLLECTOR_PUBLISH_RECORD_SINK_H_
