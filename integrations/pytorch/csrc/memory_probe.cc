#include "memory_probe.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdlib>

namespace trainscope::pytorch {

MemoryProbe::MemoryProbe() {
  statm_fd_ = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
  const long page = sysconf(_SC_PAGESIZE);
  if (page > 0) page_bytes_ = static_cast<uint64_t>(page);
}

MemoryProbe::~MemoryProbe() {
  if (statm_fd_ >= 0) close(statm_fd_);
}

uint64_t MemoryProbe::ResidentBytes() const {
  if (statm_fd_ < 0) return 0;
  char buffer[128];
  const ssize_t n = pread(statm_fd_, buffer, sizeof(buffer) - 1, 0);
  if (n <= 0) return 0;
  buffer[n] = '\0';
  // "size resident shared text lib data dt", in pages.
  char* end = nullptr;
  std::strtoull(buffer, &end, 10);
  const unsigned long long resident_pages = std::strtoull(end, nullptr, 10);
  return static_cast<uint64_t>(resident_pages) * page_bytes_;
}

uint64_t MemoryProbe::PeakResidentBytes() const {
  rusage usage{};
  if (getrusage(RUSAGE_SELF, &usage) != 0) return 0;
  return static_cast<uint64_t>(usage.ru_maxrss) * 1024;  // Linux reports KiB
}

}  // namespace trainscope::pytorch
