// Configuration of one Agent (see agent.h). Agent::Start validates it and
// names the offending field in its error.
#ifndef TRAINSCOPE_AGENT_AGENT_OPTIONS_H_
#define TRAINSCOPE_AGENT_AGENT_OPTIONS_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "trainscope/agent/tick_fit.h"

namespace trainscope::agent {

// A halt the collector asked for (trainscope.v1.HaltRequest).
struct HaltInfo {
  uint64_t halt_id = 0;
  std::string reason;
  std::string requested_by;
  int64_t requested_unix_ns = 0;
  // The step boundary at which every rank stops (HaltRequest.halt_at_step):
  // the collector picks one past the highest step any rank reported, so no
  // rank is left waiting in a collective. 0: the next step boundary.
  uint64_t halt_at_step = 0;
};

struct AgentOptions {
  // gRPC target of the collector: "HOST:PORT", "[v6]:PORT", "unix:/path" or
  // any "scheme:///..." target gRPC understands.
  std::string collector_address = "127.0.0.1:7070";
  std::string job_id;  // required, [A-Za-z0-9._-]{1,128}
  std::string run_id;
  // The job's token: its membership secret. Empty: found in the environment
  // (security::JobSecretSource: TRAINSCOPE_JOB_SECRET, _SECRET_FILE, _KEY_FILE
  // or the user's default job key); else a collector without a job key
  // generates one (see Agent::job_token()).
  std::string job_token;
  uint32_t rank = 0;  // < world_size
  uint32_t world_size = 1;
  uint32_t local_rank = 0;
  uint32_t restart_count = 0;
  std::string host;  // empty: gethostname()
  // The rack (or leaf switch) of the host, Hello.rack. Empty: from the
  // launcher's environment (launcher_rack.h: TRAINSCOPE_RACK, else Slurm's
  // SLURM_TOPOLOGY_ADDR), else unknown.
  std::string rack;
  std::string device = "cpu";
  std::string framework;
  std::string framework_version;

  // false: dormant until the collector (or SetRecording) turns recording on.
  bool start_recording = true;

  // The job's own halt policy, sent in Hello (`trainscope run --halt-when`):
  // the collector halts the job when one of these alert rules holds, or the
  // efficiency stays below halt_below_efficiency, for halt_for_steps steps.
  // Checked by the collector, which says in its log when it refuses one.
  std::vector<std::string> halt_when;
  double halt_below_efficiency = 0;  // 0: off
  uint32_t halt_for_steps = 0;

  // Everything the agent buffers: the rings (at most half of it) and the
  // encoded, not yet acknowledged batches. At least 256 KiB.
  uint64_t memory_budget_bytes = 64ull << 20;
  // Events per thread ring, rounded up to a power of two, 64 .. 4194304.
  uint32_t ring_capacity_events = 16384;
  absl::Duration flush_interval = absl::Milliseconds(20);  // 1 ms .. 10 s
  uint32_t max_batch_events = 8192;                        // 1 .. 65536

  absl::Duration reconnect_min = absl::Milliseconds(100);
  absl::Duration reconnect_max = absl::Seconds(5);
  absl::Duration hello_timeout = absl::Seconds(5);      // waiting for HelloAck
  absl::Duration shutdown_deadline = absl::Seconds(5);  // used by the destructor

  // Called on the agent's stream reader thread (never on a training thread)
  // when the collector asks the job to halt. Must return promptly and must not
  // call Agent::Shutdown (that waits for this thread).
  std::function<void(const HaltInfo&)> on_halt;

  // The clock of raw operator records (trainscope_raw_ring_push_operator,
  // EventKind::kOperatorTicks): the sender maps their ticks with its
  // CurrentFit(), read once per drain. Null: ticks are ns. Outlives the agent.
  const TickMapper* tick_mapper = nullptr;

  // One line per notable connection event ("trainscope-agent: ...").
  bool log_to_stderr = true;

  // TLS towards the collector (docs/security.md), for a collector started
  // with --tls-cert (and --tls-client-ca: mutual TLS, then the agent needs
  // its own certificate). Each empty field is read from its environment
  // variable, so a job launched with them set (the PyTorch plugin, `trainscope
  // run`, trainscope-loadgen) needs no code change. All empty: plaintext.
  std::string tls_ca_file;      // TRAINSCOPE_TLS_CA: the CA of the collector's certificate
  std::string tls_cert_file;    // TRAINSCOPE_TLS_CERT: this agent's certificate (mutual TLS)
  std::string tls_key_file;     // TRAINSCOPE_TLS_KEY: its private key
  std::string tls_server_name;  // TRAINSCOPE_TLS_SERVER_NAME: the name in the collector's
                                // certificate, when collector_address does not carry it

  // GPU activity through CUPTI's Activity API (agent/src/gpu/): kernels
  // (NCCL ones as collectives), copies, memsets, host synchronisation and the
  // launching runtime calls, each tied to the operator around its launch
  // (Agent::GpuOperatorBegin), on the agent's clock. CUPTI is loaded at run
  // time; where it cannot run (no libcupti, no driver, another CUPTI client,
  // an agent built without CUPTI) the agent says so once and records the rest.
  // Its buffers are bounded apart from memory_budget_bytes: at most
  // gpu_buffer_bytes * gpu_max_buffers for CUPTI plus the event queue.
  bool gpu_activity = false;
  // Small buffers: CUPTI hands a buffer back only once it is full (or its
  // records complete at a flush), and the events of a slowly filling one must
  // come back within the device-event reorder window (500 ms) to be kept.
  // With only launch, copy and sync calls recorded, a 4 MiB buffer spanned
  // over a second of a device-bound ResNet-50 step on an H100.
  uint64_t gpu_buffer_bytes = 512 << 10;  // one CUPTI activity buffer, 64 KiB .. 256 MiB
  uint32_t gpu_max_buffers = 128;         // buffers CUPTI may hold at once, 1 .. 1024
  uint32_t gpu_queue_events = 1 << 16;  // converted events waiting for the sender, 64 .. 4194304
  // CUPTI is flushed this often, at every step mark (RecordStep) too; a
  // yielded tracer retries this often at most.
  absl::Duration gpu_flush_interval = absl::Seconds(1);  // 10 ms .. 60 s
  // Operator nesting levels GpuOperatorBegin ties device work to, 0 .. 64:
  // 64 names each kernel's innermost operator; 1 only top-level operators; 0
  // none (each level costs a CUPTI push and pop, about 280 ns per operator on
  // an H100 host; without them a kernel keeps its launch call's thread and
  // time, from which the innermost operator can still be found).
  uint32_t gpu_operator_depth = 64;
  // libcupti to load (a file, or its folder); empty: $TRAINSCOPE_CUPTI_LIBRARY,
  // else the one beside torch's CUDA libraries, else the system's
  // (agent/src/gpu/cupti_library_locator.h).
  std::string cupti_library;
  // The CUDA driver library Hello.gpus is read from (dlopen'ed at start, with
  // gpu_activity only: a CPU job on a GPU host lists no GPU, so its steps do
  // not wait for GPU work). Absent or failing (no driver): no GPUs listed,
  // nothing said (the GPU activity line says why it is off).
  std::string cuda_driver_library = "libcuda.so.1";

  // TEST ONLY: a simulated clock error, so clock alignment can be tested on
  // one machine with known ground truth. Every timestamp the agent sends
  // (event start/end, probe receive/send) becomes
  //   t' = t + test_clock_offset_ns + test_clock_drift_ppm * 1e-6 * (t - origin)
  // with origin = test_clock_origin_ns, or the agent's start when 0. Applied
  // where the sender encodes batches and answers probes, so the record path
  // is untouched; Hello's realtime_minus_domain_ns stays unperturbed (the
  // device looks like a host whose wall clock is off by the offset). The
  // PyTorch plugin reads TRAINSCOPE_TEST_CLOCK_{OFFSET_NS,DRIFT_PPM,ORIGIN_NS}.
  int64_t test_clock_offset_ns = 0;
  double test_clock_drift_ppm = 0;
  int64_t test_clock_origin_ns = 0;
};

}  // namespace trainscope::agent

#endif  // TRAINSCOPE_AGENT_AGENT_OPTIONS_H_
