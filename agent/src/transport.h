// The stream between the agent's sender and a collector, abstracted so the
// sender can be tested without gRPC (GrpcTransport is the real one).
//
// Usage (sender thread):
//   if (transport->ReadyToOpen(absl::Milliseconds(20)) && transport->Open(&listener).ok()) {
//     transport->Write(hello_message);  ...  transport->Write(batch_message);
//     absl::Status end = transport->Close(grace);   // after listener.OnStreamEnd() or to leave
//   }
//
// Threading: Open, Write and Close are called by one thread (the sender).
// Cancel may be called from any thread, at any time, to unblock a Write.
// Listener calls come from the transport's own thread (or, in fakes, from
// inside Write) between Open and the return of Close.
#ifndef TRAINSCOPE_AGENT_SRC_TRANSPORT_H_
#define TRAINSCOPE_AGENT_SRC_TRANSPORT_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "trainscope/v1/agent.pb.h"

namespace trainscope::agent {

class ControlListener {
 public:
  virtual ~ControlListener() = default;
  // A message from the collector; receive_ns is Agent::Now() at arrival.
  virtual void OnControl(v1::Control control, int64_t receive_ns) = 0;
  // The collector's side of the stream ended (or it broke); call Close next.
  virtual void OnStreamEnd() = 0;
};

class Transport {
 public:
  virtual ~Transport() = default;
  // Whether Open is worth trying now (the connection is up), waiting at most
  // `max_wait` for a connection attempt to finish.
  virtual bool ReadyToOpen(absl::Duration max_wait) = 0;
  // Opens a stream; the listener hears from it until Close returns.
  virtual absl::Status Open(ControlListener* listener) = 0;
  // Blocks until the message is handed to the stream. False: the stream is broken.
  virtual bool Write(const v1::AgentMessage& message) = 0;
  // Write for a message already serialized (the sender's batches, which it
  // encodes itself). This default parses it and calls Write, for fakes that
  // look at messages; a real transport sends the bytes as they are.
  virtual bool WriteSerialized(const std::string& agent_message) {
    v1::AgentMessage message;
    return message.ParseFromString(agent_message) && Write(message);
  }
  // Half-closes, waits up to `grace` for the collector to end the stream,
  // cancels it if not (at once when grace <= 0 and the stream is still up),
  // and returns how the stream ended.
  virtual absl::Status Close(absl::Duration grace) = 0;
  // Aborts the open stream (if any); Write returns false soon after.
  virtual void Cancel() = 0;
};

}  // namespace trainscope::agent

#endif  // TRAINSCOPE_AGENT_SRC_TRANSPORT_H_
