// libtrainscope_agent.so: the agent and the plugin's torch-free half behind
// their C APIs (trainscope_agent.h, trainscope_session.h). Everything it
// exports is defined in agent/src/c_api.cc and session_c_api.cc, pulled in
// whole from their archives; agent_library.map keeps every other symbol
// local, so the C++ inside (absl, protobuf types) never meets the C++ of the
// process that loads it (torch's, built with another compiler and ABI).
#include "trainscope_session.h"
