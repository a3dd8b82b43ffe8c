// Turns PyTorch profiler traces (Chrome trace JSON, one file per rank, or
// one file with a process per rank) into a stored trainscope job: the same
// log the collector writes for live agents, so alignment, step assembly,
// rules, exports and the viewer treat it like a live job.
//
// Mapping: "ProfilerStep#N" annotations (and trainscope's own exports'
// "step" args) mark steps; "<backend>:<op>" names (gloo:all_reduce,
// nccl:_allgather_base, ...), trainscope's "collective"/"send"/"recv"
// categories and Kineto's record_param_comms "Collective name" become
// collectives (group from the args or "default_pg"; the sequence from the
// args, else counted per rank and group in file order); every other complete
// event is an operator. Timestamps stay on each file's own clock: the
// analysis aligns the ranks on their collectives, as for live agents.
//
// The files are read together, their events merged by time, so that the
// log interleaves the ranks as live agents would (the step assembler closes
// a step when every rank has reported it). A file with every rank in it is
// read once per rank, each pass keeping that rank's events. Memory stays
// bounded: one event per file and pass, and one batch per rank.
//
// Usage:
//   ASSIGN_OR_RETURN(auto importer, TraceImporter::Create({.data_dir = d, .job_id = "vit"}));
//   absl::Status s = importer->Import({{.path = "rank0.json.gz"}, {.path = "rank1.json.gz",
//                                       .rank = 1}});
//
// Threading: not thread-safe; one thread imports.
#ifndef TRAINSCOPE_COLLECTOR_IMPORT_TRACE_IMPORTER_H_
#define TRAINSCOPE_COLLECTOR_IMPORT_TRACE_IMPORTER_H_

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "trainscope/collector/import/chrome_trace_reader.h"
#include "trainscope/collector/store/job_log.h"
#include "trainscope/v1/agent.pb.h"

namespace trainscope::collector {

struct TraceImportOptions {
  std::filesystem::path data_dir;
  std::string job_id;
  bool fsync = true;
};

struct TraceImportStats {
  uint64_t events = 0;   // complete events imported
  uint64_t skipped = 0;  // other phases (metadata, flows, instants)
  uint64_t collectives = 0;
  uint64_t steps = 0;  // step marks
  uint64_t bytes = 0;  // of the files, uncompressed
};

class TraceImporter {
 public:
  // Fails when the job already exists in data_dir (an import never mixes
  // into another job's log).
  static absl::StatusOr<std::unique_ptr<TraceImporter>> Create(TraceImportOptions options);
  ~TraceImporter();

  struct Source {
    std::string path;
    // The file's rank when given (a flag); else its distributedInfo; else
    // `name_rank` (read off the file's name).
    std::optional<uint32_t> rank = std::nullopt;
    // The file holds every rank, each event's rank its numeric pid
    // (trainscope's own Chrome exports).
    bool rank_from_pid = false;
    std::optional<uint32_t> name_rank = std::nullopt;
  };
  // Imports the files as one job and makes the log durable. A malformed or
  // truncated file keeps the events before the error; the first error is
  // returned after the others are imported.
  absl::Status Import(const std::vector<Source>& sources);

  const TraceImportStats& stats() const { return stats_; }

 private:
  struct Rank;
  explicit TraceImporter(TraceImportOptions options, std::unique_ptr<JobLog> log);
  absl::Status Open(uint32_t rank, uint32_t world_size);
  absl::Status Add(uint32_t rank, const TraceEvent& event);
  absl::Status Flush(uint32_t rank);
  absl::Status Close();

  const TraceImportOptions options_;
  std::unique_ptr<JobLog> log_;
  std::map<uint32_t, std::unique_ptr<Rank>> ranks_;
  TraceImportStats stats_;
  size_t unsynced_bytes_ = 0;
};

}  // namespace trainscope::collector

#endif  // TRAINSCOPE_COLLECTOR_IMPORT_TRACE_IMPORTER_H_
