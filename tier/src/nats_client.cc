#include "trainscope/tier/nats_client.h"

#include <cstdio>
#include <filesystem>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "trainscope/security/pem_file.h"

namespace trainscope::tier {

std::string UrlWithoutCredentials(absl::string_view url) {
  const size_t scheme = url.find("://");
  const size_t start = scheme == absl::string_view::npos ? 0 : scheme + 3;
  const size_t at = url.find('@', start);
  const size_t slash = url.find('/', start);
  if (at == absl::string_view::npos || (slash != absl::string_view::npos && slash < at)) {
    return std::string(url);
  }
  return absl::StrCat(url.substr(0, start), url.substr(at + 1));
}

absl::Status NatsError(natsStatus status, absl::string_view what) {
  natsStatus last = NATS_OK;
  const char* last_error = nats_GetLastError(&last);
  absl::string_view detail = last_error != nullptr ? last_error : "";
  // The library puts where it failed first, "(conn.c:1905): ": not for users.
  if (absl::StartsWith(detail, "(")) {
    if (const size_t end = detail.find("): "); end != absl::string_view::npos) {
      detail.remove_prefix(end + 3);
    }
  }
  std::string text = absl::StrCat(what, ": ", natsStatus_GetText(status));
  if (!detail.empty() && !absl::StrContains(text, detail))
    absl::StrAppend(&text, " (", detail, ")");
  return absl::UnavailableError(text);
}

absl::Status ValidateNatsConfig(const NatsConfig& config, absl::string_view url_flag) {
  if (!absl::StartsWith(config.url, "nats://") && !absl::StartsWith(config.url, "tls://")) {
    return absl::InvalidArgumentError(
        absl::StrCat(url_flag, ": '", UrlWithoutCredentials(config.url),
                     "' is not a NATS URL; expected nats://HOST:PORT or "
                     "tls://HOST:PORT"));
  }
  auto readable = [](const std::string& path, absl::string_view flag) -> absl::Status {
    if (path.empty()) return absl::OkStatus();
    std::FILE* f = std::fopen(path.c_str(), "rb");
    if (f == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat(flag, ": cannot read '", path, "'; expected a readable file"));
    }
    std::fclose(f);
    return absl::OkStatus();
  };
  if (absl::Status s = readable(config.tls_ca, "--nats-tls-ca"); !s.ok()) return s;
  if (absl::Status s = readable(config.tls_cert, "--nats-tls-cert"); !s.ok()) return s;
  // An expired certificate is named here with its date: the server would
  // only close the connection, which reads as "cannot reach NATS".
  if (!config.tls_cert.empty()) {
    absl::StatusOr<std::string> cert =
        security::ReadPemFile(config.tls_cert, "--nats-tls-cert", security::PemKind::kCertificate);
    if (!cert.ok()) return cert.status();
  }
  if (absl::Status s = readable(config.tls_key, "--nats-tls-key"); !s.ok()) return s;
  if (absl::Status s = readable(config.creds, "--nats-creds"); !s.ok()) return s;
  if (config.tls_cert.empty() != config.tls_key.empty()) {
    return absl::InvalidArgumentError(
        "--nats-tls-cert and --nats-tls-key: give both (this client's certificate and its key) "
        "or neither");
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<NatsClient>> NatsClient::Connect(const NatsConfig& config,
                                                                jsPubAckErrHandler publish_error,
                                                                void* closure) {
  std::unique_ptr<NatsClient> client(new NatsClient(config));
  natsOptions* opts = nullptr;
  natsStatus s = natsOptions_Create(&opts);
  const std::string what = absl::StrCat("NATS at ", UrlWithoutCredentials(config.url));
  const int64_t timeout_ms = absl::ToInt64Milliseconds(config.timeout);
  if (s == NATS_OK) s = natsOptions_SetURL(opts, config.url.c_str());
  if (s == NATS_OK && !config.name.empty()) s = natsOptions_SetName(opts, config.name.c_str());
  if (s == NATS_OK) s = natsOptions_SetTimeout(opts, timeout_ms);
  // Once connected, never give up: the node keeps buffering meanwhile.
  if (s == NATS_OK) s = natsOptions_SetMaxReconnect(opts, -1);
  if (s == NATS_OK) s = natsOptions_SetReconnectWait(opts, 250);
  if (s == NATS_OK) s = natsOptions_SetPingInterval(opts, 2000);
  if (s == NATS_OK) s = natsOptions_SetMaxPingsOut(opts, 2);
  const bool tls =
      absl::StartsWith(config.url, "tls://") || !config.tls_ca.empty() || !config.tls_cert.empty();
  if (s == NATS_OK && tls) s = natsOptions_SetSecure(opts, true);
  if (s == NATS_OK && !config.tls_ca.empty()) {
    s = natsOptions_LoadCATrustedCertificates(opts, config.tls_ca.c_str());
  }
  if (s == NATS_OK && !config.tls_cert.empty()) {
    s = natsOptions_LoadCertificatesChain(opts, config.tls_cert.c_str(), config.tls_key.c_str());
  }
  if (s == NATS_OK && !config.creds.empty()) {
    s = natsOptions_SetUserCredentialsFromFiles(opts, config.creds.c_str(), nullptr);
  }
  if (s != NATS_OK) {
    natsOptions_Destroy(opts);
    return NatsError(s, absl::StrCat(what, ": bad connection options"));
  }
  s = natsConnection_Connect(&client->nc_, opts);
  natsOptions_Destroy(opts);
  if (s != NATS_OK) {
    absl::Status error = NatsError(s, absl::StrCat("cannot reach ", what));
    if (s == NATS_NO_SERVER || s == NATS_TIMEOUT) return error;
    if (s == NATS_CONNECTION_AUTH_FAILED || s == NATS_NOT_PERMITTED) {
      // The server said who may connect: name the credentials, not the network.
      const bool in_url = UrlWithoutCredentials(config.url) != config.url;
      std::string given;
      if (in_url) given = "the user or token in the URL";
      if (!config.creds.empty()) {
        absl::StrAppend(&given, given.empty() ? "" : " and ", "--nats-creds ", config.creds);
      }
      return absl::UnauthenticatedError(absl::StrCat(
          what, " refused this client (",
          NatsError(s, "NATS").message().substr(sizeof("NATS: ") - 1), "): ",
          given.empty() ? "it requires credentials and none were given"
                        : absl::StrCat(given, " was not accepted"),
          "; give a user and password or a token it accepts in the URL "
          "(nats://USER:PASSWORD@HOST:PORT or nats://TOKEN@HOST:PORT) or --nats-creds FILE"));
    }
    // Something answered and the handshake failed: say what it may want.
    return absl::UnavailableError(absl::StrCat(
        error.message(),
        "; the server answered but the connection failed: it may require TLS "
        "(--nats-tls-ca), a client certificate it trusts (--nats-tls-cert, --nats-tls-key) or "
        "credentials (--nats-creds)",
        tls ? ", or refuse this client's certificate" : ""));
  }
  jsOptions js_opts;
  jsOptions_Init(&js_opts);
  js_opts.Wait = timeout_ms;
  js_opts.PublishAsync.MaxPending = 4096;
  js_opts.PublishAsync.ErrHandler = publish_error;
  js_opts.PublishAsync.ErrHandlerClosure = closure;
  s = natsConnection_JetStream(&client->js_, client->nc_, &js_opts);
  if (s != NATS_OK) return NatsError(s, absl::StrCat(what, ": no JetStream context"));
  return client;
}

NatsClient::~NatsClient() {
  if (js_ != nullptr) jsCtx_Destroy(js_);
  if (nc_ != nullptr) {
    natsConnection_Close(nc_);
    natsConnection_Destroy(nc_);
  }
}

bool NatsClient::connected() const {
  return nc_ != nullptr && natsConnection_Status(nc_) == NATS_CONN_STATUS_CONNECTED;
}

absl::Status NatsClient::EnsureStream(absl::string_view name, absl::string_view subjects,
                                      const StreamLimits& limits) {
  const std::string name_s(name);
  const std::string subject_s(subjects);
  jsStreamInfo* info = nullptr;
  jsErrCode err = static_cast<jsErrCode>(0);
  natsStatus s = js_GetStreamInfo(&info, js_, name_s.c_str(), nullptr, &err);
  if (s == NATS_OK) {
    jsStreamInfo_Destroy(info);
    return absl::OkStatus();
  }
  jsStreamConfig cfg;
  jsStreamConfig_Init(&cfg);
  cfg.Name = name_s.c_str();
  const char* subject_list[] = {subject_s.c_str()};
  cfg.Subjects = subject_list;
  cfg.SubjectsLen = 1;
  cfg.Storage = js_FileStorage;
  cfg.Retention = js_LimitsPolicy;
  cfg.MaxAge =
      limits.max_age == absl::ZeroDuration() ? 0 : absl::ToInt64Nanoseconds(limits.max_age);
  cfg.MaxBytes = limits.max_bytes;
  cfg.Duplicates = absl::ToInt64Nanoseconds(limits.duplicate_window);
  s = js_AddStream(&info, js_, &cfg, nullptr, &err);
  if (s == NATS_OK) {
    jsStreamInfo_Destroy(info);
    return absl::OkStatus();
  }
  // Another collector made it in the meantime.
  if (js_GetStreamInfo(&info, js_, name_s.c_str(), nullptr, &err) == NATS_OK) {
    jsStreamInfo_Destroy(info);
    return absl::OkStatus();
  }
  return NatsError(s, absl::StrCat("NATS at ", UrlWithoutCredentials(config_.url),
                                   ": cannot create JetStream stream ", name_s,
                                   " (is JetStream enabled on the server? nats-server -js)"));
}

}  // namespace trainscope::tier
