// Transport over gRPC: AgentService.Connect, a bidirectional stream.
//
// Usage:
//   ASSIGN_OR_RETURN(std::unique_ptr<GrpcTransport> t, GrpcTransport::Create(agent_options));
//   (then as Transport; see transport.h)
//
// The channel reconnects by itself with exponential backoff between
// reconnect_min and reconnect_max (gRPC adds jitter); ReadyToOpen waits for it
// only briefly, so the sender never blocks long waiting for a collector.
// The channel uses TLS when the options' tls_* fields (or their
// TRAINSCOPE_TLS_* variables) say so; Create fails on a bad file, naming it. (The
// wait also drives the connection attempt: a bare GetState would leave it to
// gRPC's backup poller, which runs every 5 s.) A stream is
// opened fail-fast on a ready channel. Control messages are read on a reader
// thread per stream. The stream's write side carries bytes (grpc::ByteBuffer),
// not AgentMessage objects: the sender's batches arrive already serialized
// and go out as they are, without protobuf sizing them twice more (gRPC's
// own serialisation does) or a copy into a message.
//
// Threading: see Transport. Cancel is thread-safe (guarded by mu_).
#ifndef TRAINSCOPE_AGENT_SRC_GRPC_TRANSPORT_H_
#define TRAINSCOPE_AGENT_SRC_GRPC_TRANSPORT_H_

#include <memory>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "grpcpp/grpcpp.h"
#include "trainscope/agent/agent_options.h"
#include "trainscope/base/mutex.h"
#include "trainscope/security/tls_credentials.h"
#include "trainscope/v1/agent.grpc.pb.h"
#include "transport.h"

namespace trainscope::agent {

class GrpcTransport : public Transport {
 public:
  // A channel to options.collector_address, reconnecting between
  // reconnect_min and reconnect_max.
  static absl::StatusOr<std::unique_ptr<GrpcTransport>> Create(const AgentOptions& options);
  // The options' tls_* fields, each empty one from its TRAINSCOPE_TLS_* variable.
  static security::TlsClientConfig TlsConfig(const AgentOptions& options);
  ~GrpcTransport() override;

  bool ReadyToOpen(absl::Duration max_wait) override;
  absl::Status Open(ControlListener* listener) override;
  bool Write(const v1::AgentMessage& message) override;
  bool WriteSerialized(const std::string& agent_message) override;
  absl::Status Close(absl::Duration grace) override;
  void Cancel() override;

 private:
  explicit GrpcTransport(std::shared_ptr<grpc::Channel> channel);
  void ReadLoop(ControlListener* listener);

  std::shared_ptr<grpc::Channel> channel_;
  // AgentService.Connect with a byte-buffer write side (the generated stub's
  // is typed).
  const grpc::internal::RpcMethod connect_;
  // Owned by the sender thread between Open and Close; the reader thread uses
  // stream_ only to Read.
  std::unique_ptr<grpc::ClientReaderWriter<grpc::ByteBuffer, v1::Control>> stream_;
  std::thread reader_;

  base::Mutex mu_;
  std::unique_ptr<grpc::ClientContext> context_ ABSL_GUARDED_BY(mu_);
  bool reader_done_ ABSL_GUARDED_BY(mu_) = false;
  base::CondVar reader_done_cv_;
};

}  // namespace trainscope::agent

#endif  // TRAINSCOPE_AGENT_SRC_GRPC_TRANSPORT_H_
