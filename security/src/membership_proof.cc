#include "trainscope/security/membership_proof.h"

#include <openssl/crypto.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace trainscope::security {
namespace {

// Versioned so that a later proof cannot collide with this one, and apart
// from the job secret's own context (job_key.cc).
constexpr absl::string_view kProofContext = "trainscope membership proof v1\n";

}  // namespace

absl::StatusOr<std::string> MembershipProof::NewNonce() {
  std::string nonce(kNonceBytes, '\0');
  if (RAND_bytes(reinterpret_cast<unsigned char*>(nonce.data()), kNonceBytes) != 1) {
    return absl::InternalError("cannot draw a membership challenge nonce (OpenSSL RAND_bytes)");
  }
  return nonce;
}

std::string MembershipProof::Compute(absl::string_view secret, absl::string_view nonce,
                                     const Claim& claim) {
  const std::string message =
      absl::StrCat(kProofContext, nonce, claim.job_id, "\n", claim.rank, "\n", claim.restart_count,
                   "\n", claim.agent_instance_id, "\n");
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  HMAC(EVP_sha256(), secret.data(), static_cast<int>(secret.size()),
       reinterpret_cast<const unsigned char*>(message.data()), message.size(), digest, &length);
  return std::string(reinterpret_cast<char*>(digest), length);
}

bool MembershipProof::Verify(absl::string_view secret, absl::string_view nonce, const Claim& claim,
                             absl::string_view proof) {
  if (nonce.size() != kNonceBytes || proof.size() != kProofBytes) return false;
  const std::string expected = Compute(secret, nonce, claim);
  return CRYPTO_memcmp(expected.data(), proof.data(), kProofBytes) == 0;
}

}  // namespace trainscope::security
