#include "trainscope/client/client_security.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "trainscope/base/status_macros.h"

namespace trainscope::client {
namespace {

std::string FlagOrEnv(const base::ParsedArgs& args, const EnvLookup& env, const char* flag,
                      const char* variable) {
  if (std::optional<std::string> value = args.Value(flag); value.has_value()) return *value;
  if (std::optional<std::string> value = env(variable); value.has_value()) return *value;
  return "";
}

absl::StatusOr<std::string> ReadToken(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    return absl::InvalidArgumentError(absl::StrCat("--read-token-file (TRAINSCOPE_READ_TOKEN_FILE): cannot read '",
                                                   path, "': ", std::strerror(errno)));
  }
  std::ostringstream contents;
  contents << in.rdbuf();
  std::string token(absl::StripAsciiWhitespace(contents.str()));
  if (token.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--read-token-file (TRAINSCOPE_READ_TOKEN_FILE): '", path, "' is empty; expected the "
        "collector's read token"));
  }
  return token;
}

}  // namespace

void ClientSecurity::AddFlags(base::ArgParser* parser) {
  parser->AddFlag("tls-ca", "FILE",
                  "TLS: the CA that signed the collector's certificate (env TRAINSCOPE_TLS_CA)");
  parser->AddFlag("tls-cert", "FILE",
                  "mutual TLS: this client's certificate (env TRAINSCOPE_TLS_CERT)");
  parser->AddFlag("tls-key", "FILE", "mutual TLS: its private key (env TRAINSCOPE_TLS_KEY)");
  parser->AddFlag("tls-server-name", "NAME",
                  "TLS: the name in the collector's certificate, when --collector is not that "
                  "name (env TRAINSCOPE_TLS_SERVER_NAME)");
  parser->AddFlag("read-token-file", "FILE",
                  "the collector's read token (env TRAINSCOPE_READ_TOKEN_FILE)");
  parser->AddFlag("curve-server-key", "KEY",
                  "CURVE on the feed and snapshots: the collector's public key, or a file "
                  "holding it (env TRAINSCOPE_CURVE_SERVER_KEY)");
  parser->AddFlag("curve-key", "FILE",
                  "CURVE: this client's secret key file, one the collector lists (env "
                  "TRAINSCOPE_CURVE_KEY; default: a fresh key)");
}

absl::StatusOr<ClientSecurity> ClientSecurity::Resolve(const base::ParsedArgs& args,
                                                       const EnvLookup& env) {
  ClientSecurity security;
  security.tls.ca_file = FlagOrEnv(args, env, "tls-ca", "TRAINSCOPE_TLS_CA");
  security.tls.cert_file = FlagOrEnv(args, env, "tls-cert", "TRAINSCOPE_TLS_CERT");
  security.tls.key_file = FlagOrEnv(args, env, "tls-key", "TRAINSCOPE_TLS_KEY");
  security.tls.server_name = FlagOrEnv(args, env, "tls-server-name", "TRAINSCOPE_TLS_SERVER_NAME");
  if (security.tls.enabled()) {
    // The override goes into each channel's arguments (ChannelCredentials).
    ASSIGN_OR_RETURN(security.grpc_credentials,
                     security::MakeChannelCredentials(security.tls, /*args=*/nullptr));
  }
  if (const std::string path = FlagOrEnv(args, env, "read-token-file", "TRAINSCOPE_READ_TOKEN_FILE");
      !path.empty()) {
    ASSIGN_OR_RETURN(security.read_token, ReadToken(path));
  }
  const std::string server_key =
      FlagOrEnv(args, env, "curve-server-key", "TRAINSCOPE_CURVE_SERVER_KEY");
  const std::string client_key = FlagOrEnv(args, env, "curve-key", "TRAINSCOPE_CURVE_KEY");
  if (!server_key.empty()) {
    ASSIGN_OR_RETURN(security.curve_server_key,
                     security::ParseCurvePublicKey(
                         server_key, "--curve-server-key (TRAINSCOPE_CURVE_SERVER_KEY)"));
    if (client_key.empty()) {
      ASSIGN_OR_RETURN(security.curve_client, security::GenerateCurveKeyPair());
    } else {
      ASSIGN_OR_RETURN(security.curve_client,
                       security::LoadCurveSecretKeyFile(client_key,
                                                        "--curve-key (TRAINSCOPE_CURVE_KEY)"));
    }
  } else if (!client_key.empty()) {
    return absl::InvalidArgumentError(
        "--curve-key (TRAINSCOPE_CURVE_KEY) needs --curve-server-key "
        "(TRAINSCOPE_CURVE_SERVER_KEY): CURVE needs the collector's public key");
  }
  return security;
}

std::shared_ptr<grpc::ChannelCredentials> ClientSecurity::ChannelCredentials(
    grpc::ChannelArguments* arguments) const {
  if (grpc_credentials == nullptr) return grpc::InsecureChannelCredentials();
  if (!tls.server_name.empty()) arguments->SetSslTargetNameOverride(tls.server_name);
  return grpc_credentials;
}

}  // namespace trainscope::client
