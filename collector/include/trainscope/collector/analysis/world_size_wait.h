// Whether a job's steps still wait for devices that have not appeared. Until
// as many devices as the job's world size (Hello.world_size) have sent
// something, no step closes: a rank that attaches a few steps late still has
// its first steps in the reports. The wait ends after wait_ns of the
// collector's time from the first Tick that saw some missing, in case a rank
// never comes; it does not start again.
//
// Usage (StepAssembler):
//   WorldSizeWait wait;
//   wait.Expect(world_size);
//   wait.Tick(now_unix_ns, known_devices, silent_after_ns);
//   if (wait.Awaiting(known_devices)) ...  // hold every step
//
// Threading: not thread-safe; owned by the job's analysis thread.
#ifndef TRAINSCOPE_COLLECTOR_ANALYSIS_WORLD_SIZE_WAIT_H_
#define TRAINSCOPE_COLLECTOR_ANALYSIS_WORLD_SIZE_WAIT_H_

#include <algorithm>
#include <cstdint>

namespace trainscope::collector {

class WorldSizeWait {
 public:
  // The job has `world_size` devices (the largest said wins).
  void Expect(uint32_t world_size) { expected_ = std::max(expected_, world_size); }
  // Whether steps wait for devices beyond the `known` ones.
  bool Awaiting(uint32_t known) const { return !over_ && known < expected_; }
  // Collector time; ends the wait once it lasted `wait_ns`.
  void Tick(int64_t now_unix_ns, uint32_t known, int64_t wait_ns);

 private:
  uint32_t expected_ = 0;  // 0: unknown
  int64_t since_ns_ = 0;   // when a Tick first saw devices missing; 0: not yet
  bool over_ = false;
};

}  // namespace trainscope::collector

#endif  // TRAINSCOPE_COLLECTOR_ANALYSIS_WORLD_SIZE_WAIT_H_
