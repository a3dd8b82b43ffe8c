// Finds the rack (or leaf switch) this process's host sits in from what the
// launcher puts in the environment, for Hello.rack when AgentOptions::rack is
// empty. The viewer groups hosts by it (worker -> host -> rack).
//
// Sources, first that gives a name:
//   1. TRAINSCOPE_RACK: set by the user or the job script, any launcher.
//   2. Slurm with a topology plugin (topology/tree): SLURM_TOPOLOGY_ADDR is
//      the dotted path from the top switch to the node ("s0.s2.node7") and
//      SLURM_TOPOLOGY_ADDR_PATTERN names each part ("switch.switch.node"); the
//      rack is the leaf switch, the last part the pattern does not call
//      "node" (without a pattern: the part before the node). Slurm's topology/block plugin names
//      the block the same way ("block.node").
// Nothing found: empty (unknown; the viewer's --topology file may name it).
//
// Usage:
//   std::string rack = LauncherRack::FromEnvironment();
//
// Threading: stateless; FromEnvironment reads getenv (not thread-safe against
// setenv, as every getenv), FromLookup is as safe as its lookup.
#ifndef TRAINSCOPE_AGENT_SRC_LAUNCHER_RACK_H_
#define TRAINSCOPE_AGENT_SRC_LAUNCHER_RACK_H_

#include <functional>
#include <string>

namespace trainscope::agent {

class LauncherRack {
 public:
  // The rack named by this process's environment; empty if none.
  static std::string FromEnvironment();

  // The same over `lookup` (a variable's value, or nullptr when unset), so
  // tests need not change the process environment.
  static std::string FromLookup(const std::function<const char*(const char*)>& lookup);
};

}  // namespace trainscope::agent

#endif  // TRAINSCOPE_AGENT_SRC_LAUNCHER_RACK_H_
