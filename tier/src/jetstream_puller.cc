#include "trainscope/tier/jetstream_puller.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "trainscope/base/status_macros.h"

namespace trainscope::tier {

absl::StatusOr<std::unique_ptr<JetStreamPuller>> JetStreamPuller::Start(
    NatsClient* client, JetStreamPullerOptions options) {
  std::unique_ptr<JetStreamPuller> puller(new JetStreamPuller(client, std::move(options)));
  RETURN_IF_ERROR(puller->EnsureConsumer());
  natsInbox* inbox = nullptr;
  natsStatus s = natsInbox_Create(&inbox);
  if (s != NATS_OK) return NatsError(s, "cannot make an inbox for JetStream pull requests");
  puller->inbox_ = inbox;
  natsInbox_Destroy(inbox);
  const std::string wildcard = absl::StrCat(puller->inbox_, ".*");
  s = natsConnection_SubscribeSync(&puller->sub_, client->connection(), wildcard.c_str());
  if (s != NATS_OK) {
    puller->sub_ = nullptr;
    return NatsError(s, absl::StrCat("NATS at ", UrlWithoutCredentials(client->config().url),
                                     ": cannot subscribe ", wildcard, " for the durable ",
                                     puller->options_.durable));
  }
  return puller;
}

JetStreamPuller::~JetStreamPuller() {
  if (sub_ == nullptr) return;
  natsSubscription_Unsubscribe(sub_);
  natsSubscription_Destroy(sub_);
}

absl::Status JetStreamPuller::EnsureConsumer() {
  const std::string what =
      absl::StrCat("NATS at ", UrlWithoutCredentials(client_->config().url),
                   ": the durable consumer ", options_.durable, " of stream ", options_.stream);
  jsConsumerInfo* info = nullptr;
  jsErrCode err = static_cast<jsErrCode>(0);
  natsStatus s = js_GetConsumerInfo(&info, client_->js(), options_.stream.c_str(),
                                    options_.durable.c_str(), nullptr, &err);
  if (s == NATS_OK) {
    // Resume where it stands (its ack floor); it must consume what we expect.
    const jsConsumerConfig* config = info->Config;
    const std::string filter =
        config != nullptr && config->FilterSubject != nullptr ? config->FilterSubject : "";
    const bool push =
        config != nullptr && config->DeliverSubject != nullptr && config->DeliverSubject[0] != '\0';
    jsConsumerInfo_Destroy(info);
    if (filter != options_.filter || push) {
      return absl::FailedPreconditionError(absl::StrCat(
          what, push ? " is a push consumer" : absl::StrCat(" consumes '", filter, "'"),
          "; expected a pull consumer of '", options_.filter,
          "': give another --nats-durable or delete that consumer"));
    }
    return absl::OkStatus();
  }
  if (err != JSConsumerNotFoundErr) return NatsError(s, absl::StrCat(what, ": cannot look it up"));
  jsConsumerConfig config;
  jsConsumerConfig_Init(&config);
  config.Durable = options_.durable.c_str();
  config.AckPolicy = js_AckExplicit;
  config.AckWait = absl::ToInt64Nanoseconds(options_.ack_wait);
  config.MaxAckPending = options_.max_ack_pending;
  config.DeliverPolicy = js_DeliverAll;
  config.FilterSubject = options_.filter.c_str();
  s = js_AddConsumer(&info, client_->js(), options_.stream.c_str(), &config, nullptr, &err);
  if (s == NATS_OK) {
    jsConsumerInfo_Destroy(info);
    return absl::OkStatus();
  }
  // Another job-level collector made it in the meantime.
  if (js_GetConsumerInfo(&info, client_->js(), options_.stream.c_str(), options_.durable.c_str(),
                         nullptr, &err) == NATS_OK) {
    jsConsumerInfo_Destroy(info);
    return absl::OkStatus();
  }
  return NatsError(s, absl::StrCat(what, ": cannot create it"));
}

absl::Status JetStreamPuller::SendRequest() {
  outstanding_ = false;
  reply_ = absl::StrCat(inbox_, ".", ++requests_sent_);
  const std::string subject =
      absl::StrCat("$JS.API.CONSUMER.MSG.NEXT.", options_.stream, ".", options_.durable);
  const std::string body =
      absl::StrCat("{\"batch\":", options_.request_batch,
                   ",\"expires\":", absl::ToInt64Nanoseconds(options_.request_expires), "}");
  // While NATS is away the library keeps this in its reconnect buffer.
  natsStatus s = natsConnection_PublishRequestString(client_->connection(), subject.c_str(),
                                                     reply_.c_str(), body.c_str());
  if (s != NATS_OK) {
    return NatsError(s, absl::StrCat("NATS at ", UrlWithoutCredentials(client_->config().url),
                                     ": cannot ask ", options_.durable, " for messages"));
  }
  outstanding_ = true;
  asked_ = options_.request_batch;
  delivered_ = 0;
  // The server ends it with a 408 at its expiry; a server that restarted
  // forgot it and says nothing.
  request_until_ = absl::Now() + options_.request_expires + absl::Milliseconds(100);
  return absl::OkStatus();
}

absl::StatusOr<std::vector<natsMsg*>> JetStreamPuller::Next(int max, absl::Duration wait) {
  std::vector<natsMsg*> out;
  const absl::Time deadline = absl::Now() + wait;
  while (static_cast<int>(out.size()) < max) {
    const absl::Time now = absl::Now();
    if (outstanding_ && now >= request_until_) outstanding_ = false;
    if (!outstanding_) {
      if (absl::Status sent = SendRequest(); !sent.ok()) {
        if (out.empty()) return sent;
        break;
      }
    }
    // Wait for the first message only; after it, take what already arrived.
    int64_t timeout_ms = 0;
    if (out.empty()) {
      const absl::Duration left = std::min(deadline, request_until_) - now;
      timeout_ms =
          std::max<int64_t>(1, absl::ToInt64Milliseconds(absl::Ceil(left, absl::Milliseconds(1))));
    }
    natsMsg* msg = nullptr;
    const natsStatus s = natsSubscription_NextMsg(&msg, sub_, timeout_ms);
    if (s == NATS_TIMEOUT) {
      if (!out.empty() || absl::Now() >= deadline) break;
      continue;
    }
    // The library dropped some over its pending limit: unacked, they come again.
    if (s == NATS_SLOW_CONSUMER) continue;
    if (s != NATS_OK) {
      outstanding_ = false;
      if (!out.empty()) break;
      if (s == NATS_NO_RESPONDERS) {
        // JetStream is not up yet after a restart, or lost the consumer.
        return absl::UnavailableError(
            absl::StrCat("NATS at ", UrlWithoutCredentials(client_->config().url),
                         ": nothing answers for the durable ", options_.durable, " of stream ",
                         options_.stream));
      }
      return NatsError(s, absl::StrCat("NATS at ", UrlWithoutCredentials(client_->config().url),
                                       ": pulling from ", options_.durable));
    }
    const char* status = nullptr;
    if (natsMsg_GetDataLength(msg) == 0 && natsMsgHeader_Get(msg, "Status", &status) == NATS_OK) {
      // The end of a pull request (408 expired, 409 ...): if it is the open
      // one, the next round asks again; an older one's is stale.
      if (reply_ == natsMsg_GetSubject(msg)) outstanding_ = false;
      natsMsg_Destroy(msg);
      continue;
    }
    out.push_back(msg);
    if (++delivered_ >= asked_) outstanding_ = false;
  }
  return out;
}

void JetStreamPuller::Ack(natsConnection* connection, natsMsg* msg) {
  const char* reply = natsMsg_GetReply(msg);
  if (connection == nullptr || reply == nullptr || reply[0] == '\0') return;
  natsConnection_PublishString(connection, reply, "+ACK");
}

void JetStreamPuller::Term(natsConnection* connection, natsMsg* msg) {
  const char* reply = natsMsg_GetReply(msg);
  if (connection == nullptr || reply == nullptr || reply[0] == '\0') return;
  natsConnection_PublishString(connection, reply, "+TERM");
}

}  // namespace trainscope::tier
