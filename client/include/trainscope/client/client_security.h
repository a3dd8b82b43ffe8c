// How a front end (the CLI, the viewer) proves itself to a collector that
// requires it and encrypts what it reads (docs/security.md): TLS or mutual
// TLS on the Commands service, the collector's read token, CURVE on the feed
// and snapshot ports. Resolved flag > environment variable, the files read
// and checked up front so that a wrong path fails with its flag's name.
//
//   --tls-ca FILE            TRAINSCOPE_TLS_CA           the CA of the collector's certificate
//   --tls-cert FILE          TRAINSCOPE_TLS_CERT         this client's certificate (mutual TLS)
//   --tls-key FILE           TRAINSCOPE_TLS_KEY          its private key
//   --tls-server-name NAME   TRAINSCOPE_TLS_SERVER_NAME  the name the certificate carries
//   --read-token-file FILE   TRAINSCOPE_READ_TOKEN_FILE  the collector's read token
//   --curve-server-key KEY   TRAINSCOPE_CURVE_SERVER_KEY the collector's CURVE public key
//                                                        (Z85, or a file holding it)
//   --curve-key FILE         TRAINSCOPE_CURVE_KEY        this client's CURVE secret key file
//                                                        (default: a fresh key per run)
//
// Usage:
//   ClientSecurity::AddFlags(&parser);        // ConnectionOptions::AddFlags does it
//   ASSIGN_OR_RETURN(ClientSecurity security, ClientSecurity::Resolve(args, env));
//   CommandsClient client(target, timeout, security);
//
// Threading: a plain value (the credentials it holds are thread-safe).
#ifndef TRAINSCOPE_CLIENT_CLIENT_SECURITY_H_
#define TRAINSCOPE_CLIENT_CLIENT_SECURITY_H_

#include <grpcpp/grpcpp.h>

#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "trainscope/base/arg_parser.h"
#include "trainscope/client/environment.h"
#include "trainscope/security/curve_keys.h"
#include "trainscope/security/tls_credentials.h"

namespace trainscope::client {

struct ClientSecurity {
  security::TlsClientConfig tls;  // the paths, for messages
  // Built from `tls` by Resolve; null: plaintext gRPC.
  std::shared_ptr<grpc::ChannelCredentials> grpc_credentials;
  std::string read_token;  // sent as "trainscope-read-token" metadata when set
  std::string curve_server_key;  // Z85; empty: no CURVE on the ZeroMQ sockets
  std::optional<security::CurveKeyPair> curve_client;  // set whenever curve_server_key is

  static void AddFlags(base::ArgParser* parser);
  static absl::StatusOr<ClientSecurity> Resolve(const base::ParsedArgs& args, const EnvLookup& env);

  // Channel credentials for a gRPC channel (plaintext when none), with the
  // server name override put into `arguments`.
  std::shared_ptr<grpc::ChannelCredentials> ChannelCredentials(
      grpc::ChannelArguments* arguments) const;
};

}  // namespace trainscope::client

#endif  // TRAINSCOPE_CLIENT_CLIENT_SECURITY_H_
