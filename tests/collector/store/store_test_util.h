// Helpers shared by the store tests: a fresh temporary directory per test,
// record builders and raw file access for damaging segments on purpose.
#ifndef TRAINSCOPE_TESTS_COLLECTOR_STORE_STORE_TEST_UTIL_H_
#define TRAINSCOPE_TESTS_COLLECTOR_STORE_STORE_TEST_UTIL_H_

#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "trainscope/v1/log.pb.h"

namespace trainscope::collector::testing {

// A directory under ::testing::TempDir() removed when the test ends.
class ScopedTempDir {
 public:
  ScopedTempDir() {
    std::string pattern = ::testing::TempDir() + "trainscope-store-XXXXXX";
    if (::mkdtemp(pattern.data()) == nullptr) ADD_FAILURE() << "mkdtemp failed for " << pattern;
    path_ = pattern;
  }
  ~ScopedTempDir() {
    std::error_code ignored;
    std::filesystem::permissions(path_, std::filesystem::perms::owner_all,
                                 std::filesystem::perm_options::add, ignored);
    std::filesystem::remove_all(path_, ignored);
  }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

inline v1::LogRecord MakeOpened(uint32_t rank, uint64_t instance) {
  v1::LogRecord record;
  record.set_logged_unix_ns(1'700'000'000'000'000'000 + rank);
  v1::Hello* hello = record.mutable_stream_opened()->mutable_hello();
  hello->set_protocol_version(1);
  hello->set_job_id("job-1");
  hello->set_rank(rank);
  hello->set_world_size(4);
  hello->set_host("host-" + std::to_string(rank));
  hello->set_device("cuda:" + std::to_string(rank));
  hello->set_pid(1000 + rank);
  hello->set_framework("pytorch");
  hello->set_agent_instance_id(instance);
  hello->set_restart_count(2);
  hello->set_job_token("secret-token");
  return record;
}

// A batch of `events` operator events; drops grow with the sequence.
inline v1::LogRecord MakeBatch(uint32_t rank, uint64_t instance, uint64_t sequence, int events) {
  v1::LogRecord record;
  record.set_logged_unix_ns(1'700'000'000'000'000'000 + static_cast<int64_t>(sequence));
  v1::StreamBatch* stream_batch = record.mutable_batch();
  stream_batch->set_rank(rank);
  stream_batch->set_agent_instance_id(instance);
  v1::EventBatch* batch = stream_batch->mutable_batch();
  batch->set_sequence(sequence);
  batch->add_strings("aten::matmul");
  batch->set_base_time_ns(static_cast<int64_t>(sequence) * 1'000'000);
  for (int i = 0; i < events; ++i) {
    batch->add_kind(v1::EVENT_KIND_OPERATOR);
    batch->add_start_delta_ns(100 + i);
    batch->add_duration_ns(50 + i);
    batch->add_name(0);
    batch->add_thread(7);
    batch->add_detail(v1::OPERATOR_SCOPE_FORWARD);
    batch->add_value(sequence * 1000 + static_cast<uint64_t>(i));
  }
  batch->mutable_drops()->set_ring_full(sequence);
  return record;
}

inline v1::LogRecord MakeClosed(uint32_t rank, uint64_t instance, bool goodbye) {
  v1::LogRecord record;
  v1::StreamClosed* closed = record.mutable_stream_closed();
  closed->set_rank(rank);
  closed->set_agent_instance_id(instance);
  closed->set_goodbye(goodbye);
  closed->set_reason(goodbye ? "goodbye" : "connection reset");
  return record;
}

inline v1::LogRecord MakeCommand(const std::string& command, uint64_t halt_id) {
  v1::LogRecord record;
  v1::CommandRecord* cmd = record.mutable_command();
  cmd->set_command(command);
  cmd->set_reason("test");
  cmd->set_requested_by("tester");
  cmd->set_halt_id(halt_id);
  return record;
}

inline v1::LogRecord MakeProbe(uint32_t rank, uint64_t probe_id) {
  v1::LogRecord record;
  record.mutable_probe()->set_rank(rank);
  record.mutable_probe()->mutable_reply()->set_probe_id(probe_id);
  return record;
}

inline std::string ReadFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

inline void WriteFile(const std::filesystem::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

inline void AppendToFile(const std::filesystem::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::app);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// Byte-exact comparison: the log must give back what was appended.
inline bool SameRecord(const v1::LogRecord& a, const v1::LogRecord& b) {
  return a.SerializeAsString() == b.SerializeAsString();
}

}  // namespace trainscope::collector::testing

#endif  // TRAINSCOPE_TESTS_COLLECTOR_STORE_STORE_TEST_UTIL_H_
