// Translates CUPTI's thread ids into OS thread ids. CUPTI names the thread of
// a runtime/driver API record by the low 32 bits of its pthread_t (seen on an
// H100 with CUPTI 13.0: 3162339200 for gettid 487); the agent's events name
// threads by their OS id (gettid), so a runtime call must be translated to sit
// on the thread track of the operators around it.
//
// Usage:
//   CuptiThreadMap threads;
//   training thread, once:  threads.RegisterCurrentThread();
//   converter:              uint32_t tid = threads.Lookup(record->threadId);  // 0: unknown
//
// Bounded: at most kMaxThreads threads are remembered (later ones read 0).
//
// Threading: thread-safe (a mutex; registration happens once per thread,
// lookups once per runtime record on the converting thread).
#ifndef TRAINSCOPE_AGENT_SRC_GPU_CUPTI_THREAD_MAP_H_
#define TRAINSCOPE_AGENT_SRC_GPU_CUPTI_THREAD_MAP_H_

#include <cstddef>
#include <cstdint>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "trainscope/base/mutex.h"

namespace trainscope::agent {

class CuptiThreadMap {
 public:
  static constexpr size_t kMaxThreads = 1 << 16;

  // CUPTI's id for the calling thread.
  static uint32_t CurrentCuptiId();

  void Register(uint32_t cupti_id, uint32_t os_thread_id);
  void RegisterCurrentThread();
  // The OS thread id, or 0 when the thread never registered.
  uint32_t Lookup(uint32_t cupti_id) const;

 private:
  mutable base::Mutex mu_;
  absl::flat_hash_map<uint32_t, uint32_t> os_ids_ ABSL_GUARDED_BY(mu_);
};

}  // namespace trainscope::agent

#endif  // TRAINSCOPE_AGENT_SRC_GPU_CUPTI_THREAD_MAP_H_
