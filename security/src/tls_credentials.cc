#include "trainscope/security/tls_credentials.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "trainscope/base/status_macros.h"
#include "trainscope/security/pem_file.h"

namespace trainscope::security {

absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> MakeServerCredentials(
    const TlsServerConfig& config) {
  if (!config.enabled()) return grpc::InsecureServerCredentials();
  if (config.cert_file.empty() || config.key_file.empty()) {
    return absl::InvalidArgumentError(
        "--tls-cert and --tls-key go together: TLS needs the collector's certificate and its "
        "private key (--tls-client-ca adds mutual TLS on top of them)");
  }
  grpc::SslServerCredentialsOptions options(GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE);
  grpc::SslServerCredentialsOptions::PemKeyCertPair pair;
  ASSIGN_OR_RETURN(pair.cert_chain,
                   ReadPemFile(config.cert_file, "--tls-cert", PemKind::kCertificate));
  ASSIGN_OR_RETURN(pair.private_key,
                   ReadPemFile(config.key_file, "--tls-key", PemKind::kPrivateKey));
  options.pem_key_cert_pairs.push_back(std::move(pair));
  if (config.mutual()) {
    ASSIGN_OR_RETURN(options.pem_root_certs,
                     ReadPemFile(config.client_ca_file, "--tls-client-ca", PemKind::kCertificate));
    options.client_certificate_request =
        GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY;
  }
  return grpc::SslServerCredentials(options);
}

absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> MakeChannelCredentials(
    const TlsClientConfig& config, grpc::ChannelArguments* args) {
  if (!config.enabled()) return grpc::InsecureChannelCredentials();
  if (config.cert_file.empty() != config.key_file.empty()) {
    return absl::InvalidArgumentError(
        "--tls-cert and --tls-key (TRAINSCOPE_TLS_CERT, TRAINSCOPE_TLS_KEY) go together: mutual "
        "TLS needs this client's certificate and its private key");
  }
  grpc::SslCredentialsOptions options;
  if (!config.ca_file.empty()) {
    ASSIGN_OR_RETURN(options.pem_root_certs, ReadPemFile(config.ca_file, "--tls-ca (TRAINSCOPE_TLS_CA)",
                                                         PemKind::kCertificate));
  }
  if (!config.cert_file.empty()) {
    ASSIGN_OR_RETURN(options.pem_cert_chain,
                     ReadPemFile(config.cert_file, "--tls-cert (TRAINSCOPE_TLS_CERT)",
                                 PemKind::kCertificate));
    ASSIGN_OR_RETURN(options.pem_private_key,
                     ReadPemFile(config.key_file, "--tls-key (TRAINSCOPE_TLS_KEY)",
                                 PemKind::kPrivateKey));
  }
  if (!config.server_name.empty() && args != nullptr) {
    args->SetSslTargetNameOverride(config.server_name);
  }
  return grpc::SslCredentials(options);
}

}  // namespace trainscope::security
