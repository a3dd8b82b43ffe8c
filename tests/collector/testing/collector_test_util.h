// Helpers for the collector's unit tests: a temporary directory, a fake
// AgentStream (the transport as the core sees it), a recording FeedSink and
// builders for valid Hello and EventBatch messages.
//
// Threading: the fakes are thread-safe (pipelines call them from their thread).
#ifndef TRAINSCOPE_TESTS_COLLECTOR_TESTING_COLLECTOR_TEST_UTIL_H_
#define TRAINSCOPE_TESTS_COLLECTOR_TESTING_COLLECTOR_TEST_UTIL_H_

#include <stdlib.h>

#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "trainscope/base/mutex.h"
#include "trainscope/collector/ingest/agent_stream.h"
#include "trainscope/collector/publish/feed_sink.h"
#include "trainscope/proto/protocol.h"
#include "trainscope/v1/agent.pb.h"
#include "trainscope/v1/feed.pb.h"

namespace trainscope::collector::testing {

inline constexpr absl::Duration kWait = absl::Seconds(10);  // deadline for every wait

class ScopedTempDir {
 public:
  ScopedTempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "ts-collector-XXXXXX").string();
    path_ = mkdtemp(pattern.data());
  }
  ~ScopedTempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

class FakeAgentStream : public AgentStream {
 public:
  struct State {
    std::vector<v1::Control> sent;
    std::optional<absl::Status> finished;
    int read_requests = 0;
    int finish_calls = 0;
    std::vector<size_t> acks_at_read;  // how many acks had been sent at each read request

    std::vector<uint64_t> acks() const {  // up_to_sequence of every Ack, in order
      std::vector<uint64_t> out;
      for (const v1::Control& c : sent) {
        if (c.has_ack()) out.push_back(c.ack().up_to_sequence());
      }
      return out;
    }
    const v1::Control* Find(v1::Control::BodyCase body) const {
      for (const v1::Control& c : sent) {
        if (c.body_case() == body) return &c;
      }
      return nullptr;
    }
  };

  void Send(v1::Control control) override {
    base::MutexLock lock(&mu_);
    state_.sent.push_back(std::move(control));
    changed_.SignalAll();
  }
  void RequestRead() override {
    base::MutexLock lock(&mu_);
    ++state_.read_requests;
    state_.acks_at_read.push_back(state_.acks().size());
    changed_.SignalAll();
  }
  void Finish(absl::Status status) override {
    base::MutexLock lock(&mu_);
    ++state_.finish_calls;
    if (!state_.finished) state_.finished = std::move(status);
    changed_.SignalAll();
  }

  // Waits until `ready` holds (it is called under the lock); false on timeout.
  bool WaitUntil(const std::function<bool(const State&)>& ready, absl::Duration timeout = kWait) {
    const absl::Time deadline = absl::Now() + timeout;
    base::MutexLock lock(&mu_);
    while (!ready(state_)) {
      if (changed_.WaitWithDeadline(&mu_, deadline)) return ready(state_);
    }
    return true;
  }
  bool WaitForAcks(size_t count) {
    return WaitUntil([count](const State& s) { return s.acks().size() >= count; });
  }
  bool WaitFor(v1::Control::BodyCase body) {
    return WaitUntil([body](const State& s) { return s.Find(body) != nullptr; });
  }
  bool WaitForFinish() {
    return WaitUntil([](const State& s) { return s.finished.has_value(); });
  }
  bool WaitForReadRequests(int count) {
    return WaitUntil([count](const State& s) { return s.read_requests >= count; });
  }

  State state() const {
    base::MutexLock lock(&mu_);
    return state_;
  }

 private:
  mutable base::Mutex mu_;
  State state_ ABSL_GUARDED_BY(mu_);
  base::CondVar changed_;  // signalled on every change of state_
};

class RecordingFeedSink : public FeedSink {
 public:
  void Publish(v1::FeedUpdate update) override {
    base::MutexLock lock(&mu_);
    updates_.push_back(std::move(update));
  }
  std::vector<v1::FeedUpdate> updates() const {
    base::MutexLock lock(&mu_);
    return updates_;
  }
  size_t size() const {
    base::MutexLock lock(&mu_);
    return updates_.size();
  }

 private:
  mutable base::Mutex mu_;
  std::vector<v1::FeedUpdate> updates_ ABSL_GUARDED_BY(mu_);
};

inline v1::Hello MakeHello(const std::string& job, uint32_t rank, uint32_t world_size,
                           uint64_t instance, const std::string& token = "") {
  v1::Hello hello;
  // Protocol 1: the token rides in the Hello, so tests about ingestion need
  // no challenge round; agent_session_test covers protocol 2's challenge.
  hello.set_protocol_version(1);
  hello.set_job_id(job);
  hello.set_rank(rank);
  hello.set_world_size(world_size);
  hello.set_agent_instance_id(instance);
  hello.set_job_token(token);
  hello.set_host("testhost");
  hello.set_pid(1000 + rank);
  hello.set_framework("test");
  return hello;
}

// A valid batch: `events` operator events on `thread`, 10 ns apart, each
// lasting 5 ns, starting at base_time_ns (default: sequence * 1 ms, so that
// consecutive batches move forward in time).
inline v1::EventBatch MakeBatch(uint64_t sequence, int events = 3, uint32_t thread = 7,
                                int64_t base_time_ns = -1) {
  v1::EventBatch batch;
  batch.set_sequence(sequence);
  batch.add_strings("aten::add");
  batch.set_base_time_ns(base_time_ns >= 0 ? base_time_ns
                                           : static_cast<int64_t>(sequence) * 1'000'000);
  for (int i = 0; i < events; ++i) {
    batch.add_kind(v1::EVENT_KIND_OPERATOR);
    batch.add_start_delta_ns(i == 0 ? 0 : 10);
    batch.add_duration_ns(5);
    batch.add_name(0);
    batch.add_thread(thread);
    batch.add_detail(0);
    batch.add_value(i);
  }
  return batch;
}

inline v1::AgentMessage HelloMessage(v1::Hello hello) {
  v1::AgentMessage message;
  *message.mutable_hello() = std::move(hello);
  return message;
}

inline v1::AgentMessage BatchMessage(v1::EventBatch batch) {
  v1::AgentMessage message;
  *message.mutable_batch() = std::move(batch);
  return message;
}

}  // namespace trainscope::collector::testing

#endif  // TRAINSCOPE_TESTS_COLLECTOR_TESTING_COLLECTOR_TEST_UTIL_H_
