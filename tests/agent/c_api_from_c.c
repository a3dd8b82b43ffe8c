/* Compiled as C: proves trainscope_agent.h is plain C and drives it from C. */
#include <stddef.h>

#include "trainscope_agent.h"

/* Starts with `job_id` (may be NULL) against a closed port, records a few
 * events, then shuts down. Returns trainscope_agent_start's result; on
 * success fills *recorded with Record calls that returned 1. */
int trainscope_test_start_from_c(const char* job_id, const char* address, char* error,
                                 size_t error_len, unsigned* recorded) {
  trainscope_agent_options options;
  trainscope_agent_options_init(&options);
  options.job_id = job_id;
  options.collector_address = address;
  options.world_size = 2;
  options.rank = 1;
  options.log_to_stderr = 0;
  trainscope_agent* agent = NULL;
  int rc = trainscope_agent_start(&options, &agent, error, error_len);
  if (rc != 0) return rc;
  uint32_t name = trainscope_intern(agent, "aten::relu");
  uint32_t group = trainscope_intern(agent, "default_pg");
  int64_t t = trainscope_now_ns();
  *recorded = 0;
  *recorded += trainscope_record_operator(agent, name, t, t + 5, 1, TRAINSCOPE_SCOPE_FORWARD);
  *recorded += trainscope_record_collective(agent, name, TRAINSCOPE_COLLECTIVE_ALL_REDUCE, group, 1,
                                            4096, -1, t, t + 9);
  *recorded += trainscope_record_step(agent, 1, t);
  *recorded += trainscope_record_phase(agent, TRAINSCOPE_PHASE_FORWARD, 1, t, t + 3);
  *recorded += trainscope_record_counter(agent, name, 7, t);
  struct trainscope_agent_stats stats;
  trainscope_agent_stats(agent, &stats);
  trainscope_agent_shutdown(agent, 50);
  return 0;
}
