#include "trainscope/security/listen_exposure.h"

#include "gtest/gtest.h"

namespace trainscope::security {
namespace {

TEST(ListenExposureTest, LoopbackHostsInEverySpelling) {
  for (const char* host : {"127.0.0.1", "127.1.2.3", "::1", "[::1]", "localhost", "LOCALHOST",
                           "lo", "::ffff:127.0.0.1"}) {
    EXPECT_TRUE(IsLoopbackHost(host)) << host;
  }
  for (const char* host : {"0.0.0.0", "*", "::", "[::]", "10.0.0.5", "node-1", "eth0", "",
                           "128.0.0.1", "::ffff:10.0.0.1"}) {
    EXPECT_FALSE(IsLoopbackHost(host)) << host;
  }
}

TEST(ListenExposureTest, GrpcAddresses) {
  EXPECT_TRUE(IsLoopbackGrpcAddress("127.0.0.1:7070"));
  EXPECT_TRUE(IsLoopbackGrpcAddress("[::1]:0"));
  EXPECT_TRUE(IsLoopbackGrpcAddress("localhost:7070"));
  EXPECT_TRUE(IsLoopbackGrpcAddress("unix:/run/trainscope/agents.sock"));
  EXPECT_FALSE(IsLoopbackGrpcAddress("0.0.0.0:7070"));
  EXPECT_FALSE(IsLoopbackGrpcAddress("[::]:7070"));
  EXPECT_FALSE(IsLoopbackGrpcAddress("collector.cluster.local:7070"));
}

TEST(ListenExposureTest, ZmqEndpoints) {
  EXPECT_TRUE(IsLoopbackZmqEndpoint("tcp://127.0.0.1:7071"));
  EXPECT_TRUE(IsLoopbackZmqEndpoint("tcp://127.0.0.1:*"));
  EXPECT_TRUE(IsLoopbackZmqEndpoint("tcp://[::1]:*"));
  EXPECT_TRUE(IsLoopbackZmqEndpoint("tcp://lo:7071"));
  EXPECT_TRUE(IsLoopbackZmqEndpoint("ipc:///run/trainscope/feed"));
  EXPECT_TRUE(IsLoopbackZmqEndpoint("inproc://feed"));
  EXPECT_FALSE(IsLoopbackZmqEndpoint("tcp://*:7071"));
  EXPECT_FALSE(IsLoopbackZmqEndpoint("tcp://0.0.0.0:7071"));
  EXPECT_FALSE(IsLoopbackZmqEndpoint("tcp://eth0:7071"));
  EXPECT_FALSE(IsLoopbackZmqEndpoint("127.0.0.1:7071"));  // no scheme: not an endpoint
}

}  // namespace
}  // namespace trainscope::security
