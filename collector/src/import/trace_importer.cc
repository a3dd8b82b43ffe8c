#include "trainscope/collector/import/trace_importer.h"

#include <algorithm>
#include <functional>
#include <queue>
#include <set>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "trainscope/collector/import/kineto_names.h"
#include "trainscope/collector/import/trace_event_sorter.h"
#include "trainscope/proto/event_batch_columns.h"

namespace trainscope::collector {
namespace {

namespace v1 = trainscope::v1;

// Events per logged batch (what an agent sends at most, about).
constexpr int kBatchEvents = 4096;
// ... and time each batch covers (an agent's flush interval).
constexpr int64_t kBatchSpanNs = 20'000'000;
// Logged bytes between syncs.
constexpr size_t kSyncBytes = 16 << 20;

bool IsDeviceWork(const TraceEvent& e) {
  const KinetoCategory c = CategoryOf(e.cat);
  return c == KinetoCategory::kKernel || c == KinetoCategory::kMemcpy ||
         c == KinetoCategory::kMemset || c == KinetoCategory::kGpuAnnotation ||
         c == KinetoCategory::kGpuSync;
}

}  // namespace

// One rank's stream: its batch being built and what numbers its events.
struct TraceImporter::Rank {
  uint32_t rank = 0;
  uint64_t instance_id = 0;
  uint64_t sequence = 0;  // batches logged
  v1::EventBatch batch;
  absl::flat_hash_map<std::string, uint32_t> strings;  // the batch's string table
  int64_t last_start = 0;

  uint32_t Intern(absl::string_view s) {
    auto it = strings.find(s);
    if (it != strings.end()) return it->second;
    const uint32_t id = static_cast<uint32_t>(batch.strings_size());
    batch.add_strings(std::string(s));
    strings.emplace(std::string(s), id);
    return id;
  }
};

// One reading of one file (of one rank's events of it).
struct TraceImporter::Pass {
  std::unique_ptr<ChromeTraceReader> reader;
  std::unique_ptr<TraceEventSorter> sorter;
  std::optional<uint32_t> rank;
  std::optional<uint32_t> name_rank;
  std::optional<int64_t> only_pid;
  bool forced_rank = false;
  bool has_step_marks = false;
  std::optional<int64_t> device;  // the GPU its device work ran on
  StepFinder::Result steps;
  std::unique_ptr<TraceEventMapper> mapper;
  const SortedTraceEvent* next = nullptr;  // the pass's next event, when live
  int64_t origin_ns = 0;
  size_t report = 0;  // index in stats_.files
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
  absl::Status first_error;
  auto note = [&](const absl::Status& s) {
    if (first_error.ok() && !s.ok()) first_error = s;
  };
  // One pass per (file, rank): a multi-rank file is first read for its pids.
  std::vector<Pass> passes;
  for (const Source& source : sources) {
    if (!source.rank_from_pid) {
      Pass p;
      p.reader = std::make_unique<ChromeTraceReader>(source.path);
      p.rank = source.rank;
      p.forced_rank = source.rank.has_value();
      p.name_rank = source.name_rank;
      passes.push_back(std::move(p));
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
      Pass p;
      p.reader = std::make_unique<ChromeTraceReader>(source.path);
      p.rank = static_cast<uint32_t>(pid);
      p.only_pid = pid;
      passes.push_back(std::move(p));
    }
  }
  // Each pass read whole, into time order: Kineto writes a kernel long
  // before the launch that precedes it in time.
  const size_t per_pass =
      std::max<size_t>(1, options_.max_events_in_memory / std::max<size_t>(passes.size(), 1));
  for (Pass& p : passes) {
    p.sorter = std::make_unique<TraceEventSorter>(
        TraceEventSorterOptions{.max_events_in_memory = per_pass});
    TraceEvent e;
    while (true) {
      absl::StatusOr<bool> got = p.reader->Next(&e);
      if (!got.ok() || !*got) {
        note(got.status());
        break;
      }
      if (p.only_pid && e.pid != *p.only_pid) continue;
      if (e.phase == TraceEvent::Phase::kComplete) {
        if (e.step || (absl::StartsWith(e.name, "ProfilerStep#") &&
                       CategoryOf(e.cat) == KinetoCategory::kCpu)) {
          p.has_step_marks = true;
        }
      }
      const bool device_work = IsDeviceWork(e);
      if (device_work && !p.device && e.phase == TraceEvent::Phase::kComplete) {
        p.device = e.device.value_or(e.pid);
      }
      if (absl::Status s = p.sorter->Add(e, device_work); !s.ok()) return s;
    }
    if (absl::Status s = p.sorter->Finish(); !s.ok()) return s;
    stats_.skipped += p.reader->skipped();
    if (!p.only_pid) stats_.bytes += p.reader->bytes();
  }
  // Ranks: the flag, the trace's distributedInfo, the file's name, else a
  // single file is rank 0.
  uint32_t world_size = 0;
  for (Pass& p : passes) {
    TraceFileReport report;
    report.path = p.reader->path();
    const TraceMetadata& meta = p.reader->metadata();
    report.host = meta.host;
    report.trace_world_size = meta.world_size;
    report.gpus = meta.gpus.size();
    report.has_step_marks = p.has_step_marks;
    report.sort_runs_spilled = p.sorter->runs_spilled();
    if (p.only_pid) {
      report.rank_source = "pid";
    } else if (p.forced_rank) {
      report.rank_source = "--rank";
    } else if (meta.rank) {
      p.rank = meta.rank;
      report.rank_source = "distributedInfo";
    } else if (p.name_rank) {
      p.rank = p.name_rank;
      report.rank_source = "file name";
    } else if (passes.size() == 1) {
      p.rank = 0;
      report.rank_source = "only file";
    }
    report.rank = p.rank;
    p.report = stats_.files.size();
    stats_.files.push_back(std::move(report));
    if (!p.rank) {
      note(absl::InvalidArgumentError(
          absl::StrCat(p.reader->path(),
                       ": no rank: the file has no distributedInfo and its name has no rank "
                       "number, and it is not the only file; give --rank (one file) or name "
                       "it like rank3.json")));
      continue;
    }
    // The ranks imported make the job's world (the step assembler waits for
    // every rank of it); the trace's own world size is reported.
    world_size = std::max(world_size, *p.rank + 1);
  }
  // Steps, where a file has no marks of its own.
  for (Pass& p : passes) {
    if (!p.rank || p.has_step_marks) continue;
    StepFinder finder;
    if (absl::Status s = p.sorter->Rewind(); !s.ok()) return s;
    while (const SortedTraceEvent* e = p.sorter->Next()) {
      if (e->phase != TraceEvent::Phase::kComplete) continue;
      if (CategoryOf(p.sorter->str(e->cat)) != KinetoCategory::kCpu) continue;
      finder.Add(e->tid, e->ts_ns, e->end_ns(), p.sorter->str(e->name));
    }
    if (absl::Status s = p.sorter->status(); !s.ok()) return s;
    p.steps = finder.Find();
    stats_.files[p.report].step_source = p.steps.source;
    stats_.files[p.report].step_description = p.steps.description;
  }
  // Every rank's stream opens before any event, as when agents connect.
  for (const Pass& p : passes) {
    if (p.rank && !ranks_.count(*p.rank)) {
      if (absl::Status s = Open(*p.rank, world_size, p, &stats_.files[p.report]); !s.ok()) {
        return s;
      }
    }
  }
  for (Pass& p : passes) {
    if (!p.rank) continue;
    if (absl::Status s = p.sorter->Rewind(); !s.ok()) return s;
    const uint32_t rank = *p.rank;
    p.mapper = std::make_unique<TraceEventMapper>(
        p.sorter.get(),
        TraceEventMapperOptions{.step_starts_ns = p.steps.starts_ns, .step_thread = p.steps.thread},
        [this, rank](const MappedEvent& m) { return Add(rank, m); });
    p.next = p.sorter->Next();
    if (p.next != nullptr) p.origin_ns = p.next->ts_ns;
  }
  // Merge by time since each pass's first event: the ranks' clocks may
  // differ by any amount (legacy traces count from each profiler's start),
  // but the ranks ran side by side.
  using Entry = std::pair<int64_t, size_t>;
  std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> next;
  for (size_t i = 0; i < passes.size(); ++i) {
    if (passes[i].next != nullptr) next.push({0, i});
  }
  // Batches cover ~20 ms of every rank, as live agents send them, so that
  // the log interleaves the ranks (the analysis reads it in order).
  int64_t flushed_at = 0;
  while (!next.empty()) {
    const auto [at, i] = next.top();
    Pass& p = passes[i];
    next.pop();
    if (at - flushed_at >= kBatchSpanNs) {
      for (const auto& [rank, r] : ranks_) {
        if (absl::Status s = Flush(rank); !s.ok()) return s;
      }
      flushed_at = at;
    }
    if (absl::Status s = p.mapper->Map(*p.next); !s.ok()) return s;
    p.next = p.sorter->Next();
    if (p.next != nullptr) {
      next.push({p.next->ts_ns - p.origin_ns, i});
    } else {
      note(p.sorter->status());
      if (absl::Status s = p.mapper->Finish(); !s.ok()) return s;
    }
  }
  for (const Pass& p : passes) {
    if (p.mapper == nullptr) continue;
    const TraceMappingStats m = p.mapper->stats();
    stats_.mapping.Add(m);
    stats_.events += m.events;
    stats_.collectives += m.collectives;
    stats_.steps += m.steps;
  }
  if (absl::Status s = Close(); !s.ok()) return s;
  return first_error;
}

absl::Status TraceImporter::Open(uint32_t rank_number, uint32_t world_size, const Pass& pass,
                                 TraceFileReport* report) {
  auto slot = std::make_unique<Rank>();
  slot->rank = rank_number;
  slot->instance_id = (uint64_t{0x7ace} << 48) | rank_number;
  const TraceMetadata& meta = pass.reader->metadata();
  v1::LogRecord record;
  record.set_logged_unix_ns(absl::GetCurrentTimeNanos());
  v1::Hello* hello = record.mutable_stream_opened()->mutable_hello();
  hello->set_job_id(options_.job_id);
  hello->set_rank(rank_number);
  hello->set_world_size(world_size);
  hello->set_host(meta.host.empty() ? "import" : meta.host);
  hello->set_framework("pytorch profiler trace");
  hello->set_agent_instance_id(slot->instance_id);
  hello->set_agent_version("trainscope import");
  hello->set_recording(true);
  // deviceProperties lists every GPU of the host; the rank's is the one its
  // kernels ran on.
  if (pass.device) {
    hello->set_device(absl::StrCat("cuda:", *pass.device));
  } else if (!meta.gpus.empty()) {
    hello->set_device(absl::StrCat("cuda:", meta.gpus.front().id));
  }
  // AMD's Kineto writes ROCm devices into the same deviceProperties.
  for (const TraceGpu& g : meta.gpus) {
    v1::GpuDevice* gpu = hello->add_gpus();
    gpu->set_index(g.id);
    gpu->set_name(g.name);
    const bool amd = absl::StrContains(g.name, "AMD") || absl::StrContains(g.name, "Radeon") ||
                     absl::StrContains(g.name, "Instinct");
    gpu->set_vendor(amd ? "amd" : "nvidia");
    gpu->set_memory_bytes(g.total_memory);
    gpu->set_multiprocessors(g.multiprocessors);
    if (g.compute_major >= 0) {
      gpu->set_compute_capability(absl::StrCat(g.compute_major, ".", std::max(g.compute_minor, 0)));
    }
  }
  // The file's clock is the rank's: nominally Unix time (an import has no
  // probes). Its domain says which ranks read one clock: a named host's, or
  // the import's (one host) unless the files came from several.
  v1::ClockDomain* clock = hello->add_clock_domains();
  clock->set_name("trace");
  clock->set_realtime_minus_domain_ns(0);
  if (!meta.host.empty()) {
    clock->set_domain_id(absl::StrCat("host:", meta.host));
  } else if (options_.separate_clocks) {
    clock->set_domain_id(absl::StrCat("import:", options_.job_id, ":rank", rank_number));
  } else {
    clock->set_domain_id(absl::StrCat("import:", options_.job_id));
  }
  report->clock_domain = clock->domain_id();
  ranks_[rank_number] = std::move(slot);
  return log_->Append(record);
}

absl::Status TraceImporter::Add(uint32_t rank_number, const MappedEvent& m) {
  Rank& r = *ranks_.at(rank_number);
  if (r.batch.kind_size() == 0) {
    r.batch.set_base_time_ns(m.start_ns);
    r.last_start = m.start_ns;
  }
  r.batch.add_kind(m.kind);
  r.batch.add_start_delta_ns(m.start_ns - r.last_start);
  r.last_start = m.start_ns;
  r.batch.add_duration_ns(static_cast<uint64_t>(std::max<int64_t>(m.duration_ns, 0)));
  r.batch.add_name(r.Intern(m.name));
  r.batch.add_thread(m.thread);
  r.batch.add_detail(m.detail);
  r.batch.add_value(m.value);
  if (protocol::IsCollectiveKind(m.kind)) {
    r.batch.add_group(r.Intern(m.group));
    r.batch.add_group_sequence(m.group_sequence);
    r.batch.add_peer(-1);
  }
  if (protocol::IsGpuKind(m.kind)) {
    r.batch.add_gpu_device(m.gpu_device);
    r.batch.add_gpu_stream(m.gpu_stream);
    r.batch.add_gpu_correlation(m.gpu_correlation);
    r.batch.add_gpu_launch_delta_ns(m.gpu_correlation != 0 ? m.gpu_launch_delta_ns : 0);
    r.batch.add_gpu_launch_op(m.gpu_correlation != 0 ? r.Intern(m.gpu_launch_op) : 0);
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
