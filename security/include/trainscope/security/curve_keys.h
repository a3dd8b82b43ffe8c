// CURVE keys for trainscope's ZeroMQ ports (the live feed and the snapshot
// server): generating them, and reading the key files the collector and the
// clients are given, with errors that name the flag and what was expected.
//
// Keys are Z85 text, 40 characters (ZeroMQ's own encoding of the 32-byte
// Curve25519 keys). Files hold one key per line; lines starting with "# "
// are comments (a space is not a Z85 character, so no key starts so).
//   secret key file (--curve-secret-key, --curve-key): one secret key; the
//     public key is derived from it.
//   public key (--curve-server-key): the key itself, or a file holding it.
//   client list (--curve-client-keys): the public keys allowed to connect.
//
// Usage:
//   ASSIGN_OR_RETURN(CurveKeyPair server, LoadCurveSecretKeyFile(path, "--curve-secret-key"));
//   socket.set(zmq::sockopt::curve_server, 1);
//   socket.set(zmq::sockopt::curve_secretkey, server.secret_key);
//
// Threading: free functions over plain values.
#ifndef TRAINSCOPE_SECURITY_CURVE_KEYS_H_
#define TRAINSCOPE_SECURITY_CURVE_KEYS_H_

#include <set>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace trainscope::security {

inline constexpr size_t kCurveKeyZ85Length = 40;
inline constexpr size_t kCurveKeyBinaryLength = 32;

struct CurveKeyPair {
  std::string public_key;  // Z85
  std::string secret_key;  // Z85
};

// A fresh pair from libzmq (zmq_curve_keypair); fails only where libzmq was
// built without CURVE.
absl::StatusOr<CurveKeyPair> GenerateCurveKeyPair();

// Reads a secret key file and derives the public key.
absl::StatusOr<CurveKeyPair> LoadCurveSecretKeyFile(const std::string& path,
                                                    absl::string_view label);

// `value` is a Z85 public key, or the path of a file holding one.
absl::StatusOr<std::string> ParseCurvePublicKey(const std::string& value, absl::string_view label);

// Reads a list of public keys (at least one).
absl::StatusOr<std::set<std::string>> LoadCurvePublicKeyList(const std::string& path,
                                                            absl::string_view label);

// Writes PREFIX.key (the secret key, mode 0600, the public key in a comment)
// and PREFIX.pub (the public key), each atomically; refuses to overwrite.
absl::Status WriteCurveKeyPair(const CurveKeyPair& pair, const std::string& prefix);

// The Z85 text of a 32-byte binary key (as ZAP hands clients' keys over).
std::string CurveKeyToZ85(absl::string_view binary_key);

}  // namespace trainscope::security

#endif  // TRAINSCOPE_SECURITY_CURVE_KEYS_H_
