// Which device sends how many bytes in how many messages to which other
// device when a communication backend runs one collective: the pair flows
// of gloo's and NCCL's algorithms (docs/traffic.md gives each formula and
// the backend source it comes from). Send/recv needs no model: the matcher
// counts it exactly.
//
// `members` are the group's global ranks in group-rank order (ascending, as
// PyTorch's groups list them); `bytes` is the per-rank buffer the agent
// reported (the tensors' nbytes); `root` indexes `members` (broadcast,
// reduce, gather, scatter). Flows are appended to `out`, one per directed
// pair, merged; a group of fewer than two members moves nothing.
//
// Usage:
//   TrafficModel model;  // NCCL all-reduce as a ring (NCCL_ALGO=Ring)
//   model.SetRankBackend(rank, TrafficModel::Backend::kNccl);  // from Hello.device
//   std::vector<TrafficModel::Flow> flows;
//   model.Collective(TrafficModel::Backend::kNccl, v1::COLLECTIVE_KIND_ALL_REDUCE,
//                    members, bytes, /*root=*/0, &flows);
//   v1::LinkLocality where = TrafficModel::Locality(host_a, device_a, host_b, device_b);
//
// Threading: const methods are safe from any thread; SetRankBackend is not
// (the analysis thread configures it as devices open).
#ifndef TRAINSCOPE_COLLECTOR_ANALYSIS_TRAFFIC_MODEL_H_
#define TRAINSCOPE_COLLECTOR_ANALYSIS_TRAFFIC_MODEL_H_

#include <cstdint>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "trainscope/v1/agent.pb.h"
#include "trainscope/v1/analysis.pb.h"

namespace trainscope::collector {

class TrafficModel {
 public:
  enum class Backend : uint8_t { kGloo, kNccl };
  // NCCL's all-reduce algorithm (NCCL picks per call by size and topology;
  // the analysis cannot see its choice, so the model takes one).
  enum class NcclAllReduce : uint8_t { kRing, kTree };

  struct Flow {
    uint32_t src = 0;
    uint32_t dst = 0;
    uint64_t bytes = 0;
    uint32_t messages = 0;
  };

  TrafficModel() = default;
  explicit TrafficModel(NcclAllReduce nccl_all_reduce) : nccl_all_reduce_(nccl_all_reduce) {}

  // The backend of `rank`'s host collectives: NCCL for a rank on a CUDA
  // device, gloo otherwise (the default).
  void SetRankBackend(uint32_t rank, Backend backend);
  Backend RankBackend(uint32_t rank) const;
  // Hello.device -> backend: "cuda..." is NCCL, anything else gloo.
  static Backend BackendOfDevice(absl::string_view device);
  static const char* BackendName(Backend backend);

  // The flows of one collective of `kind` (not SEND/RECV: those are exact).
  void Collective(Backend backend, trainscope::v1::CollectiveKind kind,
                  absl::Span<const uint32_t> members, uint64_t bytes, size_t root,
                  std::vector<Flow>* out) const;

  // Where a link's ends live; UNSPECIFIED when either host is unknown ("").
  // Two ranks share a device when they name the same non-CPU device on one
  // host.
  static trainscope::v1::LinkLocality Locality(absl::string_view src_host,
                                               absl::string_view src_device,
                                               absl::string_view dst_host,
                                               absl::string_view dst_device);

 private:
  NcclAllReduce nccl_all_reduce_ = NcclAllReduce::kRing;
  std::vector<Backend> rank_backends_;  // by rank; missing: gloo
};

}  // namespace trainscope::collector

#endif  // TRAINSCOPE_COLLECTOR_ANALYSIS_TRAFFIC_MODEL_H_
