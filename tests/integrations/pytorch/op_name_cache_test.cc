#include "op_name_cache.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <deque>
#include <map>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace trainscope::pytorch {
namespace {

// The session's side: one entry per distinct name, at a stable address;
// counts how often the cache had to ask.
class FakeNames {
 public:
  static const trainscope_op_info* Resolve(const void* self, const char* name, size_t length) {
    return const_cast<FakeNames*>(static_cast<const FakeNames*>(self))
        ->Intern(std::string(name, length));
  }
  const trainscope_op_info* Intern(const std::string& name) {
    ++resolves;
    auto it = entries_.find(name);
    if (it != entries_.end()) return it->second;
    strings_.push_back(name);
    infos_.push_back(trainscope_op_info{
        strings_.back().c_str(), static_cast<uint32_t>(infos_.size() + 1), 0, 0, 0, nullptr});
    entries_[name] = &infos_.back();
    return &infos_.back();
  }
  int resolves = 0;

 private:
  std::deque<std::string> strings_;
  std::deque<trainscope_op_info> infos_;
  std::map<std::string, const trainscope_op_info*> entries_;
};

class OpNameCacheTest : public ::testing::Test {
 protected:
  OpNameCacheTest() : cache_(new OpNameCache()) {}  // value-initialised: zeroed, empty
  const trainscope_op_info* Find(const char* name) {
    return cache_->Find(name, &FakeNames::Resolve, &names_);
  }
  std::string NameOf(const char* name) { return Find(name)->name; }

  std::unique_ptr<OpNameCache> cache_;
  FakeNames names_;
};

TEST_F(OpNameCacheTest, AStablePointerIsResolvedOnceThenHitsForShortAndLongNames) {
  // Padded like the strings torch names live in: a hit reads whole 16-byte
  // chunks (never past the name's page, see ANameAtTheEndOfAPageIsNeverReadPastIt).
  static const char kShort[32] = "aten::add";
  static const char kMedium[32] = "aten::native_batch_norm";  // two chunks
  static const char kLong[] = "aten::convolution_backward_overrideable";
  const trainscope_op_info* a = Find(kShort);
  const trainscope_op_info* b = Find(kLong);
  const trainscope_op_info* c = Find(kMedium);
  EXPECT_STREQ(a->name, kShort);
  EXPECT_STREQ(b->name, kLong);
  EXPECT_STREQ(c->name, kMedium);
  EXPECT_EQ(names_.resolves, 3);
  for (int i = 0; i < 100; ++i) {
    EXPECT_EQ(Find(kShort), a);
    EXPECT_EQ(Find(kLong), b);
    EXPECT_EQ(Find(kMedium), c);
  }
  EXPECT_EQ(names_.resolves, 3);
  // The call-free half hits names up to 31 bytes and leaves longer ones to Find.
  EXPECT_EQ(cache_->FindCached(kShort), a);
  EXPECT_EQ(cache_->FindCached(kMedium), c);
  EXPECT_EQ(cache_->FindCached(kLong), nullptr);
}

// A user range's name lives in a buffer whose address is reused for other
// names: a pointer hit must never return the name the buffer held before.
TEST_F(OpNameCacheTest, AReusedAddressWithOtherBytesIsNeverTakenForTheOldName) {
  alignas(16) char buffer[64] = {};
  const std::vector<std::string> names = {"step",
                                          "stepp",
                                          "ste",
                                          "forward#0",
                                          "forward#1",
                                          "",
                                          "a-fifteen-char",
                                          "a-sixteen-chars!",
                                          "a-thirty-one-bytes-long-name-#1",
                                          "a-thirty-one-bytes-long-name-#2",
                                          "a-thirty-two-bytes-long-name-#1!",
                                          "a name well over sixteen bytes #1",
                                          "a name well over sixteen bytes #2"};
  for (int round = 0; round < 3; ++round) {
    for (const std::string& name : names) {
      std::memset(buffer, 'x', sizeof(buffer));  // bytes past the NUL differ from a name's
      std::memcpy(buffer, name.c_str(), name.size() + 1);
      EXPECT_EQ(NameOf(buffer), name) << "round " << round;
    }
  }
  // A name that only differs after its NUL's position in the slot's copy
  // ("ste" then "step"): the NUL itself is compared.
  std::strcpy(buffer, "ste");
  EXPECT_EQ(NameOf(buffer), "ste");
  std::strcpy(buffer, "step");
  EXPECT_EQ(NameOf(buffer), "step");
}

// Names in fresh strings with the same bytes (autograd nodes, user ranges)
// come from the content level: the resolver is asked once per distinct name.
TEST_F(OpNameCacheTest, FreshStringsWithTheSameNameAreFoundByContent) {
  std::vector<std::unique_ptr<std::string>> fresh;
  for (int i = 0; i < 50; ++i) {
    fresh.push_back(std::make_unique<std::string>("autograd::engine::evaluate_function: X"));
    EXPECT_EQ(NameOf(fresh.back()->c_str()), *fresh.back());
  }
  EXPECT_EQ(names_.resolves, 1);
}

// Two names whose pointers share a slot evict each other there; each keeps
// resolving to itself, and the evicted one comes back from the content level
// without asking the resolver again.
TEST_F(OpNameCacheTest, PointerSlotCollisionsEvictButNeverConfuse) {
  std::vector<char> arena(1 << 20);
  char* const first = arena.data() + 64;
  const uint32_t slot = OpNameCache::PointerSlotOf(first);
  char* second = nullptr;
  for (size_t offset = 128; offset + 64 < arena.size(); offset += 16) {
    if (OpNameCache::PointerSlotOf(arena.data() + offset) == slot) {
      second = arena.data() + offset;
      break;
    }
  }
  ASSERT_NE(second, nullptr);
  std::strcpy(first, "aten::mul");
  std::strcpy(second, "aten::sub");
  ASSERT_NE(OpNameCache::ContentSlotOf("aten::mul"), OpNameCache::ContentSlotOf("aten::sub"));
  EXPECT_EQ(NameOf(first), "aten::mul");
  EXPECT_EQ(NameOf(second), "aten::sub");
  EXPECT_EQ(names_.resolves, 2);
  for (int i = 0; i < 20; ++i) {
    EXPECT_EQ(NameOf(first), "aten::mul");
    EXPECT_EQ(NameOf(second), "aten::sub");
  }
  EXPECT_EQ(names_.resolves, 2);  // evictions refilled from the content level
}

// Two names sharing a content slot: each eviction costs a resolve, never a
// wrong entry.
TEST_F(OpNameCacheTest, ContentSlotCollisionsEvictButNeverConfuse) {
  const std::string base = "user_range_";
  const uint32_t slot = OpNameCache::ContentSlotOf(base + "0");
  std::string other;
  for (int i = 1; i < 100000 && other.empty(); ++i) {
    const std::string candidate = base + std::to_string(i);
    if (OpNameCache::ContentSlotOf(candidate) == slot) other = candidate;
  }
  ASSERT_FALSE(other.empty());
  // Fresh strings each time, at varying addresses: only the content level can hit.
  std::vector<std::unique_ptr<std::string>> keep;
  for (int i = 0; i < 10; ++i) {
    keep.push_back(std::make_unique<std::string>(base + "0"));
    EXPECT_EQ(NameOf(keep.back()->c_str()), base + "0");
    keep.push_back(std::make_unique<std::string>(other));
    EXPECT_EQ(NameOf(keep.back()->c_str()), other);
  }
  EXPECT_EQ(names_.resolves, 20);  // each alternation evicted the other
}

// A name of up to 31 bytes ending near the end of a page followed by an
// unmapped page: the cache must not read its 16-byte chunks across the
// boundary (it would fault).
TEST_F(OpNameCacheTest, ANameAtTheEndOfAPageIsNeverReadPastIt) {
  const long page = sysconf(_SC_PAGESIZE);
  ASSERT_EQ(page, 4096);
  void* mapping =
      mmap(nullptr, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(mapping, MAP_FAILED);
  char* const base = static_cast<char*>(mapping);
  ASSERT_EQ(mprotect(base + page, page, PROT_NONE), 0);
  for (int length = 1; length <= 31; ++length) {
    char* name = base + page - (length + 1);
    std::memset(name, 'a' + length, length);
    name[length] = '\0';
    for (int i = 0; i < 3; ++i) EXPECT_EQ(NameOf(name), std::string(length, 'a' + length));
  }
  munmap(mapping, 2 * page);
}

}  // namespace
}  // namespace trainscope::pytorch
