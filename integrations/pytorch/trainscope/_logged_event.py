"""A decoded event of a job log, as the tests read them (tests/python/conftest.py's
Collector.events, from the dump_log_events tool)."""

import collections

LoggedEvent = collections.namedtuple(
    "LoggedEvent",
    "rank kind name start_ns end_ns value detail thread group group_sequence peer")

# trainscope.v1.EventKind
OPERATOR, OPERATOR_BEGIN, OPERATOR_END, COLLECTIVE, STEP_MARK, PHASE_MARK, COUNTER = range(1, 8)
# trainscope.v1.OperatorScope
SCOPE_FORWARD, SCOPE_BACKWARD = 1, 2
# trainscope.v1.Phase
PHASE_DATA_WAIT, PHASE_FORWARD, PHASE_BACKWARD, PHASE_OPTIMIZER = 1, 2, 3, 4
# trainscope.v1.CollectiveKind
(ALL_REDUCE, ALL_GATHER, REDUCE_SCATTER, BROADCAST, BARRIER, SEND, RECV, ALL_TO_ALL, REDUCE,
 GATHER, SCATTER) = range(1, 12)
