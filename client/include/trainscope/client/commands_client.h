// A front end's side of the collector's Commands service (the CLI's and the
// viewer's): one blocking call per method, each with the configured
// deadline, errors as absl::Status.
//
// Usage:
//   CommandsClient client("127.0.0.1:7070", absl::Seconds(10));
//   absl::StatusOr<v1::ListJobsResponse> jobs = client.ListJobs();
//
// A collector that cannot be reached (nothing listening, or no answer within
// the deadline while the channel never connected) gives UNAVAILABLE with the
// message "cannot reach the collector at ADDRESS (...)"; any other error is the
// collector's own code and message (NOT_FOUND, PERMISSION_DENIED, ...). With
// `security` the channel uses TLS (mutual with a client certificate) and
// every call carries the read token; when the channel cannot connect, the
// message adds gRPC's reason and, for a plaintext client, the TLS flags (a
// collector with TLS looks to it like one that closes every connection).
//
// Threading: the methods may be called from several threads (gRPC stubs are
// thread-safe); the client owns its channel.
#ifndef TRAINSCOPE_CLIENT_COMMANDS_CLIENT_H_
#define TRAINSCOPE_CLIENT_COMMANDS_CLIENT_H_

#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "trainscope/client/client_security.h"
#include "trainscope/v1/commands.grpc.pb.h"

namespace trainscope::client {

class CommandsClient {
 public:
  CommandsClient(std::string target, absl::Duration timeout, ClientSecurity security = {});

  absl::StatusOr<trainscope::v1::ListJobsResponse> ListJobs();
  absl::StatusOr<trainscope::v1::JobStatus> GetJobStatus(const std::string& job_id);
  absl::StatusOr<trainscope::v1::CommandReply> SetRecording(
      const trainscope::v1::SetRecordingRequest& request);
  absl::StatusOr<trainscope::v1::CommandReply> Halt(const trainscope::v1::HaltJobRequest& request);
  absl::StatusOr<trainscope::v1::CommandReply> SetHaltPolicy(
      const trainscope::v1::SetHaltPolicyRequest& request);

  const std::string& target() const { return target_; }

 private:
  void PrepareContext(grpc::ClientContext* context) const;
  absl::Status ToStatus(const grpc::Status& status) const;

  std::string target_;
  absl::Duration timeout_;
  ClientSecurity security_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<trainscope::v1::Commands::Stub> stub_;
};

// The message every subcommand prints when the collector is not there.
std::string CannotReachCollectorMessage(const std::string& target);

// gRPC's status as an absl::Status with the same code and message.
absl::Status FromGrpcStatus(const grpc::Status& status);

}  // namespace trainscope::client

#endif  // TRAINSCOPE_CLIENT_COMMANDS_CLIENT_H_
