/* trainscope plugin session, C API: what a framework extension (the torch
 * extension trainscope._C) needs from libtrainscope_agent.so. Plain C, so an
 * extension compiled against any PyTorch (its own C++ ABI, headers and
 * pybind11) needs nothing of trainscope's build but this header and
 * trainscope_agent.h.
 *
 * Usage (an extension):
 *   if (trainscope_session_abi_version() != TRAINSCOPE_SESSION_ABI_VERSION) fail;
 *   trainscope_session_options o;
 *   trainscope_session_options_init(&o);
 *   o.agent.job_id = "resnet"; ...
 *   trainscope_session* s = NULL;
 *   char error[512];
 *   if (trainscope_session_start(&o, &InstallHook, NULL, &s, error, sizeof error)) fail(error);
 *   // InstallHook(user, observer, &hook, ...) registers the framework's
 *   // operator callbacks, which call trainscope_observer_* on every operator.
 *   while (training) { ...; if (trainscope_session_step_boundary(s, ...)) halt(); }
 *   trainscope_session_close(s, 5.0, "");
 *   trainscope_session_free(s);
 *
 * Every function catches everything (no exception crosses this API).
 * Threading: as PluginSession (plugin_session.h): step_boundary,
 * halt_handled, record_phase on the training thread; the observer functions
 * on any thread that runs operators; the rest from any thread.
 */
#ifndef TRAINSCOPE_SESSION_C_H_
#define TRAINSCOPE_SESSION_C_H_

#include <stddef.h>
#include <stdint.h>

#include "trainscope_agent.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Bumped whenever a struct or signature below changes: an extension built
 * against another version refuses to load (it names both). */
#define TRAINSCOPE_SESSION_ABI_VERSION 5u
uint32_t trainscope_session_abi_version(void);

typedef struct trainscope_session trainscope_session;
/* What the operator callbacks record into (one per session). */
typedef struct trainscope_observer trainscope_observer;

/* ---- the operator hook the session drives ---------------------------------- */

/* Callbacks that can be switched on and off; destroy removes them (none
 * starts after it returns). */
typedef struct trainscope_hook {
  void* self;
  void (*set_recording)(void* self, int enabled);
  void (*set_shapes)(void* self, int enabled); /* inputs for FLOPs */
  void (*destroy)(void* self);
} trainscope_hook;

/* Installs the hook for `observer` (valid until the hook is destroyed).
 * Returns 0 and fills *out, or non-zero with a message in error. */
typedef int (*trainscope_hook_install)(void* user_data, const trainscope_observer* observer,
                                       trainscope_hook* out, char* error, size_t error_len);

/* ---- operators, as the observer sees them ---------------------------------- */

enum {
  TRAINSCOPE_OP_COLLECTIVE = 1,
  TRAINSCOPE_OP_POINT_TO_POINT = 2,    /* send / recv: sequence per peer */
  TRAINSCOPE_OP_OPENS_BACKWARD = 4,    /* autograd's per-node wrapper */
  TRAINSCOPE_OP_OPTIMIZER_STEP = 8,    /* "Optimizer.step#...": the optimizer phase */
  TRAINSCOPE_OP_EXCLUDED_FROM_PHASES = 16
};
/* Which FLOP formula applies (the argument layout of the aten schema). */
enum {
  TRAINSCOPE_FLOP_NONE = 0,
  TRAINSCOPE_FLOP_CONV2D = 1,
  TRAINSCOPE_FLOP_CONVOLUTION = 2,
  TRAINSCOPE_FLOP_LINEAR = 3,
  TRAINSCOPE_FLOP_ADDMM = 4,
  TRAINSCOPE_FLOP_MM = 5,
  TRAINSCOPE_FLOP_MATMUL = 6,
  TRAINSCOPE_FLOP_BMM = 7
};

/* One interned, classified operator name. Lives (at the same address) as
 * long as the session, so threads may cache the pointer. */
typedef struct trainscope_op_info {
  const char* name; /* NUL-terminated */
  uint32_t id;      /* the agent's string id */
  uint32_t flags;   /* TRAINSCOPE_OP_* */
  uint32_t collective_kind; /* TRAINSCOPE_COLLECTIVE_*, 0: none */
  uint32_t flop;            /* TRAINSCOPE_FLOP_* */
  const void* internal;     /* the session's own record */
} trainscope_op_info;

typedef struct trainscope_collective_tag {
  uint32_t group; /* string id of the process group */
  int32_t peer;   /* -1: none */
} trainscope_collective_tag;

/* Unique per session in this process: caches filled for another session are
 * recognised by it. */
uint64_t trainscope_observer_generation(const trainscope_observer* o);
/* 1: timestamps are TSC ticks (__rdtsc()); 0: CLOCK_MONOTONIC ns
 * (trainscope_now_ns()). Fixed for the session. */
int trainscope_observer_uses_tsc(const trainscope_observer* o);
/* The slow path behind a per-thread cache: interns and classifies once. Never NULL. */
const trainscope_op_info* trainscope_observer_find_op(const trainscope_observer* o,
                                                      const char* name, size_t length);
/* The calling thread's ring in the session's agent, for raw operator records
 * (trainscope_agent.h: ticks as trainscope_observer_uses_tsc says, mapped
 * by the sender); NULL when the thread has none (exiting, out of memory).
 * Valid on this thread while the session is open. Only a plain operator fits
 * a raw record: an optimizer step range or a FLOP operator with FLOPs goes
 * through trainscope_observer_operator. */
const trainscope_raw_ring* trainscope_observer_thread_ring(const trainscope_observer* o);

/* The derived forward / backward phases of the running step, in ticks: the
 * first and last top-level operator before the first backward one, and the
 * first and last top-level backward operator (0: none yet). The session turns
 * them into PHASE_FORWARD / BACKWARD / DATA_WAIT at each step boundary.
 * Words are atomics: update them only through trainscope_phase_ticks_update. */
typedef struct trainscope_phase_ticks {
  uint64_t forward_first, forward_last;
  uint64_t backward_first, backward_last;
} trainscope_phase_ticks;
trainscope_phase_ticks* trainscope_observer_phase_ticks(const trainscope_observer* o);

/* A top-level operator (depth 0, not excluded from phases) ended. Relaxed:
 * operators of one step are ordered by the training thread; a torn read at a
 * boundary costs one phase's accuracy, not safety. */
static inline void trainscope_phase_ticks_update(trainscope_phase_ticks* p, uint64_t start_ticks,
                                                 uint64_t end_ticks, int backward) {
  if (backward) {
    if (__atomic_load_n(&p->backward_first, __ATOMIC_RELAXED) == 0) {
      __atomic_store_n(&p->backward_first, start_ticks, __ATOMIC_RELAXED);
    }
    __atomic_store_n(&p->backward_last, end_ticks, __ATOMIC_RELAXED);
    return;
  }
  if (__atomic_load_n(&p->forward_first, __ATOMIC_RELAXED) == 0) {
    __atomic_store_n(&p->forward_first, start_ticks, __ATOMIC_RELAXED);
  }
  if (__atomic_load_n(&p->backward_first, __ATOMIC_RELAXED) == 0) {
    __atomic_store_n(&p->forward_last, end_ticks, __ATOMIC_RELAXED);
  }
}

/* An operator that ended on the thread it started on. sequence: autograd
 * sequence number + 1 (0: none); flops: its FLOPs (0: none, or not a FLOP
 * operator); started_step: for an optimizer step range, the running step
 * when it started (its PHASE_OPTIMIZER's step); top_level: it ran at depth 0
 * (feeds the derived forward/backward phases). */
void trainscope_observer_operator(const trainscope_observer* o, const trainscope_op_info* op,
                                  uint64_t start_ticks, uint64_t end_ticks, uint64_t sequence,
                                  int backward, uint64_t flops, uint64_t started_step,
                                  int top_level);
/* An asynchronous range (it may end on another thread). */
void trainscope_observer_async_operator(const trainscope_observer* o,
                                        const trainscope_op_info* op, uint64_t start_ticks,
                                        uint64_t end_ticks, uint64_t sequence, int backward);
void trainscope_observer_collective(const trainscope_observer* o, const trainscope_op_info* op,
                                    trainscope_collective_tag tag, uint64_t group_sequence,
                                    uint64_t bytes, uint64_t start_ticks, uint64_t end_ticks);
/* GPU activity (AgentOptions::gpu_activity): 1 when the session asked for
 * it, so the hook brackets operators with the calls below (each a no-op
 * while CUPTI cannot run or is yielded; ~a CUPTI push while active). */
int trainscope_observer_gpu_requested(const trainscope_observer* o);
/* Around an operator, on its thread (nesting allowed, each begin with its
 * end): the kernels, copies and memsets it launches name it. */
void trainscope_observer_gpu_operator_begin(const trainscope_observer* o,
                                            const trainscope_op_info* op, uint64_t sequence);
void trainscope_observer_gpu_operator_end(const trainscope_observer* o);
/* Around a collective's launch on the thread that launches it (NCCL: the
 * calling thread, between its c10d range's start and end): its NCCL kernels
 * become GPU collectives with this group, sequence and bytes, the same as
 * the collective's CPU record. An end on another thread than its begin is
 * not called (the begin's level is dropped at that thread's next begin). */
void trainscope_observer_gpu_collective_begin(const trainscope_observer* o,
                                              const trainscope_op_info* op,
                                              trainscope_collective_tag tag,
                                              uint64_t group_sequence, uint64_t bytes);
void trainscope_observer_gpu_collective_end(const trainscope_observer* o);
/* The step now running. */
uint64_t trainscope_observer_running_step(const trainscope_observer* o);
/* Collective bookkeeping (collective_tracker.h). */
uint64_t trainscope_observer_tracker_serial(const trainscope_observer* o);
trainscope_collective_tag trainscope_observer_default_tag(const trainscope_observer* o);
uint64_t trainscope_observer_next_sequence(const trainscope_observer* o, uint32_t group,
                                           int32_t peer, int point_to_point);

/* ---- the session ------------------------------------------------------------ */

typedef struct trainscope_session_options {
  trainscope_agent_options agent; /* on_halt is the session's own */
  int shapes;                     /* default 1: FLOPs from input shapes */
  uint32_t shapes_every_n_steps;  /* default 1 */
  double halt_grace_s;            /* default 30; <= 0: no SIGTERM fallback */
  uint64_t first_step;            /* default 0 */
  int monotonic_clock;            /* default 0: the TSC where it is reliable */
} trainscope_session_options;

void trainscope_session_options_init(trainscope_session_options* options);

/* Starts the agent and installs the hook. Returns 0 and sets *out, or
 * non-zero with a message naming the bad input in error. */
int trainscope_session_start(const trainscope_session_options* options,
                             trainscope_hook_install install, void* install_user_data,
                             trainscope_session** out, char* error, size_t error_len);

/* A step boundary (has_completed: completed_step is the index of the step
 * that just ended, else one more than before; has_device_memory: allocated,
 * peak and reserved bytes of the accelerator as its allocator reports them,
 * else the process's resident set and its peak, without a reserved figure).
 * Writes the step starting here into *next_step. Returns 1 (once) when the
 * job halts here, with the reason copied into halt_reason; else 0. */
int trainscope_session_step_boundary(trainscope_session* s, int has_completed,
                                     uint64_t completed_step, int has_device_memory,
                                     uint64_t device_allocated, uint64_t device_peak,
                                     uint64_t device_reserved, uint64_t* next_step,
                                     char* halt_reason, size_t halt_reason_len);
void trainscope_session_halt_handled(trainscope_session* s);
void trainscope_session_record_phase(trainscope_session* s, uint32_t phase, int64_t start_ns,
                                     int64_t end_ns);
void trainscope_session_set_stage(trainscope_session* s, uint64_t stage);
/* 1 and *stage when set, else 0. */
int trainscope_session_stage(const trainscope_session* s, uint64_t* stage);
/* The tag of a call on `group` ("": the default group) with `peer` (-1:
 * none), and the serial that tells this session's tags from another's. */
void trainscope_session_make_collective_tag(trainscope_session* s, int32_t peer,
                                            const char* group, size_t group_length,
                                            uint64_t* tracker_serial,
                                            trainscope_collective_tag* tag);
uint64_t trainscope_session_step(const trainscope_session* s);
int trainscope_session_recording(const trainscope_session* s);
void trainscope_session_set_recording(trainscope_session* s, int enabled);
/* 1 with (enabled, serial) once the collector set the switch, else 0. */
int trainscope_session_loss_contribution_switch(const trainscope_session* s, int* enabled,
                                                uint64_t* serial);
int trainscope_session_halt_pending(const trainscope_session* s);

typedef struct trainscope_halt_info {
  uint64_t halt_id;
  int64_t requested_unix_ns;
  uint64_t halt_at_step;
} trainscope_halt_info;
/* 1 and the details once a halt was requested, else 0. */
int trainscope_session_halt_info(const trainscope_session* s, trainscope_halt_info* info,
                                 char* reason, size_t reason_len, char* requested_by,
                                 size_t requested_by_len);
void trainscope_session_stats(const trainscope_session* s, struct trainscope_agent_stats* stats);
/* Copies the job token (NUL-terminated, truncated); returns its full length. */
size_t trainscope_session_job_token(const trainscope_session* s, char* out, size_t out_len);
int trainscope_session_uses_tsc(const trainscope_session* s);
/* Lets CUPTI go for another client (torch.profiler) until resume. */
void trainscope_session_yield_gpu(trainscope_session* s);
void trainscope_session_resume_gpu(trainscope_session* s);
int trainscope_session_closed(const trainscope_session* s);
/* Removes the hook, flushes until timeout_s and shuts the agent down
 * (error: why the process ends abnormally, "" or NULL: it does not). Idempotent. */
void trainscope_session_close(trainscope_session* s, double timeout_s, const char* error);
/* Closes (without waiting) if needed and frees. NULL: no-op. */
void trainscope_session_free(trainscope_session* s);

/* ---- LossContribution reports (agent.proto's LossReport) ------------------- */

typedef struct trainscope_thumbnail {
  uint32_t height, width, channels;
  const void* pixels;
  size_t pixels_length;
} trainscope_thumbnail;

typedef struct trainscope_item_score {
  uint64_t item;
  double contribution;
  int32_t label, prediction;
  const trainscope_thumbnail* input; /* NULL: none */
} trainscope_item_score;

typedef struct trainscope_layer_map {
  const char* layer;
  uint32_t height, width;
  const void* contribution; /* half floats */
  size_t contribution_length;
  const void* reduction;
  size_t reduction_length;
} trainscope_layer_map;

typedef struct trainscope_item_snapshot {
  uint64_t item;
  uint32_t epoch;
  uint64_t iteration;
  int32_t label, prediction;
  double contribution;
  const trainscope_thumbnail* input; /* NULL: none */
  const trainscope_layer_map* maps;
  size_t map_count;
} trainscope_item_snapshot;

typedef struct trainscope_loss_report {
  uint32_t epoch;
  uint64_t iteration;
  int epoch_complete;
  const char* selection_layer;
  const char* const* monitored_layers;
  size_t monitored_layer_count;
  uint32_t top_n;
  const trainscope_item_score* top;
  size_t top_count;
  const trainscope_item_snapshot* snapshots;
  size_t snapshot_count;
} trainscope_loss_report;

/* Sends the report with the next batch (copied); 0 when dropped (counted). */
int trainscope_session_submit_loss_report(trainscope_session* s,
                                          const trainscope_loss_report* report);

#ifdef __cplusplus
}
#endif

#endif /* TRAINSCOPE_SESSION_C_H_ */
