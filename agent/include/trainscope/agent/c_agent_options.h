// The C API's agent options (trainscope_agent.h) as the C++ AgentOptions:
// one copy of the conversion, used by trainscope_agent_start and by C APIs
// built on the agent (the plugin session's, trainscope_session.h).
//
// Usage:
//   trainscope_agent_options c; trainscope_agent_options_init(&c); c.job_id = "x";
//   trainscope::agent::AgentOptions options = trainscope::agent::AgentOptionsFromC(c);
//
// Strings are copied; NULL means "" or the default; on_halt is wrapped (its
// user_data travels with it). Validation is Agent::Start's.
// Threading: a pure function.
#ifndef TRAINSCOPE_AGENT_C_AGENT_OPTIONS_H_
#define TRAINSCOPE_AGENT_C_AGENT_OPTIONS_H_

#include "trainscope/agent/agent_options.h"
#include "trainscope/agent/agent_stats.h"
#include "trainscope_agent.h"

namespace trainscope::agent {

AgentOptions AgentOptionsFromC(const trainscope_agent_options& options);
// Fills the C API's counters from the C++ ones.
void AgentStatsToC(const AgentStats& stats, struct trainscope_agent_stats* out);

}  // namespace trainscope::agent

#endif  // TRAINSCOPE_AGENT_C_AGENT_OPTIONS_H_
