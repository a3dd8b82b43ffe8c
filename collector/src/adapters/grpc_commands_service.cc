#include "trainscope/collector/adapters/grpc_commands_service.h"

#include <utility>

#include "grpc_status.h"
#include "grpcpp/grpcpp.h"

namespace trainscope::collector {

GrpcCommandsService::GrpcCommandsService(JobRegistry* registry, std::string read_token,
                                         TierStatusProvider tier_status)
    : registry_(registry),
      read_token_(std::move(read_token)),
      tier_status_(std::move(tier_status)) {}

grpc::Status GrpcCommandsService::CheckReadToken(const grpc::CallbackServerContext* context) const {
  if (read_token_.empty()) return grpc::Status::OK;
  const auto& metadata = context->client_metadata();
  const auto found = metadata.find(kReadTokenMetadata);
  bool match = false;
  if (found != metadata.end() && found->second.size() == read_token_.size()) {
    // Constant time: the comparison does not tell how much of a guess was right.
    unsigned char difference = 0;
    for (size_t i = 0; i < read_token_.size(); ++i) {
      difference |= static_cast<unsigned char>(found->second.data()[i] ^ read_token_[i]);
    }
    match = difference == 0;
  }
  if (match) return grpc::Status::OK;
  return grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                      found == metadata.end()
                          ? "this collector gates reads: give its read token (--read-token-file "
                            "or TRAINSCOPE_READ_TOKEN_FILE)"
                          : "the read token given is not this collector's (--read-token-file "
                            "or TRAINSCOPE_READ_TOKEN_FILE)");
}

grpc::ServerUnaryReactor* GrpcCommandsService::ListJobs(grpc::CallbackServerContext* context,
                                                        const v1::ListJobsRequest*,
                                                        v1::ListJobsResponse* response) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  if (grpc::Status denied = CheckReadToken(context); !denied.ok()) {
    reactor->Finish(denied);
    return reactor;
  }
  for (v1::JobSummary& summary : registry_->ListJobs()) *response->add_jobs() = std::move(summary);
  if (tier_status_) {
    v1::TierStatus tier;
    tier_status_(&tier);
    if (tier.node() || tier.job_level()) *response->mutable_tier() = std::move(tier);
  }
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

grpc::ServerUnaryReactor* GrpcCommandsService::GetJobStatus(grpc::CallbackServerContext* context,
                                                            const v1::JobStatusRequest* request,
                                                            v1::JobStatus* response) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  if (grpc::Status denied = CheckReadToken(context); !denied.ok()) {
    reactor->Finish(denied);
    return reactor;
  }
  // gRPC keeps `response` alive until Finish, which the pipeline's completion calls.
  registry_->JobStatus(request->job_id(), context->peer(),
                       [reactor, response](absl::StatusOr<v1::JobStatus> status) {
                         if (status.ok()) *response = std::move(*status);
                         reactor->Finish(ToGrpcStatus(status.status()));
                       });
  return reactor;
}

grpc::ServerUnaryReactor* GrpcCommandsService::Run(grpc::CallbackServerContext* context,
                                                   const std::string& job_id, JobCommand command,
                                                   v1::CommandReply* response) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  if (command.requested_by.empty()) command.requested_by = context->peer();
  registry_->RunCommand(job_id, std::move(command), context->peer(),
                        [reactor, response](absl::StatusOr<v1::CommandReply> reply) {
                          if (reply.ok()) *response = std::move(*reply);
                          reactor->Finish(ToGrpcStatus(reply.status()));
                        });
  return reactor;
}

grpc::ServerUnaryReactor* GrpcCommandsService::SetRecording(grpc::CallbackServerContext* context,
                                                            const v1::SetRecordingRequest* request,
                                                            v1::CommandReply* response) {
  JobCommand command;
  if (request->loss_contribution()) {
    command.kind = request->enabled() ? JobCommand::Kind::kEnableLossContribution
                                      : JobCommand::Kind::kDisableLossContribution;
  } else {
    command.kind = request->enabled() ? JobCommand::Kind::kEnableRecording
                                      : JobCommand::Kind::kDisableRecording;
  }
  command.token = request->token();
  command.sampling_period = request->sampling_period();
  return Run(context, request->job_id(), std::move(command), response);
}

grpc::ServerUnaryReactor* GrpcCommandsService::Halt(grpc::CallbackServerContext* context,
                                                    const v1::HaltJobRequest* request,
                                                    v1::CommandReply* response) {
  JobCommand command;
  command.kind = JobCommand::Kind::kHalt;
  command.token = request->token();
  command.reason = request->reason();
  command.requested_by = request->requested_by();
  return Run(context, request->job_id(), std::move(command), response);
}

grpc::ServerUnaryReactor* GrpcCommandsService::SetHaltPolicy(
    grpc::CallbackServerContext* context, const v1::SetHaltPolicyRequest* request,
    v1::CommandReply* response) {
  JobCommand command;
  command.kind = JobCommand::Kind::kSetHaltPolicy;
  command.token = request->token();
  command.halt_policy = request->policy();
  command.requested_by = request->requested_by();
  return Run(context, request->job_id(), std::move(command), response);
}

}  // namespace trainscope::collector
