// The clock domain an agent declares in Hello: one id for every agent reading
// this boot's CLOCK_MONOTONIC, another as soon as a test perturbs the clock.
#include "clock_domain_id.h"

#include <fstream>
#include <memory>
#include <sstream>
#include <string>

#include "fake_transport.h"
#include "gtest/gtest.h"
#include "trainscope/agent/agent.h"

namespace trainscope::agent {
namespace {

constexpr char kBoot[] = "3f1c0e7a-5d2b-4c8e-9a61-0b7d2e4f8c11";

TEST(ClockDomainIdTest, BootIdNamesTheMonotonicClock) {
  EXPECT_EQ(ClockDomainId::FromParts(std::string(kBoot) + "\n", "", ClockPerturbation()),
            std::string("boot:") + kBoot);
  // No boot id: unknown, the collector fits this agent on its own.
  EXPECT_EQ(ClockDomainId::FromParts("  \n", "", ClockPerturbation()), "");
}

TEST(ClockDomainIdTest, ShiftedTimeNamespaceIsAnotherClock) {
  const std::string plain = ClockDomainId::FromParts(kBoot, "", ClockPerturbation());
  EXPECT_EQ(ClockDomainId::FromParts(kBoot, "monotonic           0         0\n"
                                            "boottime            0         0\n",
                                     ClockPerturbation()),
            plain);
  const std::string shifted = ClockDomainId::FromParts(
      kBoot, "monotonic        -3600       250\nboottime 0 0\n", ClockPerturbation());
  EXPECT_NE(shifted, plain);
  EXPECT_EQ(shifted, plain + "+timens:-3600.250");
}

TEST(ClockDomainIdTest, InjectedPerturbationIsAnotherDomain) {
  const std::string plain = ClockDomainId::FromParts(kBoot, "", ClockPerturbation());
  const std::string a = ClockDomainId::FromParts(kBoot, "", ClockPerturbation(5'000, 0, 111));
  const std::string b = ClockDomainId::FromParts(kBoot, "", ClockPerturbation(5'000, 0, 222));
  const std::string c = ClockDomainId::FromParts(kBoot, "", ClockPerturbation(5'000, 10, 111));
  const std::string d = ClockDomainId::FromParts(kBoot, "", ClockPerturbation(5'000, 10, 222));
  EXPECT_NE(a, plain);
  EXPECT_EQ(a, b);  // without drift the origin changes nothing: one clock
  EXPECT_NE(c, a);
  EXPECT_NE(c, d);  // with drift it does
}

std::string ProcBootId() {
  std::ifstream in("/proc/sys/kernel/random/boot_id");
  std::string id;
  in >> id;
  return id;
}

v1::Hello HelloOf(AgentOptions options) {
  auto collector = std::make_shared<FakeCollector>();
  options.job_id = "clock-domain-test";
  options.flush_interval = absl::Milliseconds(2);
  options.log_to_stderr = false;
  auto agent = Agent::StartWithTransport(std::move(options),
                                         std::make_unique<FakeTransport>(collector));
  EXPECT_TRUE(agent.ok()) << agent.status();
  if (!agent.ok()) return v1::Hello();
  EXPECT_TRUE(WaitFor([&] { return (*agent)->stats().connected; }));
  (*agent)->Shutdown(absl::Seconds(5));
  for (const v1::AgentMessage& m : collector->Messages()) {
    if (m.has_hello()) return m.hello();
  }
  ADD_FAILURE() << "no Hello";
  return v1::Hello();
}

TEST(ClockDomainIdTest, HelloDeclaresTheHostClockAndPerturbedAgentsAnother) {
  const std::string boot = ProcBootId();
  if (boot.empty()) GTEST_SKIP() << "no /proc/sys/kernel/random/boot_id here";
  const v1::Hello first = HelloOf(AgentOptions());
  const v1::Hello second = HelloOf(AgentOptions());
  ASSERT_EQ(first.clock_domains_size(), 1);
  ASSERT_EQ(second.clock_domains_size(), 1);
  EXPECT_EQ(first.clock_domains(0).domain_id().rfind("boot:" + boot, 0), 0u)
      << first.clock_domains(0).domain_id();
  // Two agents of one host read one clock: the same id.
  EXPECT_EQ(first.clock_domains(0).domain_id(), second.clock_domains(0).domain_id());

  AgentOptions perturbed;
  perturbed.test_clock_offset_ns = 37'000'000;
  perturbed.test_clock_drift_ppm = 80;
  const v1::Hello third = HelloOf(perturbed);
  ASSERT_EQ(third.clock_domains_size(), 1);
  EXPECT_NE(third.clock_domains(0).domain_id(), first.clock_domains(0).domain_id());
  EXPECT_FALSE(third.clock_domains(0).domain_id().empty());
}

}  // namespace
}  // namespace trainscope::agent
