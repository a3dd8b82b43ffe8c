#include "grpc_transport.h"

#include <cstdlib>
#include <utility>

#include "trainscope/agent/agent.h"
#include "trainscope/proto/protocol.h"

namespace trainscope::agent {

namespace {

std::string FieldOrEnv(const std::string& field, const char* variable) {
  if (!field.empty()) return field;
  const char* value = std::getenv(variable);
  return value == nullptr ? "" : value;
}

}  // namespace

security::TlsClientConfig GrpcTransport::TlsConfig(const AgentOptions& options) {
  security::TlsClientConfig tls;
  tls.ca_file = FieldOrEnv(options.tls_ca_file, "TRAINSCOPE_TLS_CA");
  tls.cert_file = FieldOrEnv(options.tls_cert_file, "TRAINSCOPE_TLS_CERT");
  tls.key_file = FieldOrEnv(options.tls_key_file, "TRAINSCOPE_TLS_KEY");
  tls.server_name = FieldOrEnv(options.tls_server_name, "TRAINSCOPE_TLS_SERVER_NAME");
  return tls;
}

absl::StatusOr<std::unique_ptr<GrpcTransport>> GrpcTransport::Create(const AgentOptions& options) {
  const absl::Duration reconnect_min = options.reconnect_min;
  const absl::Duration reconnect_max = options.reconnect_max;
  grpc::ChannelArguments args;
  args.SetMaxSendMessageSize(kMaxMessageBytes);
  args.SetMaxReceiveMessageSize(kMaxMessageBytes);
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS,
              static_cast<int>(absl::ToInt64Milliseconds(reconnect_min)));
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS,
              static_cast<int>(absl::ToInt64Milliseconds(reconnect_min)));
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS,
              static_cast<int>(absl::ToInt64Milliseconds(reconnect_max)));
  // A partitioned network shows up within ~2.5 min; dead peers show up at once
  // (TCP reset). Collectors should allow pings this often.
  args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, 120000);
  args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 20000);
  args.SetInt(GRPC_ARG_ENABLE_RETRIES, 0);
  absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> credentials =
      security::MakeChannelCredentials(TlsConfig(options), &args);
  if (!credentials.ok()) return credentials.status();
  auto channel = grpc::CreateCustomChannel(options.collector_address, *credentials, args);
  return std::unique_ptr<GrpcTransport>(new GrpcTransport(std::move(channel)));
}

GrpcTransport::GrpcTransport(std::shared_ptr<grpc::Channel> channel)
    : channel_(std::move(channel)),
      // The method's full name, as agent.proto's service declares it (the
      // transport tests reach a real AgentService through it).
      connect_("/trainscope.v1.AgentService/Connect", grpc::internal::RpcMethod::BIDI_STREAMING,
               channel_) {}

GrpcTransport::~GrpcTransport() {
  if (stream_ != nullptr) Close(absl::ZeroDuration()).IgnoreError();
}

bool GrpcTransport::ReadyToOpen(absl::Duration max_wait) {
  if (channel_->GetState(/*try_to_connect=*/true) == GRPC_CHANNEL_READY) return true;
  if (max_wait <= absl::ZeroDuration()) return false;
  return channel_->WaitForConnected(absl::ToChronoTime(absl::Now() + max_wait));
}

absl::Status GrpcTransport::Open(ControlListener* listener) {
  if (stream_ != nullptr) return absl::FailedPreconditionError("a stream is already open");
  grpc::ClientContext* context;
  {
    base::MutexLock lock(&mu_);
    context_ = std::make_unique<grpc::ClientContext>();
    context_->set_wait_for_ready(false);
    // Headers leave with Hello: creating the stream does not block.
    context_->set_initial_metadata_corked(true);
    reader_done_ = false;
    context = context_.get();
  }
  stream_.reset(grpc::internal::ClientReaderWriterFactory<grpc::ByteBuffer, v1::Control>::Create(
      channel_.get(), connect_, context));
  if (stream_ == nullptr) return absl::UnavailableError("could not create the stream");
  reader_ = std::thread([this, listener] { ReadLoop(listener); });
  return absl::OkStatus();
}

void GrpcTransport::ReadLoop(ControlListener* listener) {
  v1::Control control;
  while (stream_->Read(&control)) {
    listener->OnControl(std::move(control), Agent::Now());
    control.Clear();
  }
  {
    base::MutexLock lock(&mu_);
    reader_done_ = true;
  }
  reader_done_cv_.SignalAll();
  listener->OnStreamEnd();
}

bool GrpcTransport::Write(const v1::AgentMessage& message) {
  return WriteSerialized(message.SerializeAsString());
}

bool GrpcTransport::WriteSerialized(const std::string& agent_message) {
  if (stream_ == nullptr) return false;
  grpc::Slice slice(agent_message.data(), agent_message.size());
  grpc::ByteBuffer buffer(&slice, 1);
  return stream_->Write(buffer);
}

absl::Status GrpcTransport::Close(absl::Duration grace) {
  if (stream_ == nullptr) return absl::FailedPreconditionError("no stream is open");
  bool ended;
  {
    base::MutexLock lock(&mu_);
    ended = reader_done_;
  }
  if (!ended && grace <= absl::ZeroDuration()) {
    Cancel();
  } else if (!ended) {
    stream_->WritesDone();
    const absl::Time until = absl::Now() + grace;
    base::MutexLock lock(&mu_);
    while (!reader_done_ && !reader_done_cv_.WaitWithDeadline(&mu_, until)) {
    }
    if (!reader_done_) context_->TryCancel();
  }
  reader_.join();
  const grpc::Status status = stream_->Finish();
  stream_.reset();
  {
    base::MutexLock lock(&mu_);
    context_.reset();
  }
  if (status.ok()) return absl::OkStatus();
  return absl::Status(static_cast<absl::StatusCode>(status.error_code()), status.error_message());
}

void GrpcTransport::Cancel() {
  base::MutexLock lock(&mu_);
  if (context_ != nullptr) context_->TryCancel();
}

}  // namespace trainscope::agent
