// Proof that a rank holds its job's secret without sending the secret: the
// collector sends a fresh random nonce on the stream (MembershipChallenge),
// the agent answers with an HMAC-SHA256 under the secret over that nonce and
// the identity the Hello claimed (MembershipProof), and the collector
// recomputes it. Whoever reads the stream, or a process that poses as the
// collector on a wrong address, learns only a proof for one nonce and one
// stream identity: a replayed proof fails under the next stream's nonce, and
// a proof for one job, rank or incarnation does not open another.
//
// Usage:
//   // collector, per stream
//   std::string nonce = MembershipProof::NewNonce().value();
//   ... send nonce, receive proof ...
//   MembershipProof::Claim claim{hello.job_id(), hello.rank(), hello.restart_count(),
//                                hello.agent_instance_id()};
//   bool member = MembershipProof::Verify(key.JobSecret(claim.job_id), nonce, claim, proof);
//   // agent
//   std::string proof = MembershipProof::Compute(secret, nonce, claim);
//
// What is signed: "trainscope membership proof v1\n", the nonce (kNonceBytes
// raw bytes), then job id, rank, restart count and agent instance id, each
// followed by a newline (a job id never holds one: hello_validator.cc).
// The secret is the job's secret as the ranks hold it (64 hex digits,
// JobKey::JobSecret), used as the HMAC key byte for byte.
//
// Threading: stateless.
#ifndef TRAINSCOPE_SECURITY_MEMBERSHIP_PROOF_H_
#define TRAINSCOPE_SECURITY_MEMBERSHIP_PROOF_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace trainscope::security {

class MembershipProof {
 public:
  static constexpr size_t kNonceBytes = 32;
  static constexpr size_t kProofBytes = 32;  // SHA-256

  // What the proof binds the secret to: the stream the Hello opens.
  struct Claim {
    std::string job_id;
    uint32_t rank = 0;
    uint32_t restart_count = 0;
    uint64_t agent_instance_id = 0;
  };

  // kNonceBytes from OpenSSL's RAND_bytes; INTERNAL when it fails.
  static absl::StatusOr<std::string> NewNonce();

  // The kProofBytes raw HMAC bytes.
  static std::string Compute(absl::string_view secret, absl::string_view nonce, const Claim& claim);

  // Whether `proof` is Compute(secret, nonce, claim), compared in time that
  // does not depend on where it differs. False for a nonce of the wrong size
  // (nothing may be proven over an empty or short challenge).
  static bool Verify(absl::string_view secret, absl::string_view nonce, const Claim& claim,
                     absl::string_view proof);
};

}  // namespace trainscope::security

#endif  // TRAINSCOPE_SECURITY_MEMBERSHIP_PROOF_H_
