// The gRPC adapter for the Commands service (trainscope CLI, viewer): each
// call forwards to the JobRegistry and finishes from the pipeline's
// completion, so no gRPC thread waits on a pipeline.
//
// With a read token (--read-token-file), ListJobs and GetJobStatus answer
// only calls carrying it in the "trainscope-read-token" metadata
// (UNAUTHENTICATED otherwise); the commands that change a job check the
// job's own token as before. ListJobs also carries the collector's NATS tier
// role and counters when it has one.
//
// Usage:
//   GrpcCommandsService commands(&registry, /*read_token=*/"");
//   builder.RegisterService(&commands);
//
// Threading: gRPC callback threads; the registry is thread-safe.
#ifndef TRAINSCOPE_COLLECTOR_ADAPTERS_GRPC_COMMANDS_SERVICE_H_
#define TRAINSCOPE_COLLECTOR_ADAPTERS_GRPC_COMMANDS_SERVICE_H_

#include <functional>
#include <string>

#include "trainscope/collector/adapters/tier_status_provider.h"
#include "trainscope/collector/pipeline/job_registry.h"
#include "trainscope/v1/commands.grpc.pb.h"

namespace trainscope::collector {

class GrpcCommandsService final : public trainscope::v1::Commands::CallbackService {
 public:
  // The metadata key of the read token.
  static constexpr char kReadTokenMetadata[] = "trainscope-read-token";

  // `read_token` empty: reads are not gated here (loopback, or mutual TLS).
  // `tier_status` null: ListJobs leaves its tier unset.
  GrpcCommandsService(JobRegistry* registry, std::string read_token,
                      TierStatusProvider tier_status = nullptr);

  grpc::ServerUnaryReactor* ListJobs(grpc::CallbackServerContext* context,
                                     const trainscope::v1::ListJobsRequest* request,
                                     trainscope::v1::ListJobsResponse* response) override;
  grpc::ServerUnaryReactor* GetJobStatus(grpc::CallbackServerContext* context,
                                         const trainscope::v1::JobStatusRequest* request,
                                         trainscope::v1::JobStatus* response) override;
  grpc::ServerUnaryReactor* SetRecording(grpc::CallbackServerContext* context,
                                         const trainscope::v1::SetRecordingRequest* request,
                                         trainscope::v1::CommandReply* response) override;
  grpc::ServerUnaryReactor* Halt(grpc::CallbackServerContext* context,
                                 const trainscope::v1::HaltJobRequest* request,
                                 trainscope::v1::CommandReply* response) override;
  grpc::ServerUnaryReactor* SetHaltPolicy(grpc::CallbackServerContext* context,
                                          const trainscope::v1::SetHaltPolicyRequest* request,
                                          trainscope::v1::CommandReply* response) override;

 private:
  grpc::ServerUnaryReactor* Run(grpc::CallbackServerContext* context, const std::string& job_id,
                                JobCommand command, trainscope::v1::CommandReply* response);

  // OK when no read token is configured or the call carries it.
  grpc::Status CheckReadToken(const grpc::CallbackServerContext* context) const;

  JobRegistry* const registry_;
  const std::string read_token_;
  const TierStatusProvider tier_status_;
};

}  // namespace trainscope::collector

#endif  // TRAINSCOPE_COLLECTOR_ADAPTERS_GRPC_COMMANDS_SERVICE_H_
