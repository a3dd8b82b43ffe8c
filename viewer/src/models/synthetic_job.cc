#include "trainscope/viewer/synthetic_job.h"

#include <algorithm>
#include <map>

namespace trainscope::viewer {
namespace {

class Random {
 public:
  explicit Random(uint64_t seed) : state_(seed * 0x9E3779B97F4A7C15ull + 1) {}
  uint64_t Next() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  double Uniform(double lo, double hi) {
    return lo + (hi - lo) * static_cast<double>(Next() >> 11) / 9007199254740992.0;
  }

 private:
  uint64_t state_;
};

const char* const kForward[] = {"aten::conv2d", "aten::batch_norm", "aten::relu", "aten::linear",
                                "aten::mm"};
const char* const kBackward[] = {"aten::convolution_backward", "aten::native_batch_norm_backward",
                                 "aten::threshold_backward", "aten::mm_backward"};

// The kernel a CPU operator launches (by the operator's name).
std::string KernelOf(const std::string& op) {
  if (op.find("conv") != std::string::npos) return "implicit_convolve_sgemm";
  if (op.find("batch_norm") != std::string::npos) return "batch_norm_collect_statistics_kernel";
  if (op.find("relu") != std::string::npos || op.find("threshold") != std::string::npos)
    return "vectorized_elementwise_kernel";
  if (op.find("Optimizer") != std::string::npos) return "multi_tensor_apply_kernel";
  return "sm90_xmma_gemm_f32f32_tf32f32";
}

constexpr uint32_t kComputeStream = 7;
constexpr uint32_t kCopyStream = 9;
constexpr uint32_t kNcclStream = 20;

}  // namespace

SyntheticJob GenerateSyntheticJob(const SyntheticJobOptions& options) {
  SyntheticJob out;
  const uint32_t devices = std::max<uint32_t>(1, options.devices);
  const uint32_t stages = std::clamp<uint32_t>(options.stages, 1, devices);
  const uint32_t replicas = std::max<uint32_t>(1, devices / stages);
  const uint32_t hosts = std::max<uint32_t>(1, options.hosts);
  Random random(options.seed);
  auto& strings = out.operators.strings;
  std::map<std::string, uint32_t> ids;
  auto intern = [&](const std::string& s) {
    auto [it, inserted] = ids.try_emplace(s, static_cast<uint32_t>(strings.size()));
    if (inserted) strings.push_back(s);
    return it->second;
  };
  intern("");

  out.job.job_id = options.job_id;
  out.job.state = JobStateKind::kRunning;
  out.job.world_size = devices;
  out.job.ranks_connected = devices;
  out.job.recording = true;
  for (uint32_t r = 0; r < devices; ++r) {
    const uint32_t stage = std::min(stages - 1, r / replicas);
    const uint32_t host_index = r * hosts / devices;
    const std::string host = "node-" + std::to_string(host_index);
    const std::string rack =
        options.racks == 0 ? "" : "rack-" + std::to_string(host_index * options.racks / hosts);
    out.devices.push_back({r, stage, host, rack});
    out.job.ranks.push_back({r, host, 1000 + r, true, 0});
  }
  auto raw_offset = [&](uint32_t r) {
    return static_cast<int64_t>((r * 37) % 11) * options.clock_skew_ns - 5 * options.clock_skew_ns;
  };
  auto op = [&](uint32_t rank, int64_t start, int64_t end, const std::string& name, OpClass cls,
                uint64_t step) {
    OperatorRecord record;
    record.rank = rank;
    record.start_ns = start;
    record.end_ns = end;
    record.raw_start_ns = start + raw_offset(rank);
    record.raw_end_ns = end + raw_offset(rank);
    record.name = intern(name);
    record.op_class = cls;
    record.step = step;
    out.operators.operators.push_back(record);
    return &out.operators.operators.back();
  };
  // GPU state: when each device's compute stream is free, and per step its
  // kernels' time by name.
  std::vector<int64_t> stream_free(devices, options.start_ns);
  std::vector<std::map<std::string, std::pair<uint32_t, int64_t>>> kernel_time(devices);
  auto kernel = [&](uint32_t rank, int64_t start, int64_t end, const std::string& name, OpClass cls,
                    uint32_t stream, uint64_t step) {
    OperatorRecord* k = op(rank, start, end, name, cls, step);
    k->gpu_stream = stream;
    auto& [count, total] = kernel_time[rank][name];
    ++count;
    total += end - start;
    return k;
  };
  // A compute operator's kernel: launched as the operator starts, run when
  // the stream is free, a little shorter than the operator.
  auto launch = [&](uint32_t rank, int64_t cpu_start, int64_t cpu_duration, const std::string& name,
                    uint64_t step) {
    if (!options.gpu) return int64_t{0};
    const int64_t start = std::max(cpu_start + 6'000, stream_free[rank]);
    const int64_t duration = cpu_duration * 7 / 10;
    kernel(rank, start, start + duration, KernelOf(name), OpClass::kGpuKernel, kComputeStream,
           step);
    stream_free[rank] = start + duration;
    return duration;
  };

  std::vector<int64_t> ready(devices, options.start_ns);
  // Per-pair traffic as the collector models it (docs/traffic.md): exact for
  // send/recv, a ring for each all-reduce; the slow link takes longer.
  auto pair = [&](StepRecord* record, uint32_t src, uint32_t dst, const std::string& group,
                  bool exact, uint64_t bytes, uint32_t messages, int64_t ns) {
    if (options.slow_link.has_value() && options.slow_link->first == src &&
        options.slow_link->second == dst) {
      ns = static_cast<int64_t>(static_cast<double>(ns) * options.slow_link_factor);
    }
    PairTrafficRecord t;
    t.step = record->step;
    t.src_rank = src;
    t.dst_rank = dst;
    t.group = group;
    t.exact = exact;
    t.bytes = bytes;
    t.messages = messages;
    t.duration_ns = ns;
    t.src_host = out.devices[src].host;
    t.dst_host = out.devices[dst].host;
    t.locality = src == dst                 ? LinkLocality::kSameDevice
                 : t.src_host == t.dst_host ? LinkLocality::kSameHost
                                            : LinkLocality::kCrossHost;
    record->traffic.push_back(std::move(t));
  };
  uint64_t p2p_sequence = 0;
  for (uint32_t s = 0; s < options.steps; ++s) {
    const uint64_t step = s + 1;
    StepRecord record;
    record.step = step;
    std::vector<DeviceStepRecord> d(devices);
    std::vector<int64_t> gpu_wait(devices, 0), gpu_transfer(devices, 0);  // NCCL kernels'
    std::vector<int64_t> clock = ready;
    const uint32_t forward_ops = options.compute_ops_per_step / 2;
    const uint32_t backward_ops = options.compute_ops_per_step - forward_ops;
    for (uint32_t r = 0; r < devices; ++r) {
      d[r].rank = r;
      d[r].stage = out.devices[r].stage;
      d[r].start_ns = clock[r];
      d[r].data_wait_ns = static_cast<int64_t>(random.Uniform(300e3, 700e3));
      clock[r] += d[r].data_wait_ns;
      kernel_time[r].clear();
      if (options.gpu) {
        // The batch goes to the device once loaded.
        const int64_t copy = static_cast<int64_t>(random.Uniform(60e3, 90e3));
        kernel(r, clock[r], clock[r] + copy, "Memcpy HtoD (Pinned -> Device)", OpClass::kGpuCopy,
               kCopyStream, step);
        d[r].h2d_copy_ns = copy;
        stream_free[r] = std::max(stream_free[r], clock[r] + copy);
      }
    }
    auto slow = [&](uint32_t r) {
      return options.straggler.has_value() && *options.straggler == r &&
                     step >= options.straggler_from_step
                 ? options.straggler_factor
                 : 1.0;
    };
    auto compute = [&](uint32_t r, uint32_t count, const char* const* names, size_t name_count) {
      const int64_t begin = clock[r];
      for (uint32_t i = 0; i < count; ++i) {
        const int64_t duration =
            static_cast<int64_t>(random.Uniform(40e3, 160e3) * slow(r) * (1 + (i % 3 == 0)));
        op(r, clock[r], clock[r] + duration, names[i % name_count], OpClass::kCompute, step);
        d[r].gpu_busy_ns += launch(r, clock[r], duration, names[i % name_count], step);
        d[r].compute_ns += duration;
        d[r].flops += static_cast<uint64_t>(duration / slow(r) * 2e3);  // ~2 TFLOP/s nominal
        clock[r] += duration + static_cast<int64_t>(random.Uniform(2e3, 8e3));
      }
      return clock[r] - begin;
    };
    // Forward, stage by stage; stage s > 0 waits for its activations.
    for (uint32_t stage = 0; stage < stages; ++stage) {
      for (uint32_t rep = 0; rep < replicas; ++rep) {
        const uint32_t r = stage * replicas + rep;
        if (r >= devices) continue;
        if (stage > 0) {
          const uint32_t from = r - replicas;
          const int64_t send_start = clock[from];
          const int64_t send_end = send_start + static_cast<int64_t>(random.Uniform(60e3, 90e3));
          OperatorRecord* send = op(from, send_start, send_end, "send", OpClass::kSend, step);
          send->peer = static_cast<int32_t>(r);
          send->group_sequence = ++p2p_sequence;
          send->bytes = 4 << 20;
          clock[from] = send_end;
          const int64_t recv_start = std::min(clock[r], send_start);
          OperatorRecord* recv = op(r, recv_start, send_end + 5'000, "recv", OpClass::kRecv, step);
          recv->peer = static_cast<int32_t>(from);
          recv->group_sequence = p2p_sequence;
          recv->bytes = 4 << 20;
          d[r].collective_ns += send_end + 5'000 - recv_start;
          d[r].wait_ns += std::max<int64_t>(0, send_start - recv_start);
          d[from].collective_ns += send_end - send_start;
          pair(&record, from, r, "", true, 4 << 20, 1, send_end + 5'000 - send_start);
          clock[r] = std::max(clock[r], send_end + 5'000);
        }
        d[r].forward_ns = compute(r, forward_ops, kForward, std::size(kForward));
      }
    }
    for (uint32_t r = 0; r < devices; ++r) {
      d[r].backward_ns = compute(r, backward_ops, kBackward, std::size(kBackward));
    }
    // All-reduce within each stage: everyone leaves when the last arrives.
    for (uint32_t c = 0; c < options.collectives_per_step; ++c) {
      for (uint32_t stage = 0; stage < stages; ++stage) {
        int64_t last = 0;
        for (uint32_t rep = 0; rep < replicas; ++rep)
          last = std::max(last, clock[stage * replicas + rep]);
        const int64_t transfer = static_cast<int64_t>(random.Uniform(80e3, 140e3));
        const std::string group = "pg:stage" + std::to_string(stage);
        // gloo's ring all-reduce: 2(n-1) chunks of S/n to the next member.
        if (replicas > 1) {
          const uint64_t bytes = (25ull << 20) * 2 * (replicas - 1) / replicas;
          for (uint32_t rep = 0; rep < replicas; ++rep) {
            pair(&record, stage * replicas + rep, stage * replicas + (rep + 1) % replicas, group,
                 false, bytes, 2 * (replicas - 1), transfer);
          }
        }
        for (uint32_t rep = 0; rep < replicas; ++rep) {
          const uint32_t r = stage * replicas + rep;
          OperatorRecord* all_reduce =
              op(r, clock[r], last + transfer, "all_reduce", OpClass::kCollective, step);
          all_reduce->group = intern(group);
          all_reduce->group_sequence = step * 100 + c + 1;
          all_reduce->bytes = 25 << 20;
          d[r].collective_ns += last + transfer - clock[r];
          d[r].wait_ns += last - clock[r];
          clock[r] = last + transfer;
        }
        if (!options.gpu) continue;
        // The NCCL kernels: each starts when its stream's work before it is
        // done; all end once the last has started, plus the transfer.
        int64_t last_kernel = 0;
        for (uint32_t rep = 0; rep < replicas; ++rep)
          last_kernel = std::max(last_kernel, stream_free[stage * replicas + rep]);
        for (uint32_t rep = 0; rep < replicas; ++rep) {
          const uint32_t r = stage * replicas + rep;
          const int64_t start = stream_free[r];
          OperatorRecord* nccl =
              kernel(r, start, last_kernel + transfer, "ncclDevKernel_AllReduce_Sum_f32_RING_LL",
                     OpClass::kGpuCollective, kNcclStream, step);
          nccl->group = intern(group);
          nccl->group_sequence = step * 100 + c + 1;
          nccl->bytes = 25 << 20;
          gpu_wait[r] += last_kernel - start;
          gpu_transfer[r] += transfer;
          stream_free[r] = last_kernel + transfer;
        }
      }
    }
    for (uint32_t r = 0; r < devices; ++r) {
      const int64_t duration = static_cast<int64_t>(random.Uniform(100e3, 150e3));
      op(r, clock[r], clock[r] + duration, "Optimizer.step#SGD.step", OpClass::kCompute, step);
      d[r].gpu_busy_ns += launch(r, clock[r], duration, "Optimizer.step#SGD.step", step);
      d[r].optimizer_ns = duration;
      d[r].compute_ns += duration;
      clock[r] += duration + 20'000;
      d[r].end_ns = clock[r];
      d[r].step_time_ns = d[r].end_ns - d[r].start_ns;
      d[r].idle_ns = std::max<int64_t>(
          0, d[r].step_time_ns - d[r].compute_ns - d[r].collective_ns - d[r].data_wait_ns);
      d[r].flops_per_second = d[r].compute_ns > 0 ? d[r].flops * 1e9 / d[r].compute_ns : 0;
      d[r].peak_memory_bytes = (3ull << 30) + (uint64_t{d[r].stage} << 28) +
                               static_cast<uint64_t>(random.Uniform(0, 64e6));
      ready[r] = d[r].end_ns;
      if (options.gpu) {
        // Device time: compute kernels and NCCL kernels never overlap here
        // (one stream each, NCCL after the backward's kernels).
        DeviceStepRecord& g = d[r];
        g.has_gpu = true;
        g.gpu_streams = 3;
        g.cpu_compute_ns = g.compute_ns;
        g.cpu_collective_ns = g.collective_ns;
        g.compute_ns = g.gpu_busy_ns;
        g.collective_ns = gpu_wait[r] + gpu_transfer[r];
        g.wait_ns = gpu_wait[r];
        g.transfer_ns = gpu_transfer[r];
        const int64_t busy = g.gpu_busy_ns + g.collective_ns + g.h2d_copy_ns;
        const int64_t idle = std::max<int64_t>(0, g.step_time_ns - busy);
        g.gpu_idle_data_wait_ns = std::min(idle, g.data_wait_ns);
        g.gpu_idle_launch_bound_ns = idle - g.gpu_idle_data_wait_ns;
        g.idle_ns = idle;
        for (const auto& [name, totals] : kernel_time[r]) {
          const OpClass cls = name.rfind("nccl", 0) == 0     ? OpClass::kGpuCollective
                              : name.rfind("Memcpy", 0) == 0 ? OpClass::kGpuCopy
                                                             : OpClass::kGpuKernel;
          g.top_kernels.push_back({name, cls, totals.first, totals.second, ""});
          g.kernels += totals.first;
        }
        std::sort(g.top_kernels.begin(), g.top_kernels.end(),
                  [](const auto& a, const auto& b) { return a.total_ns > b.total_ns; });
      }
    }
    record.start_ns = INT64_MAX;
    record.end_ns = INT64_MIN;
    for (const auto& device : d) {
      record.start_ns = std::min(record.start_ns, device.start_ns);
      record.end_ns = std::max(record.end_ns, device.end_ns);
    }
    record.devices = std::move(d);
    if (options.straggler.has_value() && step == options.straggler_from_step &&
        *options.straggler < devices) {
      const uint32_t r = *options.straggler;
      double others = 0;
      for (const auto& device : record.devices) {
        if (device.rank != r) others += static_cast<double>(device.compute_ns);
      }
      others /= std::max<uint32_t>(1, devices - 1);
      Alert alert;
      alert.job = options.job_id;
      alert.step = step;
      alert.ranks = {r};
      alert.op = kBackward[0];
      alert.metric = "compute_ms";
      alert.value = record.devices[r].compute_ns / 1e6;
      alert.baseline = others / 1e6;
      alert.rule = "straggler";
      alert.text = "rank " + std::to_string(r) + " computes " +
                   std::to_string(static_cast<int>(100 * (alert.value / alert.baseline - 1))) +
                   "% longer than the other devices";
      out.alerts.push_back(alert);
    }
    if (options.slow_link.has_value() && step == options.straggler_from_step) {
      // As the collector's slow_link rule words it: sender, receiver.
      Alert alert;
      alert.job = options.job_id;
      alert.step = step;
      alert.ranks = {options.slow_link->first, options.slow_link->second};
      alert.metric = "bytes_per_second";
      alert.rule = "slow_link";
      alert.text = "link " + std::to_string(options.slow_link->first) + "->" +
                   std::to_string(options.slow_link->second) + " is slow";
      out.alerts.push_back(alert);
    }
    out.steps.push_back(std::move(record));
  }
  return out;
}

}  // namespace trainscope::viewer
