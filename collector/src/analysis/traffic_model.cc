#include "trainscope/collector/analysis/traffic_model.h"

#include "absl/strings/match.h"

namespace trainscope::collector {
namespace {

namespace v1 = ::trainscope::v1;
using Flow = TrafficModel::Flow;

// round(numerator * bytes / denominator) without overflowing for any
// realistic buffer (bytes < 2^50, numerator < 2^12).
uint64_t Share(uint64_t bytes, uint64_t numerator, uint64_t denominator) {
  const unsigned __int128 v = static_cast<unsigned __int128>(bytes) * numerator;
  return static_cast<uint64_t>((v + denominator / 2) / denominator);
}

// Each member sends to the member `direction` (+1 right, -1 left) places
// along the ring of group ranks.
void Ring(absl::Span<const uint32_t> m, int direction, uint64_t bytes, uint32_t messages,
          std::vector<Flow>* out) {
  const size_t n = m.size();
  for (size_t i = 0; i < n; ++i) {
    const size_t next = direction > 0 ? (i + 1) % n : (i + n - 1) % n;
    out->push_back(Flow{m[i], m[next], bytes, messages});
  }
}

// A chain along the ring that starts at `first` and visits every member
// once: first -> first+1 -> ... (n-1 edges), each carrying `bytes`.
void Chain(absl::Span<const uint32_t> m, size_t first, uint64_t bytes, std::vector<Flow>* out) {
  const size_t n = m.size();
  for (size_t k = 0; k + 1 < n; ++k) {
    out->push_back(Flow{m[(first + k) % n], m[(first + k + 1) % n], bytes, 1});
  }
}

// gloo/broadcast.cc: a binomial tree rooted at `root`, in virtual ranks
// (rank - root) mod n; in round i, every virtual rank below 2^i that has
// the data sends it to its partner with bit i set.
void BinomialTree(absl::Span<const uint32_t> m, size_t root, uint64_t bytes,
                  std::vector<Flow>* out) {
  const size_t n = m.size();
  for (size_t bit = 1; bit < n; bit <<= 1) {
    for (size_t vrank = 0; vrank < bit; ++vrank) {
      const size_t vpeer = vrank | bit;
      if (vpeer >= n) continue;
      out->push_back(Flow{m[(vrank + root) % n], m[(vpeer + root) % n], bytes, 1});
    }
  }
}

// Every member sends `bytes` to every other one in one message.
void AllPairs(absl::Span<const uint32_t> m, uint64_t bytes, std::vector<Flow>* out) {
  for (uint32_t src : m) {
    for (uint32_t dst : m) {
      if (src != dst) out->push_back(Flow{src, dst, bytes, 1});
    }
  }
}

bool PowerOfTwo(size_t n) { return n > 0 && (n & (n - 1)) == 0; }

void Gloo(v1::CollectiveKind kind, absl::Span<const uint32_t> m, uint64_t s, size_t root,
          std::vector<Flow>* out) {
  const uint64_t n = m.size();
  switch (kind) {
    case v1::COLLECTIVE_KIND_ALL_REDUCE:
      // gloo/allreduce.cc ring: reduce-scatter then all-gather, each rank
      // sending to rank - 1, (n-1) chunks of s/n in each half.
      Ring(m, -1, Share(s, 2 * (n - 1), n), static_cast<uint32_t>(2 * (n - 1)), out);
      return;
    case v1::COLLECTIVE_KIND_ALL_GATHER:
      // gloo/allgather.cc: each rank forwards the n-1 other contributions
      // (s each) to rank + 1, every block in two halves.
      Ring(m, +1, (n - 1) * s, static_cast<uint32_t>(2 * (n - 1)), out);
      return;
    case v1::COLLECTIVE_KIND_REDUCE_SCATTER:
      // ProcessGroupGloo: gloo's halving-doubling reduce-scatter; s is the
      // rank's output chunk, the buffer n*s. Round k exchanges n*s/2^(k+1)
      // with the rank n/2^(k+1) virtual places away.
      if (PowerOfTwo(n)) {
        uint64_t half = n * s;
        for (size_t distance = n / 2; distance >= 1; distance /= 2) {
          half /= 2;
          for (size_t i = 0; i < n; ++i) out->push_back(Flow{m[i], m[i ^ distance], half, 1});
        }
        return;
      }
      // Not a power of two: the ring's volume (docs/traffic.md).
      Ring(m, +1, (n - 1) * s, static_cast<uint32_t>(n - 1), out);
      return;
    case v1::COLLECTIVE_KIND_BROADCAST:
      BinomialTree(m, root, s, out);
      return;
    case v1::COLLECTIVE_KIND_REDUCE: {
      // gloo/reduce.cc: a ring reduce-scatter towards rank - 1, then every
      // other rank sends its reduced chunk (s/n) to the root.
      const size_t first = out->size();
      Ring(m, -1, Share(s, n - 1, n), static_cast<uint32_t>(n - 1), out);
      for (size_t i = 0; i < n; ++i) {
        if (i == root) continue;
        const uint64_t chunk = Share(s, 1, n);
        if ((i + n - 1) % n == root) {  // the ring already links i -> root
          Flow& f = (*out)[first + i];
          f.bytes += chunk;
          ++f.messages;
        } else {
          out->push_back(Flow{m[i], m[root], chunk, 1});
        }
      }
      return;
    }
    case v1::COLLECTIVE_KIND_BARRIER:
      // gloo/barrier.cc: a dissemination barrier, rank -> rank + d for
      // d = 1, 2, 4, ... < n, empty messages.
      for (size_t d = 1; d < n; d <<= 1) {
        for (size_t i = 0; i < n; ++i) out->push_back(Flow{m[i], m[(i + d) % n], 0, 1});
      }
      return;
    case v1::COLLECTIVE_KIND_ALL_TO_ALL:
      AllPairs(m, Share(s, 1, n), out);  // gloo/alltoall.cc: s/n to each rank
      return;
    case v1::COLLECTIVE_KIND_GATHER:
      for (size_t i = 0; i < n; ++i) {
        if (i != root) out->push_back(Flow{m[i], m[root], s, 1});
      }
      return;
    case v1::COLLECTIVE_KIND_SCATTER:
      for (size_t i = 0; i < n; ++i) {
        if (i != root) out->push_back(Flow{m[root], m[i], s, 1});
      }
      return;
    default:
      return;
  }
}

// NCCL's tree all-reduce, as one binary tree over the group ranks (parent
// of i is (i-1)/2): the buffer reduces up every edge and broadcasts down it.
void BinaryTreeAllReduce(absl::Span<const uint32_t> m, uint64_t s, std::vector<Flow>* out) {
  for (size_t i = 1; i < m.size(); ++i) {
    const size_t parent = (i - 1) / 2;
    out->push_back(Flow{m[i], m[parent], s, 1});
    out->push_back(Flow{m[parent], m[i], s, 1});
  }
}

void Nccl(TrafficModel::NcclAllReduce all_reduce, v1::CollectiveKind kind,
          absl::Span<const uint32_t> m, uint64_t s, size_t root, std::vector<Flow>* out) {
  const uint64_t n = m.size();
  switch (kind) {
    case v1::COLLECTIVE_KIND_BARRIER:
      // ProcessGroupNCCL::barrier all-reduces a one-element tensor.
    case v1::COLLECTIVE_KIND_ALL_REDUCE:
      if (all_reduce == TrafficModel::NcclAllReduce::kTree) {
        BinaryTreeAllReduce(m, s, out);
        return;
      }
      // Ring: reduce-scatter then all-gather, each n-1 steps of s/n to the
      // next rank (nccl-tests' PERFORMANCE.md: 2(n-1)/n of the buffer).
      Ring(m, +1, Share(s, 2 * (n - 1), n), static_cast<uint32_t>(2 * (n - 1)), out);
      return;
    case v1::COLLECTIVE_KIND_ALL_GATHER:
    case v1::COLLECTIVE_KIND_REDUCE_SCATTER:
      // Ring, n-1 steps of one rank's chunk s to the next rank.
      Ring(m, +1, (n - 1) * s, static_cast<uint32_t>(n - 1), out);
      return;
    case v1::COLLECTIVE_KIND_BROADCAST:
      Chain(m, root, s, out);  // a pipelined chain from the root
      return;
    case v1::COLLECTIVE_KIND_REDUCE:
      Chain(m, (root + 1) % n, s, out);  // a pipelined chain ending at the root
      return;
    case v1::COLLECTIVE_KIND_ALL_TO_ALL:
      AllPairs(m, Share(s, 1, n), out);  // grouped send/recv, s/n to each rank
      return;
    case v1::COLLECTIVE_KIND_GATHER:
    case v1::COLLECTIVE_KIND_SCATTER:
      // PyTorch runs them as grouped send/recv with the root: as gloo's.
      Gloo(kind, m, s, root, out);
      return;
    default:
      return;
  }
}

}  // namespace

void TrafficModel::SetRankBackend(uint32_t rank, Backend backend) {
  if (rank >= rank_backends_.size()) rank_backends_.resize(rank + 1, Backend::kGloo);
  rank_backends_[rank] = backend;
}

TrafficModel::Backend TrafficModel::RankBackend(uint32_t rank) const {
  return rank < rank_backends_.size() ? rank_backends_[rank] : Backend::kGloo;
}

TrafficModel::Backend TrafficModel::BackendOfDevice(absl::string_view device) {
  return absl::StartsWith(device, "cuda") ? Backend::kNccl : Backend::kGloo;
}

const char* TrafficModel::BackendName(Backend backend) {
  return backend == Backend::kNccl ? "nccl" : "gloo";
}

void TrafficModel::Collective(Backend backend, v1::CollectiveKind kind,
                              absl::Span<const uint32_t> members, uint64_t bytes, size_t root,
                              std::vector<Flow>* out) const {
  if (members.size() < 2) return;
  if (root >= members.size()) root = 0;
  if (backend == Backend::kNccl) {
    Nccl(nccl_all_reduce_, kind, members, bytes, root, out);
  } else {
    Gloo(kind, members, bytes, root, out);
  }
}

v1::LinkLocality TrafficModel::Locality(absl::string_view src_host, absl::string_view src_device,
                                        absl::string_view dst_host, absl::string_view dst_device) {
  if (src_host.empty() || dst_host.empty()) return v1::LINK_LOCALITY_UNSPECIFIED;
  if (src_host != dst_host) return v1::LINK_LOCALITY_CROSS_HOST;
  if (src_device == dst_device && !src_device.empty() && src_device != "cpu") {
    return v1::LINK_LOCALITY_SAME_DEVICE;
  }
  return v1::LINK_LOCALITY_SAME_HOST;
}

}  // namespace trainscope::collector
