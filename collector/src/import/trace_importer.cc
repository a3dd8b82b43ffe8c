#include "trainscope/collector/import/trace_importer.h"

#include <cmath>
#include <functional>
#include <queue>
#include <set>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace trainscope::collector {
namespace {

namespace v1 = trainscope::v1;

// Events per logged batch (what an agent sends at most, about).
constexpr int kBatchEvents = 4096;
// ... and time each batch covers (an agent's flush interval).
constexpr double kBatchSpanUs = 20'000;
// Logged bytes between syncs.
constexpr size_t kSyncBytes = 16 << 20;
constexpr char kStepPrefix[] = "ProfilerStep#";

int64_t Ns(double us) { return static_cast<int64_t>(std::llround(us * 1000.0)); }

// The collective an operation name stands for, or UNSPECIFIED.
v1::CollectiveKind KindOf(absl::string_view op) {
  // Longest names first: "reduce_scatter" before "reduce".
  static constexpr std::pair<const char*, v1::CollectiveKind> kKinds[] = {
      {"reduce_scatter", v1::COLLECTIVE_KIND_REDUCE_SCATTER},
      {"all_reduce", v1::COLLECTIVE_KIND_ALL_REDUCE},
      {"allreduce", v1::COLLECTIVE_KIND_ALL_REDUCE},
      {"all_gather", v1::COLLECTIVE_KIND_ALL_GATHER},
      {"allgather", v1::COLLECTIVE_KIND_ALL_GATHER},
      {"all_to_all", v1::COLLECTIVE_KIND_ALL_TO_ALL},
      {"alltoall", v1::COLLECTIVE_KIND_ALL_TO_ALL},
      {"broadcast", v1::COLLECTIVE_KIND_BROADCAST},
      {"barrier", v1::COLLECTIVE_KIND_BARRIER},
      {"recv", v1::COLLECTIVE_KIND_RECV},
      {"send", v1::COLLECTIVE_KIND_SEND},
      {"reduce", v1::COLLECTIVE_KIND_REDUCE},
      {"gather", v1::COLLECTIVE_KIND_GATHER},
  };
  for (const auto& [name, kind] : kKinds) {
    if (absl::StrContains(op, name)) return kind;
  }
  return v1::COLLECTIVE_KIND_UNSPECIFIED;
}

// Whether the event is a collective, and which: c10d's "<backend>:<op>"
// work names, trainscope's export categories, Kineto's record_param_comms.
v1::CollectiveKind CollectiveOf(const TraceEvent& e) {
  for (const char* backend : {"gloo:", "nccl:", "mpi:", "ucc:"}) {
    if (absl::StartsWith(e.name, backend)) return KindOf(e.name);
  }
  if (e.cat == "collective" || e.cat == "send" || e.cat == "recv") {
    const v1::CollectiveKind kind = KindOf(e.name);
    if (kind != v1::COLLECTIVE_KIND_UNSPECIFIED) return kind;
    return e.cat == "send"   ? v1::COLLECTIVE_KIND_SEND
           : e.cat == "recv" ? v1::COLLECTIVE_KIND_RECV
                             : v1::COLLECTIVE_KIND_ALL_REDUCE;
  }
  if (!e.collective_name.empty()) return KindOf(e.collective_name);
  return v1::COLLECTIVE_KIND_UNSPECIFIED;
}

}  // namespace

// One rank's stream: its batch being built and what numbers its events.
struct TraceImporter::Rank {
  uint32_t rank = 0;
  uint64_t instance_id = 0;
  uint64_t sequence = 0;  // batches logged
  v1::EventBatch batch;
  std::map<std::string, uint32_t> strings;  // the batch's string table
  int64_t last_start = 0;
  std::optional<uint64_t> step;
  std::map<std::string, uint64_t> collectives;  // per group: instances seen

  uint32_t Intern(const std::string& s) {
    auto [it, added] = strings.try_emplace(s, static_cast<uint32_t>(batch.strings_size()));
    if (added) batch.add_strings(s);
    return it->second;
  }
};

absl::StatusOr<std::unique_ptr<TraceImporter>> TraceImporter::Create(TraceImportOptions options) {
  const std::filesystem::path dir = options.data_dir / "jobs" / options.job_id;
  std::error_code ec;
  if (std::filesystem::exists(dir, ec)) {
    return absl::AlreadyExistsError(absl::StrCat("job ", options.job_id, " already exists in ",
                                                 options.data_dir.string(),
                                                 "; import into a new --job"));
  }
  RecoveryReport report;
  absl::StatusOr<std::unique_ptr<JobLog>> log =
      JobLog::Open({.dir = dir, .fsync = options.fsync}, &report);
  if (!log.ok()) return log.status();
  return std::unique_ptr<TraceImporter>(new TraceImporter(std::move(options), std::move(*log)));
}

TraceImporter::TraceImporter(TraceImportOptions options, std::unique_ptr<JobLog> log)
    : options_(std::move(options)), log_(std::move(log)) {}

TraceImporter::~TraceImporter() = default;

absl::Status TraceImporter::Import(const std::vector<Source>& sources) {
  // One pass per (file, rank): a multi-rank file is first read for its pids.
  struct Pass {
    std::unique_ptr<ChromeTraceReader> reader;
    std::optional<uint32_t> rank;
    std::optional<uint32_t> name_rank;
    std::optional<int64_t> only_pid;
    TraceEvent event;  // the pass's next event, when `live`
    bool live = false;
  };
  absl::Status first_error;
  auto note = [&](const absl::Status& s) {
    if (first_error.ok() && !s.ok()) first_error = s;
  };
  std::vector<Pass> passes;
  for (const Source& source : sources) {
    if (!source.rank_from_pid) {
      passes.push_back({std::make_unique<ChromeTraceReader>(source.path),
                        source.rank,
                        source.name_rank,
                        {},
                        {},
                        false});
      continue;
    }
    std::set<int64_t> pids;
    ChromeTraceReader scan(source.path);
    TraceEvent e;
    absl::StatusOr<bool> got;
    while ((got = scan.Next(&e)).ok() && *got) pids.insert(e.pid);
    note(got.status());
    stats_.bytes += scan.bytes();
    for (int64_t pid : pids) {
      if (pid < 0) continue;
      passes.push_back({std::make_unique<ChromeTraceReader>(source.path),
                        static_cast<uint32_t>(pid),
                        {},
                        pid,
                        {},
                        false});
    }
  }
  // The next event of a pass (its own pid's when it filters).
  auto advance = [&](Pass& p) {
    while (true) {
      absl::StatusOr<bool> got = p.reader->Next(&p.event);
      if (!got.ok() || !*got) {
        note(got.status());
        p.live = false;
        return;
      }
      if (!p.only_pid || p.event.pid == *p.only_pid) {
        p.live = true;
        return;
      }
    }
  };
  for (Pass& p : passes) advance(p);
  // Every rank's stream opens before any event, as when agents connect.
  uint32_t world_size = 0;
  for (Pass& p : passes) {
    if (!p.rank) p.rank = p.reader->rank();
    if (!p.rank) p.rank = p.name_rank;
    if (!p.rank) {
      note(absl::InvalidArgumentError(
          absl::StrCat(p.reader->path(),
                       ": no rank: the file has no distributedInfo before its events and "
                       "its name has no rank number; give --rank (one file) or name it "
                       "like rank3.json")));
      p.live = false;
      continue;
    }
    world_size = std::max(world_size, *p.rank + 1);
  }
  for (const Pass& p : passes) {
    if (p.rank && !ranks_.count(*p.rank)) {
      if (absl::Status s = Open(*p.rank, world_size); !s.ok()) return s;
    }
  }
  // Merge by time since each pass's first event: the ranks' clocks may
  // differ by any amount (legacy traces count from each profiler's start),
  // but the ranks ran side by side.
  using Entry = std::pair<double, size_t>;
  std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> next;
  std::vector<double> origin(passes.size(), 0);
  for (size_t i = 0; i < passes.size(); ++i) {
    origin[i] = passes[i].event.ts_us;
    if (passes[i].live) next.push({0, i});
  }
  // Batches cover ~20 ms of every rank, as live agents send them, so that
  // the log interleaves the ranks (the analysis reads it in order).
  double flushed_at = 0;
  while (!next.empty()) {
    const auto [at, i] = next.top();
    Pass& p = passes[i];
    next.pop();
    if (at - flushed_at >= kBatchSpanUs) {
      for (const auto& [rank, r] : ranks_) {
        if (absl::Status s = Flush(rank); !s.ok()) return s;
      }
      flushed_at = at;
    }
    if (absl::Status s = Add(*p.rank, p.event); !s.ok()) return s;
    ++stats_.events;
    advance(p);
    if (p.live) next.push({p.event.ts_us - origin[i], i});
  }
  for (const Pass& p : passes) {
    stats_.skipped += p.reader->skipped();
    if (!p.only_pid) stats_.bytes += p.reader->bytes();
  }
  if (absl::Status s = Close(); !s.ok()) return s;
  return first_error;
}

absl::Status TraceImporter::Open(uint32_t rank_number, uint32_t world_size) {
  auto slot = std::make_unique<Rank>();
  slot->rank = rank_number;
  slot->instance_id = (uint64_t{0x7ace} << 48) | rank_number;
  v1::LogRecord record;
  record.set_logged_unix_ns(absl::GetCurrentTimeNanos());
  v1::Hello* hello = record.mutable_stream_opened()->mutable_hello();
  hello->set_job_id(options_.job_id);
  hello->set_rank(rank_number);
  hello->set_world_size(world_size);
  hello->set_host("import");
  hello->set_framework("pytorch profiler trace");
  hello->set_agent_instance_id(slot->instance_id);
  hello->set_agent_version("trainscope import");
  hello->set_recording(true);
  // The file's clock is the rank's: nominally Unix time (an import has no
  // probes); the collectives then align the ranks on one another.
  v1::ClockDomain* clock = hello->add_clock_domains();
  clock->set_name("trace");
  clock->set_realtime_minus_domain_ns(0);
  ranks_[rank_number] = std::move(slot);
  return log_->Append(record);
}

absl::Status TraceImporter::Add(uint32_t rank_number, const TraceEvent& event) {
  Rank& r = *ranks_.at(rank_number);
  const int64_t start = Ns(event.ts_us);
  auto push = [&](v1::EventKind kind, int64_t at, int64_t duration, const std::string& name,
                  uint32_t detail, uint64_t value) {
    if (r.batch.kind_size() == 0) {
      r.batch.set_base_time_ns(at);
      r.last_start = at;
    }
    r.batch.add_kind(kind);
    r.batch.add_start_delta_ns(at - r.last_start);
    r.last_start = at;
    r.batch.add_duration_ns(static_cast<uint64_t>(std::max<int64_t>(duration, 0)));
    r.batch.add_name(r.Intern(name));
    r.batch.add_thread(static_cast<uint32_t>(event.tid));
    r.batch.add_detail(detail);
    r.batch.add_value(value);
  };
  // Steps: the profiler's step annotation, or a new "step" arg.
  std::optional<uint64_t> step;
  if (absl::StartsWith(event.name, kStepPrefix)) {
    uint64_t n = 0;
    if (absl::SimpleAtoi(event.name.substr(sizeof(kStepPrefix) - 1), &n)) step = n;
  } else if (event.step && (!r.step || *event.step > *r.step)) {
    // An export's operators of adjacent steps may interleave: marks only go forward.
    step = event.step;
  }
  if (step) {
    r.step = step;
    push(v1::EVENT_KIND_STEP_MARK, start, 0, "step", 0, *step);
    ++stats_.steps;
    if (absl::StartsWith(event.name, kStepPrefix)) return absl::OkStatus();
  }
  const v1::CollectiveKind kind = CollectiveOf(event);
  if (kind == v1::COLLECTIVE_KIND_UNSPECIFIED) {
    push(v1::EVENT_KIND_OPERATOR, start, Ns(event.dur_us), event.name, 0, 0);
  } else {
    const std::string group = event.group.empty() ? "default_pg" : event.group;
    uint64_t& seen = r.collectives[group];
    ++seen;
    push(v1::EVENT_KIND_COLLECTIVE, start, Ns(event.dur_us), event.name,
         static_cast<uint32_t>(kind), 0);
    r.batch.add_group(r.Intern(group));
    r.batch.add_group_sequence(event.sequence.value_or(seen));
    r.batch.add_peer(-1);
    ++stats_.collectives;
  }
  if (r.batch.kind_size() >= kBatchEvents) return Flush(r.rank);
  return absl::OkStatus();
}

absl::Status TraceImporter::Flush(uint32_t rank) {
  Rank& r = *ranks_.at(rank);
  if (r.batch.kind_size() == 0) return absl::OkStatus();
  r.batch.set_sequence(++r.sequence);
  v1::LogRecord record;
  record.set_logged_unix_ns(absl::GetCurrentTimeNanos());
  v1::StreamBatch* batch = record.mutable_batch();
  batch->set_rank(rank);
  batch->set_agent_instance_id(r.instance_id);
  *batch->mutable_batch() = std::move(r.batch);
  r.batch = v1::EventBatch();
  r.strings.clear();
  if (absl::Status s = log_->Append(record); !s.ok()) return s;
  // The log buffers until Sync: sync as we go, so memory stays bounded.
  unsynced_bytes_ += record.ByteSizeLong();
  if (unsynced_bytes_ < kSyncBytes) return absl::OkStatus();
  unsynced_bytes_ = 0;
  return log_->Sync();
}

absl::Status TraceImporter::Close() {
  for (auto& [rank, r] : ranks_) {
    if (absl::Status s = Flush(rank); !s.ok()) return s;
    v1::LogRecord record;
    record.set_logged_unix_ns(absl::GetCurrentTimeNanos());
    v1::StreamClosed* closed = record.mutable_stream_closed();
    closed->set_rank(rank);
    closed->set_agent_instance_id(r->instance_id);
    closed->set_goodbye(true);
    closed->set_reason("end of the imported trace");
    if (absl::Status s = log_->Append(record); !s.ok()) return s;
  }
  return log_->Sync();
}

}  // namespace trainscope::collector
