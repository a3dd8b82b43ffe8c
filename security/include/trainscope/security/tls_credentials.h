// TLS for trainscope's gRPC ports: the collector's server credentials (TLS,
// or mutual TLS when a client CA is given) and the agents' and front ends'
// channel credentials, built from PEM files checked up front.
//
// Usage (collector):
//   TlsServerConfig tls{.cert_file = "server.pem", .key_file = "server.key",
//                       .client_ca_file = "clients-ca.pem"};   // mutual TLS
//   ASSIGN_OR_RETURN(auto creds, MakeServerCredentials(tls));  // insecure when !tls.enabled()
//   builder.AddListeningPort(address, creds);
// Usage (client):
//   TlsClientConfig tls{.ca_file = "ca.pem", .cert_file = "me.pem", .key_file = "me.key"};
//   grpc::ChannelArguments args;
//   ASSIGN_OR_RETURN(auto creds, MakeChannelCredentials(tls, &args));
//   grpc::CreateCustomChannel(target, creds, args);
//
// Errors name the flag (server: --tls-cert, --tls-key, --tls-client-ca;
// client: --tls-ca, --tls-cert, --tls-key and their TRAINSCOPE_TLS_*
// variables) and what was expected.
//
// Threading: free functions over plain values.
#ifndef TRAINSCOPE_SECURITY_TLS_CREDENTIALS_H_
#define TRAINSCOPE_SECURITY_TLS_CREDENTIALS_H_

#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>

#include "absl/status/statusor.h"

namespace trainscope::security {

struct TlsServerConfig {
  std::string cert_file;       // --tls-cert: the collector's certificate chain (PEM)
  std::string key_file;        // --tls-key: its private key (PEM)
  std::string client_ca_file;  // --tls-client-ca: set: clients must show a certificate it signed

  bool enabled() const { return !cert_file.empty() || !key_file.empty() || !client_ca_file.empty(); }
  bool mutual() const { return !client_ca_file.empty(); }
};

struct TlsClientConfig {
  std::string ca_file;      // --tls-ca / TRAINSCOPE_TLS_CA: the CA that signed the collector's
                            // certificate; empty with cert or key: the system's roots
  std::string cert_file;    // --tls-cert / TRAINSCOPE_TLS_CERT: this client's chain (mutual TLS)
  std::string key_file;     // --tls-key / TRAINSCOPE_TLS_KEY: its private key
  std::string server_name;  // --tls-server-name / TRAINSCOPE_TLS_SERVER_NAME: the name to
                            // check the collector's certificate against, when the address
                            // is not that name (an IP, a Kubernetes Service alias)

  bool enabled() const {
    return !ca_file.empty() || !cert_file.empty() || !key_file.empty() || !server_name.empty();
  }
};

// Insecure credentials when !config.enabled(); else TLS (cert and key both
// required), mutual when client_ca_file is set (a client without a
// certificate that CA signed is refused during the handshake).
absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> MakeServerCredentials(
    const TlsServerConfig& config);

// Insecure credentials when !config.enabled(); else TLS, with this client's
// certificate when cert_file is set (key_file then required, and the other
// way round). Sets the target name override in `args` for server_name.
absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> MakeChannelCredentials(
    const TlsClientConfig& config, grpc::ChannelArguments* args);

}  // namespace trainscope::security

#endif  // TRAINSCOPE_SECURITY_TLS_CREDENTIALS_H_
