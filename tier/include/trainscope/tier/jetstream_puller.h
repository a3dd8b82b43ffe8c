// Pulls messages from a durable JetStream pull consumer over a plain NATS
// subscription, for the job-level collector's UpstreamConsumer.
//
// Usage:
//   JetStreamPullerOptions o{.stream = kRecordsStream, .durable = "trainscope-job-level",
//                            .filter = kAllRecords};
//   ASSIGN_OR_RETURN(std::unique_ptr<JetStreamPuller> puller, JetStreamPuller::Start(client, o));
//   absl::StatusOr<std::vector<natsMsg*>> msgs = puller->Next(256, absl::Milliseconds(250));
//   ...  JetStreamPuller::Ack(client->connection(), msg); natsMsg_Destroy(msg);
//   // an error from Next: the subscription or the consumer is gone; Start again.
//
// Why not natsSubscription_Fetch: libnats 3.4 (Debian bookworm) overruns the
// array it returns when, at the start of a fetch, more than half of the batch
// already waits in the subscription and fewer than all of it (nats.c #749,
// fixed in 3.10). That is the normal state right after a reconnect (the pull
// requests sent while NATS was away are all answered at once) and it crashed
// the job-level collector in test_tier.py's kill test. Here every message is
// taken one at a time from a subscription this class owns, so more waiting
// than asked for is just more to take next time.
//
// Protocol: Start looks the durable consumer up (or creates it: explicit acks,
// deliver all, the filter) and subscribes `<inbox>.*`. Next keeps at most one
// pull request outstanding (`$JS.API.CONSUMER.MSG.NEXT.<stream>.<durable>`,
// reply `<inbox>.<n>`, `batch` and `expires`), waits up to `wait` for the
// first message and then takes only what has already arrived. A request ends
// with its status message (408 expired, 409, ...; those of older requests are
// ignored), when its batch is delivered, or locally shortly after its expiry
// (NATS restarted and forgot it). Messages are acked by publishing to their
// reply subject (`+ACK`, `+TERM`), which is all natsMsg_Ack does.
//
// Threading: Start and Next on one thread (the owner's); Ack and Term are
// thread-safe (the connection is).
#ifndef TRAINSCOPE_TIER_JETSTREAM_PULLER_H_
#define TRAINSCOPE_TIER_JETSTREAM_PULLER_H_

#include <nats/nats.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "trainscope/tier/nats_client.h"

namespace trainscope::tier {

struct JetStreamPullerOptions {
  std::string stream;
  std::string durable;
  std::string filter;  // the consumer's filter subject
  absl::Duration ack_wait = absl::Seconds(10);
  int64_t max_ack_pending = 4096;
  int request_batch = 256;                                   // messages one pull request asks for
  absl::Duration request_expires = absl::Milliseconds(240);  // how long the server holds it
};

class JetStreamPuller {
 public:
  // Binds to the durable consumer (made when missing) and subscribes. An
  // existing consumer with another filter is refused, naming both. `client`
  // must outlive the puller.
  static absl::StatusOr<std::unique_ptr<JetStreamPuller>> Start(NatsClient* client,
                                                                JetStreamPullerOptions options);
  ~JetStreamPuller();  // unsubscribes; messages already returned stay valid

  JetStreamPuller(const JetStreamPuller&) = delete;
  JetStreamPuller& operator=(const JetStreamPuller&) = delete;

  // Up to `max` messages (owned by the caller: ack or not, then
  // natsMsg_Destroy); empty when none came within `wait`. UNAVAILABLE when
  // the subscription is closed or no consumer answers (Start again).
  absl::StatusOr<std::vector<natsMsg*>> Next(int max, absl::Duration wait);

  // Pull requests sent so far (tests).
  uint64_t requests_sent() const { return requests_sent_; }

  static void Ack(natsConnection* connection, natsMsg* msg);
  static void Term(natsConnection* connection, natsMsg* msg);

 private:
  JetStreamPuller(NatsClient* client, JetStreamPullerOptions options)
      : client_(client), options_(std::move(options)) {}
  absl::Status EnsureConsumer();
  absl::Status SendRequest();

  NatsClient* const client_;
  const JetStreamPullerOptions options_;
  std::string inbox_;  // <inbox>; requests reply to <inbox>.<n>
  natsSubscription* sub_ = nullptr;
  uint64_t requests_sent_ = 0;
  bool outstanding_ = false;  // a pull request is open
  std::string reply_;         // the open request's reply subject
  int asked_ = 0;             // what it asked for
  int delivered_ = 0;         // user messages taken since it was sent
  absl::Time request_until_;  // when to stop waiting for its end
};

}  // namespace trainscope::tier

#endif  // TRAINSCOPE_TIER_JETSTREAM_PULLER_H_
