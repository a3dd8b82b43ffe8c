// Turns PyTorch profiler traces (Chrome trace JSON, one file per rank, or
// one file with a process per rank) into a stored trainscope job: the same
// log the collector writes for live agents, so alignment, step assembly,
// rules, exports and the viewer treat it like a live job.
//
// Each file is first read whole into a TraceEventSorter (time order, bounded
// memory: spilled to temporary files past a budget), then mapped by a
// TraceEventMapper (operators, collectives once, GPU kernels/copies/memsets
// on their streams linked to their launches, NCCL kernels joined to their
// record_param_comms, step marks). A file without ProfilerStep#N marks gets
// its steps from a StepFinder (Optimizer.step# ranges, else the repeating
// pattern of its main thread), and the stats say which, or why none.
//
// Ranks: the --rank flag, else the file's distributedInfo (wherever it is in
// the file), else the rank in its name ("rank3"), else, for a single file,
// rank 0. Clocks: Hello.clock_domains[0].domain_id is "host:<host_name>"
// when the trace names its host; otherwise every file of one import shares
// "import:<job>" (the ranks of one import read one host's clock) unless
// `separate_clocks` says the files came from different hosts. Hello.gpus
// come from deviceProperties. Timestamps stay as the files have them: the
// analysis aligns what is not on one clock.
//
// The files' sorted events are merged by time, so that the log interleaves
// the ranks as live agents would (the step assembler closes a step when
// every rank has reported it). A file with every rank in it is read once per
// rank, each pass keeping that rank's events.
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
#include "trainscope/collector/import/step_finder.h"
#include "trainscope/collector/import/trace_event_mapper.h"
#include "trainscope/collector/store/job_log.h"
#include "trainscope/v1/agent.pb.h"

namespace trainscope::collector {

struct TraceImportOptions {
  std::filesystem::path data_dir;
  std::string job_id;
  bool fsync = true;
  // The files came from different hosts: each gets a clock domain of its own
  // unless it names its host.
  bool separate_clocks = false;
  // Events held in memory per import for sorting; past it, runs spill to /tmp.
  size_t max_events_in_memory = size_t{1} << 19;  // ~140 bytes each
};

// What one file turned into.
struct TraceFileReport {
  std::string path;
  std::optional<uint32_t> rank;
  std::string rank_source;  // "--rank", "distributedInfo", "file name", "only file", "pid"
  std::optional<uint32_t> trace_world_size;  // distributedInfo.world_size
  std::string host;                          // from the trace; empty when it names none
  std::string clock_domain;
  size_t gpus = 0;              // deviceProperties entries
  bool has_step_marks = false;  // ProfilerStep#N or an export's step args
  // When it had none: which source the StepFinder used, or why none.
  StepFinder::Source step_source = StepFinder::Source::kNone;
  std::string step_description;
  size_t sort_runs_spilled = 0;
};

struct TraceImportStats {
  uint64_t events = 0;        // complete events read
  uint64_t skipped = 0;       // other phases (metadata, instants, flows other than launches')
  uint64_t collectives = 0;   // CPU collectives
  uint64_t steps = 0;         // step marks
  uint64_t bytes = 0;         // of the files, uncompressed
  TraceMappingStats mapping;  // kernels, copies, NCCL kernels, launches linked...
  std::vector<TraceFileReport> files;
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
    // `name_rank` (read off the file's name: only a fallback).
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
  struct Pass;
  absl::Status Open(uint32_t rank, uint32_t world_size, const Pass& pass, TraceFileReport* report);
  absl::Status Add(uint32_t rank, const MappedEvent& event);
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
