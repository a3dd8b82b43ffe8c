#include "trainscope/viewer/job_command_sender.h"

#include <cstdlib>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "trainscope/client/commands_client.h"

namespace trainscope::viewer {

JobCommandSender::JobCommandSender(std::string collector, std::string job_id,
                                   client::ClientSecurity security)
    : collector_(std::move(collector)),
      job_id_(std::move(job_id)),
      security_(std::move(security)) {}

JobCommandSender::~JobCommandSender() {
  if (worker_.joinable()) worker_.join();
}

void JobCommandSender::Send(const std::string& command, const std::string& token,
                            std::function<void(Outcome)> done) {
  if (worker_.joinable()) worker_.join();
  worker_ =
      std::thread([this, command, token, done = std::move(done)] { done(Run(command, token)); });
}

JobCommandSender::Outcome JobCommandSender::Run(const std::string& command,
                                                const std::string& token) const {
  client::CommandsClient client(collector_, absl::Seconds(10), security_);
  absl::StatusOr<trainscope::v1::CommandReply> reply;
  if (command == "halt") {
    trainscope::v1::HaltJobRequest request;
    request.set_job_id(job_id_);
    request.set_token(token);
    request.set_reason("halted from trainscope-viewer");
    const char* user = std::getenv("USER");
    request.set_requested_by(std::string("trainscope-viewer (") + (user ? user : "?") + ")");
    reply = client.Halt(request);
  } else {
    trainscope::v1::SetRecordingRequest request;
    request.set_job_id(job_id_);
    request.set_token(token);
    request.set_enabled(absl::StartsWith(command, "enable"));
    request.set_loss_contribution(absl::EndsWith(command, "-loss-contribution"));
    reply = client.SetRecording(request);
  }
  if (!reply.ok()) return {false, absl::StrCat(command, " failed: ", reply.status().message())};
  return Describe(command, reply->ranks_reached(), reply->message());
}

JobCommandSender::Outcome JobCommandSender::Describe(const std::string& command,
                                                     uint32_t ranks_reached,
                                                     const std::string& message) {
  if (ranks_reached == 0) {
    // Accepted and logged, yet nothing changed now: no rank is connected
    // (the job ended or its ranks are away). Not a success to show in green.
    return {false,
            absl::StrCat(command, " reached no rank: no rank of the job is connected",
                         command == "halt" ? " (ranks that reconnect stop at the halt step)" : "",
                         message.empty() ? "" : absl::StrCat(" \xE2\x80\x94 ", message))};
  }
  return {true, absl::StrCat(command, ": ", ranks_reached,
                             ranks_reached == 1 ? " rank reached" : " ranks reached",
                             message.empty() ? "" : absl::StrCat(" \xE2\x80\x94 ", message))};
}

}  // namespace trainscope::viewer
