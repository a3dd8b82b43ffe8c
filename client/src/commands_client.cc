#include "trainscope/client/commands_client.h"

#include <chrono>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "trainscope/proto/protocol.h"

namespace trainscope::client {

std::string CannotReachCollectorMessage(const std::string& target) {
  return absl::StrCat("cannot reach the collector at ", target,
                      " (is trainscope-collector running? set --collector or "
                      "TRAINSCOPE_COLLECTOR)");
}

absl::Status FromGrpcStatus(const grpc::Status& status) {
  if (status.ok()) return absl::OkStatus();
  return absl::Status(static_cast<absl::StatusCode>(status.error_code()), status.error_message());
}

CommandsClient::CommandsClient(std::string target, absl::Duration timeout,
                               ClientSecurity security)
    : target_(std::move(target)), timeout_(timeout), security_(std::move(security)) {
  grpc::ChannelArguments arguments;
  arguments.SetMaxReceiveMessageSize(kMaxMessageBytes);
  arguments.SetMaxSendMessageSize(kMaxMessageBytes);
  channel_ = grpc::CreateCustomChannel(target_, security_.ChannelCredentials(&arguments), arguments);
  stub_ = trainscope::v1::Commands::NewStub(channel_);
}

void CommandsClient::PrepareContext(grpc::ClientContext* context) const {
  context->set_deadline(std::chrono::system_clock::now() + absl::ToChronoNanoseconds(timeout_));
  if (!security_.read_token.empty()) {
    context->AddMetadata("trainscope-read-token", security_.read_token);
  }
}

absl::Status CommandsClient::ToStatus(const grpc::Status& status) const {
  if (status.ok()) return absl::OkStatus();
  // UNAVAILABLE or a deadline on a channel that is not READY means nothing
  // answered at that address (nothing listening, a host that drops packets).
  // On a READY channel those codes come from the collector itself (a slow or
  // shutting-down collector), so its own message is kept.
  const bool connected = channel_->GetState(/*try_to_connect=*/false) == GRPC_CHANNEL_READY;
  if (!connected && (status.error_code() == grpc::StatusCode::UNAVAILABLE ||
                     status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED)) {
    std::string message = CannotReachCollectorMessage(target_);
    if (!status.error_message().empty()) absl::StrAppend(&message, "; gRPC: ", status.error_message());
    absl::StrAppend(&message, security_.grpc_credentials == nullptr
                                  ? "; a collector with TLS refuses plaintext clients: give "
                                    "--tls-ca (TRAINSCOPE_TLS_CA), and --tls-cert/--tls-key for "
                                    "mutual TLS"
                                  : "; with TLS: check --tls-ca, --tls-cert, --tls-key and "
                                    "--tls-server-name against the collector's certificates");
    return absl::UnavailableError(message);
  }
  if (status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED) {
    return absl::DeadlineExceededError(
        absl::StrCat("the collector at ", target_, " did not answer within ",
                     absl::FormatDuration(timeout_), " (raise --timeout?)"));
  }
  return FromGrpcStatus(status);
}

absl::StatusOr<trainscope::v1::ListJobsResponse> CommandsClient::ListJobs() {
  grpc::ClientContext context;
  PrepareContext(&context);
  trainscope::v1::ListJobsResponse response;
  grpc::Status status = stub_->ListJobs(&context, trainscope::v1::ListJobsRequest(), &response);
  if (!status.ok()) return ToStatus(status);
  return response;
}

absl::StatusOr<trainscope::v1::JobStatus> CommandsClient::GetJobStatus(const std::string& job_id) {
  grpc::ClientContext context;
  PrepareContext(&context);
  trainscope::v1::JobStatusRequest request;
  request.set_job_id(job_id);
  trainscope::v1::JobStatus response;
  grpc::Status status = stub_->GetJobStatus(&context, request, &response);
  if (!status.ok()) return ToStatus(status);
  return response;
}

absl::StatusOr<trainscope::v1::CommandReply> CommandsClient::SetRecording(
    const trainscope::v1::SetRecordingRequest& request) {
  grpc::ClientContext context;
  PrepareContext(&context);
  trainscope::v1::CommandReply response;
  grpc::Status status = stub_->SetRecording(&context, request, &response);
  if (!status.ok()) return ToStatus(status);
  return response;
}

absl::StatusOr<trainscope::v1::CommandReply> CommandsClient::Halt(
    const trainscope::v1::HaltJobRequest& request) {
  grpc::ClientContext context;
  PrepareContext(&context);
  trainscope::v1::CommandReply response;
  grpc::Status status = stub_->Halt(&context, request, &response);
  if (!status.ok()) return ToStatus(status);
  return response;
}

absl::StatusOr<trainscope::v1::CommandReply> CommandsClient::SetHaltPolicy(
    const trainscope::v1::SetHaltPolicyRequest& request) {
  grpc::ClientContext context;
  PrepareContext(&context);
  trainscope::v1::CommandReply response;
  grpc::Status status = stub_->SetHaltPolicy(&context, request, &response);
  if (!status.ok()) return ToStatus(status);
  return response;
}

}  // namespace trainscope::client
