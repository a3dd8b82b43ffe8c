// Names the physical clock behind the agent's primary clock, for Hello's
// ClockDomain.domain_id: agents that send the same id read the very same
// clock, so the collector gives them one offset exactly instead of fitting
// each (ranks sharing a host would otherwise get fitting noise between them).
//
// CLOCK_MONOTONIC is one clock for every process of one boot of one host,
// named by the kernel's random boot id (/proc/sys/kernel/random/boot_id). A
// time namespace (Linux >= 5.6) may shift it per container: a non-zero
// monotonic offset in /proc/self/timens_offsets is part of the id. A test's
// injected perturbation (AgentOptions::test_clock_*) makes another clock, so
// it is part of the id too and the perturbed rank is fitted like a rank on
// another host.
//
// Usage:
//   std::string id = ClockDomainId::Monotonic(perturbation);  // "" if unknown
//
// Threading: stateless; every function is thread-safe.
#ifndef TRAINSCOPE_AGENT_SRC_CLOCK_DOMAIN_ID_H_
#define TRAINSCOPE_AGENT_SRC_CLOCK_DOMAIN_ID_H_

#include <string>
#include "absl/strings/string_view.h"

#include "clock_perturbation.h"

namespace trainscope::agent {

class ClockDomainId {
 public:
  // The id of this process's CLOCK_MONOTONIC as perturbed by `perturbation`;
  // empty when the boot id cannot be read (the collector then fits this
  // agent on its own, as for an agent that sends no id).
  static std::string Monotonic(const ClockPerturbation& perturbation);

  // The same from given file contents (tests): boot_id's text and
  // timens_offsets' text (empty when there is no such file).
  static std::string FromParts(absl::string_view boot_id, absl::string_view timens_offsets,
                               const ClockPerturbation& perturbation);
};

}  // namespace trainscope::agent

#endif  // TRAINSCOPE_AGENT_SRC_CLOCK_DOMAIN_ID_H_
