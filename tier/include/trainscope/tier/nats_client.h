// One connection to NATS with its JetStream context, as the collector tier
// uses it: TLS and credentials from flags, reconnects forever once connected,
// and the tier's streams made sure of (docs/scale.md).
//
// Usage:
//   NatsConfig config{.url = "nats://host:4222", .name = "node-a"};
//   absl::StatusOr<std::unique_ptr<NatsClient>> client = NatsClient::Connect(config);
//   if (!client.ok()) ... // UNAVAILABLE naming the URL and what NATS said
//   RETURN_IF_ERROR((*client)->EnsureStream(kRecordsStream, kAllRecords, limits));
//   jsCtx* js = (*client)->js();
//
// Connect fails at once when the server cannot be reached (the callers retry
// on their own schedule and say so); after that the library reconnects by
// itself and requests fail with UNAVAILABLE while it is away.
//
// Threading: the nats.c connection is thread-safe; the object is created and
// destroyed by one owner. jsOptions' async-publish error handler, when given,
// runs on a library thread.
#ifndef TRAINSCOPE_TIER_NATS_CLIENT_H_
#define TRAINSCOPE_TIER_NATS_CLIENT_H_

#include <nats/nats.h>

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace trainscope::tier {

struct NatsConfig {
  std::string url;       // nats://HOST:PORT or tls://HOST:PORT
  std::string name;      // the connection's name on the server (monitoring)
  std::string tls_ca;    // PEM file: verify the server (implies TLS)
  std::string tls_cert;  // PEM files: this client's certificate and key (mutual TLS)
  std::string tls_key;
  std::string creds;                          // a NATS .creds file (JWT + NKey seed)
  absl::Duration timeout = absl::Seconds(2);  // connect and JetStream API requests
};

// Checks a NatsConfig's URL and files (readable, cert with key); the errors
// name `flag_prefix` + the field ("--nats-tls-cert ...").
absl::Status ValidateNatsConfig(const NatsConfig& config, absl::string_view url_flag);

struct StreamLimits {
  absl::Duration max_age = absl::Hours(24);  // zero: unlimited
  int64_t max_bytes = -1;                    // -1: unlimited
  absl::Duration duplicate_window = absl::Minutes(2);
};

class NatsClient {
 public:
  // `publish_error`, when given, is JetStream's async-publish error handler
  // (jsPubAckErrHandler) with `closure`.
  static absl::StatusOr<std::unique_ptr<NatsClient>> Connect(
      const NatsConfig& config, jsPubAckErrHandler publish_error = nullptr,
      void* closure = nullptr);
  ~NatsClient();

  NatsClient(const NatsClient&) = delete;
  NatsClient& operator=(const NatsClient&) = delete;

  // Creates the stream, or accepts it as it is when it exists.
  absl::Status EnsureStream(absl::string_view name, absl::string_view subjects,
                            const StreamLimits& limits);

  bool connected() const;
  natsConnection* connection() const { return nc_; }
  jsCtx* js() const { return js_; }
  const NatsConfig& config() const { return config_; }

 private:
  explicit NatsClient(NatsConfig config) : config_(std::move(config)) {}

  const NatsConfig config_;
  natsConnection* nc_ = nullptr;
  jsCtx* js_ = nullptr;
};

// "nats://user:secret@host:4222" -> "nats://host:4222" (also a token before
// the @): what every message, status file and status line shows of a NATS
// URL, since they are read by people who may not hold its credentials.
std::string UrlWithoutCredentials(absl::string_view url);

// UNAVAILABLE "<what>: <NATS's text> (<last error>)".
absl::Status NatsError(natsStatus status, absl::string_view what);

}  // namespace trainscope::tier

#endif  // TRAINSCOPE_TIER_NATS_CLIENT_H_
