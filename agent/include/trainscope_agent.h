/* trainscope agent, C API: lets any framework (or ctypes) feed the agent.
 *
 * Usage:
 *   trainscope_agent_options options;
 *   trainscope_agent_options_init(&options);
 *   options.job_id = "resnet"; options.rank = 0; options.world_size = 8;
 *   trainscope_agent* agent = NULL;
 *   char error[256];
 *   if (trainscope_agent_start(&options, &agent, error, sizeof error) != 0) { puts(error); }
 *   uint32_t conv = trainscope_intern(agent, "aten::conv2d");   // once; keep the id
 *   int64_t t0 = trainscope_now_ns();  ...
 *   trainscope_record_operator(agent, conv, t0, trainscope_now_ns(), seq,
 * TRAINSCOPE_SCOPE_FORWARD); trainscope_agent_shutdown(agent, 5000);                       //
 * flushes and frees
 *
 * Every function catches everything (no exception crosses this API) and treats
 * a NULL agent as a no-op. Record functions may be called from any thread and
 * never block; they return 1 when the agent was recording (the call counts as
 * recorded, dropped or sampled out) and 0 when it was dormant, shut down or NULL.
 * Enum values are those of trainscope.v1 (agent.proto).
 */
#ifndef TRAINSCOPE_AGENT_C_H_
#define TRAINSCOPE_AGENT_C_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct trainscope_agent trainscope_agent;

enum {
  TRAINSCOPE_SCOPE_UNSPECIFIED = 0,
  TRAINSCOPE_SCOPE_FORWARD = 1,
  TRAINSCOPE_SCOPE_BACKWARD = 2
};
enum {
  TRAINSCOPE_COLLECTIVE_ALL_REDUCE = 1,
  TRAINSCOPE_COLLECTIVE_ALL_GATHER = 2,
  TRAINSCOPE_COLLECTIVE_REDUCE_SCATTER = 3,
  TRAINSCOPE_COLLECTIVE_BROADCAST = 4,
  TRAINSCOPE_COLLECTIVE_BARRIER = 5,
  TRAINSCOPE_COLLECTIVE_SEND = 6,
  TRAINSCOPE_COLLECTIVE_RECV = 7,
  TRAINSCOPE_COLLECTIVE_ALL_TO_ALL = 8,
  TRAINSCOPE_COLLECTIVE_REDUCE = 9,
  TRAINSCOPE_COLLECTIVE_GATHER = 10,
  TRAINSCOPE_COLLECTIVE_SCATTER = 11
};
enum {
  TRAINSCOPE_PHASE_DATA_WAIT = 1,
  TRAINSCOPE_PHASE_FORWARD = 2,
  TRAINSCOPE_PHASE_BACKWARD = 3,
  TRAINSCOPE_PHASE_OPTIMIZER = 4
};

/* Where GPU activity stands (AgentStats::gpu_activity). */
enum {
  TRAINSCOPE_GPU_OFF = 0,
  TRAINSCOPE_GPU_UNAVAILABLE = 1,
  TRAINSCOPE_GPU_ACTIVE = 2,
  TRAINSCOPE_GPU_YIELDED = 3
};

/* Called on the agent's reader thread when the collector asks to halt. */
typedef void (*trainscope_halt_callback)(void* user_data, uint64_t halt_id, const char* reason,
                                         const char* requested_by);

/* Strings are copied by trainscope_agent_start; NULL means "" (or the default). */
typedef struct trainscope_agent_options {
  const char* collector_address; /* default "127.0.0.1:7070" */
  const char* job_id;            /* required, [A-Za-z0-9._-]{1,128} */
  const char* run_id;
  const char* job_token;
  uint32_t rank;
  uint32_t world_size; /* default 1 */
  uint32_t local_rank;
  uint32_t restart_count;
  const char* host;   /* default gethostname() */
  const char* device; /* default "cpu" */
  const char* framework;
  const char* framework_version;
  int start_recording;              /* default 1; 0: dormant until enabled */
  uint64_t memory_budget_bytes;     /* default 64 MiB */
  uint32_t ring_capacity_events;    /* default 16384 */
  uint32_t max_batch_events;        /* default 8192 */
  uint32_t flush_interval_ms;       /* default 20 */
  uint32_t reconnect_min_ms;        /* default 100 */
  uint32_t reconnect_max_ms;        /* default 5000 */
  uint32_t hello_timeout_ms;        /* default 5000 */
  uint32_t shutdown_deadline_ms;    /* default 5000, used when the agent is shut down with -1 */
  int log_to_stderr;                /* default 1 */
  trainscope_halt_callback on_halt; /* optional */
  void* on_halt_user_data;
  /* Halt the job when one of these alert kinds is raised (agent_options.h). */
  const char* const* halt_when;
  size_t halt_when_count;
  double halt_below_efficiency; /* 0: off */
  uint32_t halt_for_steps;
  /* TEST ONLY: a simulated clock error (AgentOptions::test_clock_*). */
  int64_t test_clock_offset_ns;
  double test_clock_drift_ppm;
  int64_t test_clock_origin_ns;
  /* GPU activity through CUPTI (AgentOptions::gpu_activity): default 0. */
  int gpu_activity;
  const char* cupti_library; /* NULL: found at run time (agent_options.h) */
  /* The host's rack or leaf switch; NULL/"": from TRAINSCOPE_RACK, else
     Slurm's SLURM_TOPOLOGY_ADDR (agent_options.h), else unknown. */
  const char* rack;
} trainscope_agent_options;

/* No typedef: the name is also the function that fills it (C keeps struct
 * tags apart from function names), so write `struct trainscope_agent_stats`. */
struct trainscope_agent_stats {
  uint64_t events_recorded;
  uint64_t dropped_ring_full;
  uint64_t dropped_buffer_full;
  uint64_t dropped_shutdown;
  uint64_t events_sampled_out;
  uint64_t events_refused;
  uint64_t events_acked;
  uint64_t batches_sent;
  uint64_t batches_acked;
  uint64_t reconnects;
  uint64_t loss_reports_submitted;
  uint64_t loss_reports_dropped;
  uint32_t gpu_activity; /* TRAINSCOPE_GPU_* */
  uint64_t gpu_records_lost;
  uint64_t gpu_buffers_refused;
  uint64_t gpu_events_unresolved;
  uint64_t gpu_events_out_of_order;
  int connected;
  int recording;
  int halt_requested;
};

/* Fills `options` with the defaults. */
void trainscope_agent_options_init(trainscope_agent_options* options);

/* Starts an agent (never waits for the collector). Returns 0 and sets *out, or
 * returns non-zero, sets *out to NULL and writes a message naming the bad
 * field into error (NUL-terminated, truncated to error_len; may be NULL). */
int trainscope_agent_start(const trainscope_agent_options* options, trainscope_agent** out,
                           char* error, size_t error_len);

/* Flushes until timeout_ms (negative: the configured shutdown_deadline_ms),
 * says goodbye and frees the agent. NULL: no-op. */
void trainscope_agent_shutdown(trainscope_agent* agent, int timeout_ms);

/* CLOCK_MONOTONIC in nanoseconds: the clock record timestamps are in. */
int64_t trainscope_now_ns(void);

/* Interns a NUL-terminated string; 0 is "" (also returned for NULL). */
uint32_t trainscope_intern(trainscope_agent* agent, const char* text);
uint32_t trainscope_intern_n(trainscope_agent* agent, const char* text, size_t length);

int trainscope_record_operator(trainscope_agent* agent, uint32_t name, int64_t start_ns,
                               int64_t end_ns, uint64_t sequence, uint32_t scope);
int trainscope_record_operator_begin(trainscope_agent* agent, uint32_t name, int64_t start_ns,
                                     uint64_t sequence, uint32_t scope);
int trainscope_record_operator_end(trainscope_agent* agent, uint32_t name, int64_t end_ns,
                                   uint64_t sequence, uint32_t scope);
int trainscope_record_collective(trainscope_agent* agent, uint32_t name, uint32_t kind,
                                 uint32_t group, uint64_t group_sequence, uint64_t bytes,
                                 int32_t peer, int64_t start_ns, int64_t end_ns);
int trainscope_record_step(trainscope_agent* agent, uint64_t step, int64_t time_ns);
int trainscope_record_phase(trainscope_agent* agent, uint32_t phase, uint64_t step,
                            int64_t start_ns, int64_t end_ns);
int trainscope_record_counter(trainscope_agent* agent, uint32_t name, uint64_t value,
                              int64_t time_ns);

int trainscope_is_recording(const trainscope_agent* agent);
void trainscope_set_recording(trainscope_agent* agent, int enabled);

/* 1 once the collector asked to halt; then copies the reason into `reason`
 * (NUL-terminated, truncated; may be NULL). 0 otherwise. */
int trainscope_halt_requested(const trainscope_agent* agent, char* reason, size_t reason_len);

/* The step boundary the requested halt applies at (HaltRequest.halt_at_step;
 * 0: the next one). 0 too when no halt was requested or for NULL. */
uint64_t trainscope_halt_at_step(const trainscope_agent* agent);

/* A snapshot of the counters; zeroes *stats for a NULL agent. */
void trainscope_agent_stats(const trainscope_agent* agent, struct trainscope_agent_stats* stats);

/* ---- raw operator records: a framework hook writing its thread's ring itself ----
 *
 * The per-operator hot path of a hook that is compiled apart from the agent
 * (the torch extension) without a call into the agent library: it keeps its
 * thread's ring (from its session, e.g. trainscope_observer_thread_ring) and
 * writes one fixed-size record per operator with raw ticks of the agent's
 * tick clock; the sender thread maps ticks to nanoseconds (the fit it reads
 * once per drain) and sends them as operators.
 *
 * Usage (one thread, the ring's producer):
 *   const trainscope_raw_ring* ring = ...;         // this thread's, once
 *   trainscope_raw_cursor cursor = {0};             // the thread's own, beside it
 *   if (trainscope_raw_ring_accepts(ring))          // recording, no sampling
 *     trainscope_raw_ring_push_operator_at(ring, &cursor, name, t0, t1, seq,
 *                                          TRAINSCOPE_SCOPE_FORWARD);
 *   else trainscope_record_operator(...);           // the general path
 *
 * Needs GCC or Clang (__atomic builtins on the agent's std::atomic words). */

/* EventKind of a raw operator in a ring: never on the wire (the sender turns
 * it into EVENT_KIND_OPERATOR). */
#define TRAINSCOPE_RAW_OPERATOR_KIND 64u

/* One ring slot: the agent's EventRecord (event_record.h) field for field,
 * 48 bytes (static_asserts there); a raw operator carries ticks in the time
 * fields. */
typedef struct trainscope_raw_record {
  uint64_t start; /* raw: ticks */
  uint64_t end;
  uint64_t value; /* raw operator: autograd sequence number + 1 (0: none) */
  uint64_t aux;
  uint32_t name; /* string id */
  uint32_t group;
  int32_t peer;
  uint8_t kind; /* TRAINSCOPE_RAW_OPERATOR_KIND */
  uint8_t reserved;
  uint16_t detail; /* raw operator: TRAINSCOPE_SCOPE_* */
} trainscope_raw_record;

/* The producer's side of one thread's ring (the agent's SpscRing and
 * ThreadRing words; valid while the thread lives and its session is open;
 * the producer may keep a copy of them). Only that thread may push. */
typedef struct trainscope_raw_ring {
  uint64_t* head;              /* records ever pushed (atomic; release after the slot) */
  const uint64_t* tail;        /* records ever consumed (atomic; the sender's) */
  uint64_t* cached_tail;       /* the producer's copy of tail (plain) */
  trainscope_raw_record* slots;
  uint64_t mask;               /* capacity - 1 */
  uint64_t capacity;           /* 0: every push is a ring_full drop */
  uint64_t* dropped_full;      /* atomic, single writer */
  const uint8_t* recording;    /* the agent's switch (atomic bool) */
  const uint32_t* sampling_period; /* atomic; > 1: use the general path */
} trainscope_raw_ring;

/* 1 when a raw push now counts as the general path's record would (the agent
 * records, every operator): else use trainscope_record_operator. */
static inline int trainscope_raw_ring_accepts(const trainscope_raw_ring* ring) {
  return __atomic_load_n(ring->recording, __ATOMIC_RELAXED) != 0 &&
         __atomic_load_n(ring->sampling_period, __ATOMIC_RELAXED) <= 1;
}

/* A producer's own bound for raw pushes on one ring: the position below
 * which it may write without reading the consumer's tail (a tail it read
 * plus the capacity; stale is safe, the tail only grows). Zeroed: read the
 * tail at the first push. Keeping it beside the producer's copy of the ring
 * words makes the full-ring test one compare with no shared word read. */
typedef struct trainscope_raw_cursor {
  uint64_t limit;
} trainscope_raw_cursor;

/* Pushes one raw operator, or counts a ring_full drop (never waits). The
 * words are read once, before the slot is written: the compiler would read
 * them again after stores it cannot tell apart from them. */
static inline void trainscope_raw_ring_push_operator_at(const trainscope_raw_ring* ring,
                                                        trainscope_raw_cursor* cursor,
                                                        uint32_t name, uint64_t start_ticks,
                                                        uint64_t end_ticks, uint64_t sequence,
                                                        uint16_t scope) {
  uint64_t* const head_word = ring->head;
  const uint64_t head = __atomic_load_n(head_word, __ATOMIC_RELAXED);
  if (head >= cursor->limit) {
    cursor->limit = __atomic_load_n(ring->tail, __ATOMIC_ACQUIRE) + ring->capacity;
    if (head >= cursor->limit) {
      __atomic_store_n(ring->dropped_full, __atomic_load_n(ring->dropped_full, __ATOMIC_RELAXED) + 1,
                       __ATOMIC_RELAXED);
      return;
    }
  }
  trainscope_raw_record* slot = &ring->slots[head & ring->mask];
  slot->start = start_ticks;
  slot->end = end_ticks;
  slot->value = sequence;
  slot->name = name;
  slot->kind = (uint8_t)TRAINSCOPE_RAW_OPERATOR_KIND;
  slot->detail = scope;
  __atomic_store_n(head_word, head + 1, __ATOMIC_RELEASE);
}

/* The same with the ring's own cache of the tail (shared with the agent's
 * pushes on this thread) instead of a cursor of the caller's. */
static inline void trainscope_raw_ring_push_operator(const trainscope_raw_ring* ring, uint32_t name,
                                                     uint64_t start_ticks, uint64_t end_ticks,
                                                     uint64_t sequence, uint16_t scope) {
  trainscope_raw_cursor cursor = {*ring->cached_tail + ring->capacity};
  trainscope_raw_ring_push_operator_at(ring, &cursor, name, start_ticks, end_ticks, sequence,
                                       scope);
  *ring->cached_tail = cursor.limit - ring->capacity;
}

#ifdef __cplusplus
}
#endif

#endif /* TRAINSCOPE_AGENT_C_H_ */
