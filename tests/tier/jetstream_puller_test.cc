// JetStreamPuller against a real nats-server (JetStream, its store in a
// temporary folder, a free loopback port). Skipped where nats-server is not
// installed (scripts/setup.sh installs it).
#include "trainscope/tier/jetstream_puller.h"

#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "trainscope/tier/tier_subjects.h"

namespace trainscope::tier {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

std::string FindNatsServer() {
  const char* path = std::getenv("PATH");
  std::vector<std::string> dirs =
      absl::StrSplit(path != nullptr ? path : "", ':', absl::SkipEmpty());
  dirs.push_back("/usr/sbin");
  for (const std::string& dir : dirs) {
    const fs::path candidate = fs::path(dir) / "nats-server";
    if (access(candidate.c_str(), X_OK) == 0) return candidate.string();
  }
  return "";
}

int FreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address));
  socklen_t length = sizeof(address);
  getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length);
  close(fd);
  return ntohs(address.sin_port);
}

// nats-server -js on 127.0.0.1:<free port>, stopped and its store removed at the end.
class JetStreamPullerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string server = FindNatsServer();
    if (server.empty()) GTEST_SKIP() << "no nats-server (scripts/setup.sh installs it)";
    dir_ = fs::temp_directory_path() /
           absl::StrCat("jetstream_puller_test.", getpid(), ".",
                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    const int port = FreePort();
    url_ = absl::StrCat("nats://127.0.0.1:", port);
    const std::string log = (dir_ / "nats.log").string();
    const std::string store = (dir_ / "store").string();
    const std::string port_text = std::to_string(port);
    server_ = fork();
    if (server_ == 0) {
      freopen(log.c_str(), "w", stdout);
      freopen(log.c_str(), "a", stderr);
      execl(server.c_str(), "nats-server", "-js", "-sd", store.c_str(), "-a", "127.0.0.1", "-p",
            port_text.c_str(), static_cast<char*>(nullptr));
      _exit(127);
    }
    const absl::Time deadline = absl::Now() + absl::Seconds(20);
    while (client_ == nullptr && absl::Now() < deadline) {
      absl::StatusOr<std::unique_ptr<NatsClient>> client = NatsClient::Connect({.url = url_});
      if (client.ok()) {
        client_ = std::move(*client);
      } else {
        absl::SleepFor(absl::Milliseconds(50));
      }
    }
    ASSERT_NE(client_, nullptr) << "nats-server did not start at " << url_;
    ASSERT_TRUE(client_->EnsureStream(kRecordsStream, kAllRecords, StreamLimits{}).ok());
  }

  void TearDown() override {
    client_.reset();
    if (server_ > 0) {
      kill(server_, SIGTERM);
      waitpid(server_, nullptr, 0);
    }
    if (!dir_.empty()) fs::remove_all(dir_);
  }

  void Publish(int count, int first = 0) {
    for (int i = first; i < first + count; ++i) {
      const std::string payload = std::to_string(i);
      jsPubAck* ack = nullptr;
      jsErrCode err = static_cast<jsErrCode>(0);
      ASSERT_EQ(js_Publish(&ack, client_->js(), "trainscope.rec.job.node", payload.data(),
                           static_cast<int>(payload.size()), nullptr, &err),
                NATS_OK)
          << i;
      jsPubAck_Destroy(ack);
    }
  }

  JetStreamPullerOptions Options(std::string durable = "puller-test") {
    JetStreamPullerOptions o;
    o.stream = kRecordsStream;
    o.durable = std::move(durable);
    o.filter = kAllRecords;
    return o;
  }

  // Takes messages until `count` came or `timeout` passed; acks them when asked.
  std::vector<std::string> Take(JetStreamPuller& puller, int count, int max, bool ack,
                                absl::Duration timeout = absl::Seconds(20)) {
    std::vector<std::string> out;
    const absl::Time deadline = absl::Now() + timeout;
    while (static_cast<int>(out.size()) < count && absl::Now() < deadline) {
      absl::StatusOr<std::vector<natsMsg*>> msgs = puller.Next(max, absl::Milliseconds(250));
      EXPECT_TRUE(msgs.ok()) << msgs.status();
      if (!msgs.ok()) break;
      EXPECT_LE(static_cast<int>(msgs->size()), max);
      for (natsMsg* msg : *msgs) {
        out.emplace_back(natsMsg_GetData(msg), natsMsg_GetDataLength(msg));
        if (ack) JetStreamPuller::Ack(client_->connection(), msg);
        natsMsg_Destroy(msg);
      }
    }
    return out;
  }

  uint64_t AckFloor(const std::string& durable) {
    jsConsumerInfo* info = nullptr;
    jsErrCode err = static_cast<jsErrCode>(0);
    if (js_GetConsumerInfo(&info, client_->js(), kRecordsStream, durable.c_str(), nullptr, &err) !=
        NATS_OK) {
      return 0;
    }
    const uint64_t floor = info->AckFloor.Stream;
    jsConsumerInfo_Destroy(info);
    return floor;
  }

  fs::path dir_;
  std::string url_;
  pid_t server_ = -1;
  std::unique_ptr<NatsClient> client_;
};

std::vector<std::string> Numbers(int from, int to) {
  std::vector<std::string> out;
  for (int i = from; i < to; ++i) out.push_back(std::to_string(i));
  return out;
}

// Each request asks for 256 and each take returns at most 100: the 156 left
// waiting are more than half the batch, which made libnats 3.4's
// natsSubscription_Fetch write past its array (nats.c #749).
TEST_F(JetStreamPullerTest, DeliversEveryMessageOnceInOrderWhenMoreWaitsThanTaken) {
  Publish(1000);
  absl::StatusOr<std::unique_ptr<JetStreamPuller>> puller =
      JetStreamPuller::Start(client_.get(), Options());
  ASSERT_TRUE(puller.ok()) << puller.status();
  EXPECT_EQ(Take(**puller, 1000, 100, /*ack=*/true), Numbers(0, 1000));
  // Acked: the durable's floor reaches the end, and a new puller on it (a
  // restarted job level) resumes after it with nothing to take again.
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  while (AckFloor("puller-test") < 1000 && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(50));
  }
  EXPECT_EQ(AckFloor("puller-test"), 1000u);
  puller->reset();
  absl::StatusOr<std::unique_ptr<JetStreamPuller>> again =
      JetStreamPuller::Start(client_.get(), Options());
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_TRUE(Take(**again, 1, 256, true, absl::Milliseconds(600)).empty());
  Publish(3, 1000);
  EXPECT_EQ(Take(**again, 3, 256, true), Numbers(1000, 1003));
}

TEST_F(JetStreamPullerTest, WhatIsNotAckedComesAgainAfterTheAckWait) {
  Publish(3);
  JetStreamPullerOptions options = Options();
  options.ack_wait = absl::Seconds(1);
  absl::StatusOr<std::unique_ptr<JetStreamPuller>> puller =
      JetStreamPuller::Start(client_.get(), options);
  ASSERT_TRUE(puller.ok()) << puller.status();
  EXPECT_EQ(Take(**puller, 3, 256, /*ack=*/false), Numbers(0, 3));
  EXPECT_EQ(Take(**puller, 3, 256, /*ack=*/true), Numbers(0, 3));
}

TEST_F(JetStreamPullerTest, ADurableThatConsumesSomethingElseIsNamed) {
  JetStreamPullerOptions one_job = Options("shared");
  one_job.filter = "trainscope.rec.a.>";
  ASSERT_TRUE(JetStreamPuller::Start(client_.get(), one_job).ok());
  absl::StatusOr<std::unique_ptr<JetStreamPuller>> all =
      JetStreamPuller::Start(client_.get(), Options("shared"));
  ASSERT_FALSE(all.ok());
  EXPECT_EQ(all.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(all.status().message(), HasSubstr("the durable consumer shared"));
  EXPECT_THAT(all.status().message(), HasSubstr("consumes 'trainscope.rec.a.>'"));
  EXPECT_THAT(all.status().message(), HasSubstr("expected a pull consumer of 'trainscope.rec.>'"));
}

}  // namespace
}  // namespace trainscope::tier
