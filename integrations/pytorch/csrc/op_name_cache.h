// One thread's cache from an operator's name, as the framework hands it to
// the hook (a NUL-terminated string), to the session's interned and
// classified entry (trainscope_op_info), so the hot path never hashes a
// string nor calls into the agent library for a name it saw before.
//
// Usage (the torch extension's per-thread state):
//   OpNameCache cache{};                                   // zeroed: empty
//   const trainscope_op_info* info = cache.Find(rf.name(), &Resolve, observer);
//   // Resolve(observer, name, length) interns a name seen for the first time.
//   // The operator hot path first tries the call-free half:
//   const trainscope_op_info* hit = cache.FindCached(rf.name());  // null: use Find
//
// Two levels: schema-backed names have stable pointers, so the first level is
// keyed by the pointer; a pointer alone proves nothing (a user range's name
// lives in a string whose address is reused for other names), so a hit is
// verified, names up to 31 bytes by comparing one or two 16-byte chunks
// against the slot's copy of their bytes and NUL (8-byte words, no call: the
// same code on x86-64 and AArch64), longer ones
// by strcmp. Names built per call (autograd nodes, user ranges) live in fresh
// strings: the second level finds them by a hash of their content, verified
// by a compare. Both levels are direct-mapped: a colliding name evicts the
// slot's entry (found again through the other level or the resolver; never a
// wrong one).
//
// Threading: one thread only (no synchronisation). Trivially constructible
// and resettable with memset: zero bytes are the empty cache.
#ifndef TRAINSCOPE_INTEGRATIONS_PYTORCH_OP_NAME_CACHE_H_
#define TRAINSCOPE_INTEGRATIONS_PYTORCH_OP_NAME_CACHE_H_

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>
#include <type_traits>

#include "trainscope_session.h"

namespace trainscope::pytorch {

class OpNameCache {
 public:
  static constexpr uint32_t kPointerSlots = 512;  // powers of two
  static constexpr uint32_t kContentSlots = 512;

  // Interns `name` (its `length` bytes) for good; never null.
  using Resolver = const trainscope_op_info* (*)(const void* context, const char* name,
                                                 size_t length);

  // The entry of `name` when its pointer's slot holds it and its bytes can
  // be checked without a call (up to 31 bytes); else null: call Find.
  const trainscope_op_info* FindCached(const char* name) const {
    const PointerSlot& slot = by_pointer_[PointerSlotOf(name)];
    const trainscope_op_info* const info = slot.info;
    if (slot.key != name) [[unlikely]]
      return nullptr;
    if (slot.chunks == 1) [[likely]] {
      if (!ChunksMatch<1>(slot, name)) return nullptr;
    } else if (slot.chunks != 2 || !ChunksMatch<2>(slot, name)) {
      return nullptr;
    }
    // A slot with a key has its entry: the caller's test for a miss is then
    // all the hit path pays.
    if (info == nullptr) __builtin_unreachable();
    return info;
  }

  const trainscope_op_info* Find(const char* name, Resolver resolve, const void* context) {
    if (const trainscope_op_info* info = FindCached(name)) return info;
    PointerSlot& slot = by_pointer_[PointerSlotOf(name)];
    if (slot.key == name && slot.chunks == 0 && std::strcmp(name, slot.info->name) == 0) {
      return slot.info;
    }
    return FillPointerSlot(slot, name, resolve, context);
  }

  // Where a name's pointer and content go (tests build collisions with them).
  static uint32_t PointerSlotOf(const char* name) {
    const uint64_t key = reinterpret_cast<uintptr_t>(name);
    return static_cast<uint32_t>((key * 0x9e3779b97f4a7c15ull) >> (64 - kPointerBits));
  }
  static uint32_t ContentSlotOf(std::string_view name) {
    return static_cast<uint32_t>(HashName(name.data(), name.size()) & (kContentSlots - 1));
  }

 private:
  static constexpr uintptr_t kPageBytes = 4096;
  static constexpr int kPointerBits = 9;
  static_assert(kPointerSlots == 1u << kPointerBits);
  static constexpr size_t kChunk = 16;
  static constexpr size_t kWords = kChunk / sizeof(uint64_t);
  static constexpr size_t kMaxChunks = 2;

  struct PointerSlot {
    uint64_t head[kMaxChunks * kWords];  // the name's first bytes and its NUL, zero past it
    uint64_t care[kMaxChunks * kWords];  // 0xff where head holds the name (compared)
    const char* key;
    const trainscope_op_info* info;
    // 16-byte chunks that hold the name and its NUL and can be read at `key`
    // without leaving its page; 0: the name is checked by strcmp.
    uint8_t chunks;
  };
  struct ContentSlot {
    uint64_t hash;
    const trainscope_op_info* info;
  };

  static uint64_t HashName(const char* name, size_t length) {
    uint64_t h = 0x9e3779b97f4a7c15ull ^ length;
    size_t i = 0;
    for (; i + 8 <= length; i += 8) {
      uint64_t word;
      std::memcpy(&word, name + i, 8);
      h = (h ^ word) * 0xff51afd7ed558ccdull;
      h ^= h >> 32;
    }
    uint64_t tail = 0;
    std::memcpy(&tail, name + i, length - i);
    h = (h ^ tail) * 0xc4ceb9fe1a85ec53ull;
    return h ^ (h >> 29);
  }

  // True when the kChunks * 16 bytes at `name` (== slot.key) equal the slot's
  // name up to and including its NUL, i.e. `name` is that name: a shorter
  // name differs at its NUL, a longer one at the slot's NUL. Bytes past a
  // shorter name's NUL are read but ignored or compared against non-zero;
  // the slot has chunks only when the read stays within name[0]'s page (the
  // strlen technique): no fault.
  template <int kChunks>
  static bool ChunksMatch(const PointerSlot& slot, const char* name) {
    uint64_t differ = 0;
    for (size_t i = 0; i < kChunks * kWords; ++i) {
      uint64_t word;
      std::memcpy(&word, name + i * sizeof(word), sizeof(word));
      differ |= (word ^ slot.head[i]) & slot.care[i];
    }
    return differ == 0;
  }

  const trainscope_op_info* FindByContent(const char* name, Resolver resolve, const void* context) {
    const size_t length = std::strlen(name);
    const uint64_t hash = HashName(name, length);
    ContentSlot& slot = by_content_[hash & (kContentSlots - 1)];
    if (slot.hash == hash && slot.info != nullptr &&
        std::string_view(slot.info->name) == std::string_view(name, length)) {
      return slot.info;
    }
    const trainscope_op_info* info = resolve(context, name, length);
    slot = {hash, info};
    return info;
  }

  // After a pointer miss (cold: strlen and a copy).
  __attribute__((noinline)) const trainscope_op_info* FillPointerSlot(PointerSlot& slot,
                                                                      const char* name,
                                                                      Resolver resolve,
                                                                      const void* context) {
    const trainscope_op_info* info = FindByContent(name, resolve, context);
    std::memset(static_cast<void*>(&slot), 0, sizeof(slot));
    slot.key = name;
    slot.info = info;
    const size_t bytes = std::strlen(name) + 1;  // with the NUL
    const size_t chunks = (bytes + kChunk - 1) / kChunk;
    // A hit has this very address, so whether its chunks stay within its
    // page is decided here, once.
    const bool in_page =
        (reinterpret_cast<uintptr_t>(name) & (kPageBytes - 1)) <= kPageBytes - chunks * kChunk;
    if (chunks <= kMaxChunks && in_page) {
      unsigned char* head = reinterpret_cast<unsigned char*>(slot.head);
      unsigned char* care = reinterpret_cast<unsigned char*>(slot.care);
      std::memcpy(head, name, bytes);
      std::memset(care, 0xff, bytes);
      slot.chunks = static_cast<uint8_t>(chunks);
    }
    return info;
  }

  PointerSlot by_pointer_[kPointerSlots];
  ContentSlot by_content_[kContentSlots];
};

static_assert(std::is_trivially_default_constructible_v<OpNameCache>);
static_assert(std::is_trivially_copyable_v<OpNameCache>);

}  // namespace trainscope::pytorch

#endif  // TRAINSCOPE_INTEGRATIONS_PYTORCH_OP_NAME_CACHE_H_
