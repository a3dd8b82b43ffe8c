#include "gpu/cupti_thread_map.h"

#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <thread>

#include "gtest/gtest.h"

namespace trainscope::agent {
namespace {

TEST(CuptiThreadMapTest, EachThreadRegistersItsOwnIds) {
  CuptiThreadMap threads;
  EXPECT_EQ(threads.Lookup(CuptiThreadMap::CurrentCuptiId()), 0u);  // not registered yet
  threads.RegisterCurrentThread();
  // CUPTI's id is the low 32 bits of pthread_self().
  EXPECT_EQ(CuptiThreadMap::CurrentCuptiId(), static_cast<uint32_t>(pthread_self()));
  EXPECT_EQ(threads.Lookup(CuptiThreadMap::CurrentCuptiId()),
            static_cast<uint32_t>(::syscall(SYS_gettid)));
  uint32_t other_cupti = 0;
  uint32_t other_os = 0;
  std::thread([&] {
    threads.RegisterCurrentThread();
    other_cupti = CuptiThreadMap::CurrentCuptiId();
    other_os = static_cast<uint32_t>(::syscall(SYS_gettid));
  }).join();
  EXPECT_EQ(threads.Lookup(other_cupti), other_os);
  EXPECT_NE(other_os, static_cast<uint32_t>(::syscall(SYS_gettid)));
}

TEST(CuptiThreadMapTest, Bounded) {
  CuptiThreadMap threads;
  for (uint32_t i = 1; i <= CuptiThreadMap::kMaxThreads + 10; ++i) threads.Register(i, i + 1);
  EXPECT_EQ(threads.Lookup(1), 2u);
  EXPECT_EQ(threads.Lookup(CuptiThreadMap::kMaxThreads + 5), 0u);  // beyond the bound
  threads.Register(1, 99);  // a known id may still be updated
  EXPECT_EQ(threads.Lookup(1), 99u);
}

}  // namespace
}  // namespace trainscope::agent
