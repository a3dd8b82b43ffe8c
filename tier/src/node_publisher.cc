#include "trainscope/tier/node_publisher.h"

#include <cstdio>
#include <fstream>
#include <system_error>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "trainscope/collector/pipeline/job_token.h"
#include "trainscope/collector/store/log_reader.h"
#include "trainscope/tier/summary_batch.h"
#include "trainscope/tier/tier_subjects.h"

namespace trainscope::tier {
namespace {

namespace fs = std::filesystem;

fs::path PublishedFile(const fs::path& data_dir, absl::string_view job_id) {
  return data_dir / "tier" / "published" / std::string(job_id);
}

uint64_t ReadCount(const fs::path& path) {
  std::ifstream in(path);
  std::string line;
  uint64_t value = 0;
  if (in && std::getline(in, line) && absl::SimpleAtoi(line, &value)) return value;
  return 0;
}

// Atomic replace: a crash leaves the old count or the new one, never half.
void WriteText(const fs::path& path, const std::string& text) {
  const fs::path tmp = path.string() + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << text;
    if (!out) return;
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
}

std::pair<uint32_t, uint64_t> StreamOf(const v1::LogRecord& record) {
  switch (record.body_case()) {
    case v1::LogRecord::kStreamOpened:
      return {record.stream_opened().hello().rank(),
              record.stream_opened().hello().agent_instance_id()};
    case v1::LogRecord::kBatch:
      return {record.batch().rank(), record.batch().agent_instance_id()};
    case v1::LogRecord::kStreamClosed:
      return {record.stream_closed().rank(), record.stream_closed().agent_instance_id()};
    default:
      return {0, 0};
  }
}

}  // namespace

NodePublisher::NodePublisher(NodePublisherOptions options)
    : options_(std::move(options)), buffer_(options_.buffer_bytes) {}

absl::StatusOr<std::unique_ptr<NodePublisher>> NodePublisher::Create(NodePublisherOptions options) {
  if (absl::Status s = ValidateNodeName(options.node, "--node-name"); !s.ok()) return s;
  if (absl::Status s = ValidateNatsConfig(options.nats, "--publish"); !s.ok()) return s;
  std::error_code ec;
  fs::create_directories(options.data_dir / "tier" / "published", ec);
  if (ec) {
    return absl::FailedPreconditionError(absl::StrCat(
        "--publish: cannot create ", (options.data_dir / "tier").string(), ": ", ec.message()));
  }
  std::unique_ptr<NodePublisher> publisher(new NodePublisher(std::move(options)));
  if (absl::Status s = publisher->ScanLogs(); !s.ok()) return s;
  publisher->thread_ = std::thread([p = publisher.get()] { p->Run(); });
  return publisher;
}

NodePublisher::~NodePublisher() { Stop(absl::ZeroDuration()); }

absl::Status NodePublisher::ScanLogs() {
  const fs::path jobs = options_.data_dir / "jobs";
  std::error_code ec;
  if (!fs::is_directory(jobs, ec)) return absl::OkStatus();
  base::MutexLock lock(&mu_);
  for (const fs::directory_entry& entry : fs::directory_iterator(jobs, ec)) {
    if (!entry.is_directory()) continue;
    const std::string job_id = entry.path().filename().string();
    absl::StatusOr<collector::LogReader> reader = collector::LogReader::Open(entry.path());
    if (!reader.ok()) continue;  // no segment yet: nothing to publish
    JobState& job = jobs_[job_id];
    absl::Status read = reader->ForEach(
        [&job](const v1::LogRecord& record) {
          if (!collector::IsSinkRecord(record)) return true;
          if (record.has_stream_opened()) {
            job.hellos[StreamOf(record)] = record.stream_opened().hello();
          }
          ++job.next_index;
          return true;
        },
        nullptr);
    if (!read.ok()) {
      Notice(absl::StrCat("trainscope-collector: --publish: cannot read the log of job ", job_id,
                          " (", read.message(), "); its records are not published"));
      continue;
    }
    job.acked = std::min(ReadCount(PublishedFile(options_.data_dir, job_id)), job.next_index);
    job.catching_up = job.acked < job.next_index;
  }
  return absl::OkStatus();
}

std::string NodePublisher::TokenOf(const std::string& job_id, JobState& job) {
  if (job.token.has_value()) return *job.token;
  absl::StatusOr<collector::JobToken> token =
      collector::ReadJobToken(options_.data_dir / "jobs" / job_id);
  if (!token.ok() || token->value.empty()) return "";  // not stored yet: read again next time
  // A token the node made up is the node's, not the job's: other nodes made
  // up their own, and the job level makes up its own too.
  job.token = token->generated ? "" : token->value;
  return *job.token;
}

std::optional<PublishBuffer::Item> NodePublisher::MakeItem(const std::string& job_id,
                                                           uint64_t index,
                                                           const v1::LogRecord& record,
                                                           JobState& job) {
  v1::TierRecord out;
  out.set_job_id(job_id);
  out.set_node(options_.node);
  out.set_logged_unix_ns(record.logged_unix_ns());
  out.set_published_unix_ns(absl::GetCurrentTimeNanos());
  const auto stream = StreamOf(record);
  if (record.has_stream_opened()) job.hellos[stream] = record.stream_opened().hello();
  auto hello = job.hellos.find(stream);
  if (hello != job.hellos.end()) {
    *out.mutable_hello() = hello->second;
  } else {
    out.mutable_hello()->set_job_id(job_id);
    out.mutable_hello()->set_rank(stream.first);
    out.mutable_hello()->set_agent_instance_id(stream.second);
  }
  out.mutable_hello()->set_job_token(TokenOf(job_id, job));
  switch (record.body_case()) {
    case v1::LogRecord::kStreamOpened:
      *out.mutable_opened() = record.stream_opened();
      out.mutable_opened()->mutable_hello()->clear_job_token();
      break;
    case v1::LogRecord::kBatch:
      if (options_.summary) {
        v1::StreamBatch* batch = out.mutable_batch();
        batch->set_rank(record.batch().rank());
        batch->set_agent_instance_id(record.batch().agent_instance_id());
        *batch->mutable_batch() = SummaryBatch(record.batch().batch());
      } else {
        *out.mutable_batch() = record.batch();
      }
      break;
    case v1::LogRecord::kStreamClosed:
      *out.mutable_closed() = record.stream_closed();
      break;
    default:
      return std::nullopt;
  }
  PublishBuffer::Item item;
  item.job_id = job_id;
  item.index = index;
  item.subject = RecordSubject(job_id, options_.node);
  item.msg_id = RecordMsgId(out);
  item.payload = out.SerializeAsString();
  return item;
}

void NodePublisher::OnDurable(absl::string_view job_id, const v1::LogRecord& record) {
  if (!collector::IsSinkRecord(record)) return;
  const std::string job(job_id);
  base::MutexLock lock(&mu_);
  JobState& state = jobs_[job];
  const uint64_t index = state.next_index++;
  if (state.catching_up) {
    // The catch-up reads it from the log; keep the stream's Hello for later records.
    if (record.has_stream_opened()) state.hellos[StreamOf(record)] = record.stream_opened().hello();
    return;
  }
  std::optional<PublishBuffer::Item> item = MakeItem(job, index, record, state);
  if (!item) return;
  if (!buffer_.Push(std::move(*item))) {
    // Over the bound: this record and the job's next ones come back from the log.
    state.catching_up = true;
    ++counters_.buffer_refused;
  }
}

void NodePublisher::Stop(absl::Duration drain) {
  {
    base::MutexLock lock(&mu_);
    if (stopping_ && !thread_.joinable()) return;
    stopping_ = true;
    drain_deadline_ = absl::Now() + drain;
    stop_requested_.SignalAll();
  }
  buffer_.Wake();
  if (thread_.joinable()) thread_.join();
  WriteStatus();
}

void NodePublisher::Notice(absl::string_view line) const {
  if (options_.notice) {
    options_.notice(line);
  } else {
    std::fprintf(stderr, "%.*s\n", static_cast<int>(line.size()), line.data());
  }
}

void NodePublisher::OnPublishError(jsCtx*, jsPubAckErr* err, void* closure) {
  auto* self = static_cast<NodePublisher*>(closure);
  base::MutexLock lock(&self->mu_);
  self->publish_failed_ = true;
  self->counters_.last_error =
      absl::StrCat("publish failed: ", natsStatus_GetText(err->Err),
                   err->ErrText != nullptr ? absl::StrCat(" (", err->ErrText, ")") : "");
}

bool NodePublisher::EnsureConnected() {
  if (client_ != nullptr) return true;
  absl::StatusOr<std::unique_ptr<NatsClient>> client =
      NatsClient::Connect(options_.nats, &NodePublisher::OnPublishError, this);
  absl::Status ready = client.ok() ? absl::OkStatus() : client.status();
  if (ready.ok()) ready = (*client)->EnsureStream(kRecordsStream, kAllRecords, options_.limits);
  if (ready.ok()) ready = (*client)->EnsureStream(kCommandsStream, kAllCommands, options_.limits);
  if (!ready.ok()) {
    bool first = !in_outage_;
    in_outage_ = true;
    {
      base::MutexLock lock(&mu_);
      counters_.connected = false;
      counters_.last_error = std::string(ready.message());
      if (first) ++counters_.outages;
    }
    if (first) {
      Notice(absl::StrCat("trainscope-collector: --publish: ", ready.message(),
                          "; buffering records for the job-level collector (up to ",
                          options_.buffer_bytes >> 20,
                          " MiB in memory, then read back from the log) and retrying every ",
                          absl::FormatDuration(options_.retry)));
    }
    return false;
  }
  client_ = std::move(*client);
  if (in_outage_) {
    Notice(absl::StrCat("trainscope-collector: --publish: NATS at ",
                        UrlWithoutCredentials(options_.nats.url), " reachable again; catching up"));
  } else {
    Notice(absl::StrCat("trainscope-collector: publishing to NATS at ",
                        UrlWithoutCredentials(options_.nats.url), " as node ", options_.node));
  }
  in_outage_ = false;
  base::MutexLock lock(&mu_);
  counters_.connected = true;
  counters_.last_error.clear();
  return true;
}

absl::Status NodePublisher::PublishWindow(const std::vector<PublishBuffer::Item>& items) {
  {
    base::MutexLock lock(&mu_);
    publish_failed_ = false;
  }
  jsCtx* js = client_->js();
  natsStatus s = NATS_OK;
  for (const PublishBuffer::Item& item : items) {
    jsPubOptions po;
    jsPubOptions_Init(&po);
    po.MsgId = item.msg_id.c_str();
    s = js_PublishAsync(js, item.subject.c_str(), item.payload.data(),
                        static_cast<int>(item.payload.size()), &po);
    if (s != NATS_OK) break;
  }
  if (s == NATS_OK) {
    jsPubOptions po;
    jsPubOptions_Init(&po);
    po.MaxWait = 5000;
    s = js_PublishAsyncComplete(js, &po);
  }
  bool failed = s != NATS_OK;
  {
    base::MutexLock lock(&mu_);
    failed = failed || publish_failed_;
  }
  if (failed) {
    // Forget what is still pending: the window goes again whole.
    natsMsgList pending;
    if (js_PublishAsyncGetPendingList(&pending, js) == NATS_OK) natsMsgList_Destroy(&pending);
    absl::Status error = s != NATS_OK ? NatsError(s, "publish") : absl::UnavailableError("publish");
    base::MutexLock lock(&mu_);
    if (s != NATS_OK) counters_.last_error = std::string(error.message());
    counters_.connected = client_->connected();
    return error;
  }
  MarkAcked(items);
  return absl::OkStatus();
}

void NodePublisher::MarkAcked(const std::vector<PublishBuffer::Item>& items) {
  std::map<std::string, uint64_t> changed;
  const absl::Time now = absl::Now();
  {
    base::MutexLock lock(&mu_);
    counters_.published += items.size();
    counters_.connected = true;
    for (const PublishBuffer::Item& item : items) {
      JobState& job = jobs_[item.job_id];
      if (changed.count(item.job_id) == 0) {
        job.recent_acks.emplace_back(now, job.acked);
        while (job.recent_acks.size() > 1 && job.recent_acks.front().first < now - 6 * kRewind) {
          job.recent_acks.pop_front();
        }
        changed[item.job_id] = job.acked;
      }
      if (item.index < job.acked) continue;
      job.acked_ahead.insert(item.index);
      while (!job.acked_ahead.empty() && *job.acked_ahead.begin() <= job.acked) {
        if (*job.acked_ahead.begin() == job.acked) ++job.acked;
        job.acked_ahead.erase(job.acked_ahead.begin());
      }
      changed[item.job_id] = job.acked;
    }
  }
  for (const auto& [job_id, acked] : changed) {
    WriteText(PublishedFile(options_.data_dir, job_id), absl::StrCat(acked, "\n"));
  }
}

bool NodePublisher::CatchUp(const std::string& job_id) {
  for (;;) {
    uint64_t from = 0;
    uint64_t limit = 0;
    {
      base::MutexLock lock(&mu_);
      JobState& job = jobs_[job_id];
      from = job.acked;
      limit = job.next_index;
    }
    if (from < limit) {
      absl::StatusOr<collector::LogReader> reader =
          collector::LogReader::Open(options_.data_dir / "jobs" / job_id);
      if (!reader.ok()) {
        Notice(absl::StrCat("trainscope-collector: --publish: job ", job_id,
                            ": cannot read its log back (", reader.status().message(),
                            "); its unpublished records are lost to the job level"));
        base::MutexLock lock(&mu_);
        jobs_[job_id].catching_up = false;
        return true;
      }
      uint64_t index = 0;
      bool ok = true;
      std::vector<PublishBuffer::Item> window;
      absl::Status read = reader->ForEach(
          [&](const v1::LogRecord& record) {
            if (!collector::IsSinkRecord(record)) return true;
            const uint64_t i = index++;
            if (i >= limit) return false;
            std::optional<PublishBuffer::Item> item;
            {
              base::MutexLock lock(&mu_);
              JobState& job = jobs_[job_id];
              if (record.has_stream_opened()) {
                job.hellos[StreamOf(record)] = record.stream_opened().hello();
              }
              if (i < from) return true;
              item = MakeItem(job_id, i, record, job);
            }
            if (item) window.push_back(std::move(*item));
            if (window.size() >= options_.window) {
              if (!PublishWindow(window).ok()) {
                ok = false;
                return false;
              }
              base::MutexLock lock(&mu_);
              counters_.caught_up += window.size();
              window.clear();
            }
            return true;
          },
          nullptr);
      if (ok && !window.empty()) {
        ok = PublishWindow(window).ok();
        if (ok) {
          base::MutexLock lock(&mu_);
          counters_.caught_up += window.size();
        }
      }
      if (!ok) return false;
      if (!read.ok()) {
        Notice(absl::StrCat("trainscope-collector: --publish: job ", job_id,
                            ": reading its log back failed: ", read.message()));
      }
    }
    base::MutexLock lock(&mu_);
    JobState& job = jobs_[job_id];
    if (job.next_index == limit) {
      // Everything counted has been read back: live again. Records handed
      // over from now on go through the buffer.
      job.catching_up = false;
      return true;
    }
  }
}

void NodePublisher::Rewind() {
  const absl::Time since = absl::Now() - kRewind;
  base::MutexLock lock(&mu_);
  for (auto& [job_id, job] : jobs_) {
    uint64_t from = job.acked;
    for (const auto& [when, acked_before] : job.recent_acks) {
      if (when >= since) from = std::min(from, acked_before);
    }
    if (from == job.acked) continue;
    job.acked = from;
    job.acked_ahead.clear();
    job.recent_acks.clear();
    job.catching_up = true;
    ++counters_.rewinds;
  }
}

void NodePublisher::WriteStatus() {
  const Counters c = counters();
  WriteText(
      options_.data_dir / "tier" / "publisher.status",
      absl::StrCat("node ", options_.node, "\nurl ", UrlWithoutCredentials(options_.nats.url),
                   "\nconnected ", c.connected ? 1 : 0, "\npublished ", c.published,
                   "\nresent_windows ", c.resent_windows, "\ncaught_up ", c.caught_up,
                   "\nbuffer_refused ", c.buffer_refused, "\nqueued ", c.queued, "\nqueued_bytes ",
                   c.queued_bytes, "\njobs_catching_up ", c.jobs_catching_up, "\noutages ",
                   c.outages, "\nrewinds ", c.rewinds, "\nlast_error ", c.last_error, "\n"));
}

NodePublisher::Counters NodePublisher::counters() const {
  const PublishBuffer::Counters b = buffer_.counters();
  base::MutexLock lock(&mu_);
  Counters c = counters_;
  c.queued = b.queued;
  c.queued_bytes = b.queued_bytes;
  c.jobs_catching_up = 0;
  for (const auto& [job_id, job] : jobs_) c.jobs_catching_up += job.catching_up ? 1 : 0;
  return c;
}

void NodePublisher::Run() {
  absl::Time next_status = absl::InfinitePast();
  for (;;) {
    bool stopping = false;
    absl::Time deadline;
    {
      base::MutexLock lock(&mu_);
      stopping = stopping_;
      deadline = drain_deadline_;
    }
    const absl::Time now = absl::Now();
    if (now >= next_status) {
      WriteStatus();
      next_status = now + absl::Seconds(1);
    }
    if (stopping && (now >= deadline || (retry_.empty() && buffer_.counters().queued == 0))) {
      return;
    }
    if (!EnsureConnected()) {
      const absl::Time retry_at = absl::Now() + options_.retry;
      base::MutexLock lock(&mu_);
      while (!stopping_ && !stop_requested_.WaitWithDeadline(&mu_, retry_at)) {
      }
      if (stopping_) return;  // nothing can drain without NATS
      continue;
    }
    if (natsStatistics* stats = nullptr; natsStatistics_Create(&stats) == NATS_OK) {
      uint64_t reconnects = 0;
      if (natsConnection_GetStats(client_->connection(), stats) == NATS_OK &&
          natsStatistics_GetCounts(stats, nullptr, nullptr, nullptr, nullptr, &reconnects) ==
              NATS_OK &&
          reconnects > reconnects_seen_) {
        reconnects_seen_ = reconnects;
        Rewind();  // the server may have restarted without what it had last
      }
      natsStatistics_Destroy(stats);
    }
    if (!retry_.empty()) {
      if (PublishWindow(retry_).ok()) {
        retry_.clear();
        Rewind();  // the failure may have been the server going away
      } else {
        const absl::Time retry_at = absl::Now() + absl::Milliseconds(250);
        base::MutexLock lock(&mu_);
        ++counters_.resent_windows;
        while (!stopping_ && !stop_requested_.WaitWithDeadline(&mu_, retry_at)) {
        }
        continue;
      }
    }
    // Jobs behind first: their records are older than anything buffered.
    std::vector<std::string> behind;
    {
      base::MutexLock lock(&mu_);
      for (const auto& [job_id, job] : jobs_) {
        if (job.catching_up) behind.push_back(job_id);
      }
    }
    bool failed = false;
    for (const std::string& job_id : behind) {
      if (!CatchUp(job_id)) {
        failed = true;
        break;
      }
    }
    if (failed) {
      const absl::Time retry_at = absl::Now() + absl::Milliseconds(250);
      base::MutexLock lock(&mu_);
      while (!stopping_ && !stop_requested_.WaitWithDeadline(&mu_, retry_at)) {
      }
      continue;
    }
    std::vector<PublishBuffer::Item> window =
        buffer_.Take(options_.window, absl::Milliseconds(200));
    if (window.empty()) continue;
    if (!PublishWindow(window).ok()) retry_ = std::move(window);
  }
}

}  // namespace trainscope::tier
