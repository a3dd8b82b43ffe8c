#include "gpu/cupti_thread_map.h"

#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace trainscope::agent {

uint32_t CuptiThreadMap::CurrentCuptiId() {
  static_assert(sizeof(pthread_t) >= sizeof(uint32_t));
  return static_cast<uint32_t>(pthread_self());  // glibc: an integer (the thread's address)
}

void CuptiThreadMap::Register(uint32_t cupti_id, uint32_t os_thread_id) {
  base::MutexLock lock(&mu_);
  if (os_ids_.size() >= kMaxThreads && !os_ids_.contains(cupti_id)) return;
  os_ids_[cupti_id] = os_thread_id;
}

void CuptiThreadMap::RegisterCurrentThread() {
  Register(CurrentCuptiId(), static_cast<uint32_t>(::syscall(SYS_gettid)));
}

uint32_t CuptiThreadMap::Lookup(uint32_t cupti_id) const {
  base::MutexLock lock(&mu_);
  auto it = os_ids_.find(cupti_id);
  return it == os_ids_.end() ? 0 : it->second;
}

}  // namespace trainscope::agent
