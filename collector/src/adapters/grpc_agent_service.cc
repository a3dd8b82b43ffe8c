#include "trainscope/collector/adapters/grpc_agent_service.h"

#include <deque>
#include <memory>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "grpc_status.h"
#include "grpcpp/grpcpp.h"
#include "trainscope/base/mutex.h"

namespace trainscope::collector {

class AgentStreamReactor;

// The AgentStream the core holds. It may outlive the reactor (pipeline
// callbacks hold the session, which holds this), so it reaches the reactor
// through a pointer that OnDone clears under the same mutex.
class ReactorLink final : public AgentStream {
 public:
  explicit ReactorLink(AgentStreamReactor* reactor) : reactor_(reactor) {}

  void Send(v1::Control control) override;
  void RequestRead() override;
  void Finish(absl::Status status) override;

  void OnWriteDone(bool ok);
  void OnCancel();
  void OnDone();

 private:
  void WriteFrontLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void FinishLocked(const grpc::Status& status) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  base::Mutex mu_;
  AgentStreamReactor* reactor_ ABSL_GUARDED_BY(mu_);
  // Front is the message being written: deque keeps it in place on push_back.
  std::deque<v1::Control> queue_ ABSL_GUARDED_BY(mu_);
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  bool finish_requested_ ABSL_GUARDED_BY(mu_) = false;
  bool finished_ ABSL_GUARDED_BY(mu_) = false;
  grpc::Status finish_status_ ABSL_GUARDED_BY(mu_);
};

class AgentStreamReactor final : public grpc::ServerBidiReactor<v1::AgentMessage, v1::Control> {
 public:
  AgentStreamReactor(grpc::CallbackServerContext* context, GrpcAgentService* service)
      : context_(context), service_(service), link_(std::make_shared<ReactorLink>(this)) {
    service_->open_streams_.fetch_add(1, std::memory_order_relaxed);
    service_->streams_served_.fetch_add(1, std::memory_order_relaxed);
    session_ =
        AgentSession::Create(service_->registry_, link_, service_->budget_, service_->counters_,
                             context_->peer(), service_->session_options_);
    session_->Start();
  }

  void OnReadDone(bool ok) override {
    if (ok) {
      v1::AgentMessage message;
      message.Swap(&incoming_);  // the buffer is free for the next read at once
      session_->OnMessage(std::move(message));
    } else {
      session_->OnReadsDone(context_->IsCancelled()
                                ? "stream cancelled (agent gone or collector stopping)"
                                : "agent closed the stream without goodbye");
    }
  }
  void OnWriteDone(bool ok) override { link_->OnWriteDone(ok); }
  void OnCancel() override { link_->OnCancel(); }
  void OnDone() override {
    link_->OnDone();
    session_->OnStreamDone("stream ended");
    service_->open_streams_.fetch_sub(1, std::memory_order_relaxed);
    delete this;
  }

  v1::AgentMessage incoming_;

 private:
  grpc::CallbackServerContext* const context_;
  GrpcAgentService* const service_;
  const std::shared_ptr<ReactorLink> link_;
  std::shared_ptr<AgentSession> session_;
};

void ReactorLink::Send(v1::Control control) {
  base::MutexLock lock(&mu_);
  if (reactor_ == nullptr || finish_requested_) return;
  queue_.push_back(std::move(control));
  if (!writing_) WriteFrontLocked();
}

void ReactorLink::WriteFrontLocked() {
  writing_ = true;
  reactor_->StartWrite(&queue_.front());
}

void ReactorLink::RequestRead() {
  base::MutexLock lock(&mu_);
  if (reactor_ == nullptr || finished_) return;
  reactor_->StartRead(&reactor_->incoming_);
}

void ReactorLink::Finish(absl::Status status) {
  base::MutexLock lock(&mu_);
  if (reactor_ == nullptr || finish_requested_) return;
  finish_requested_ = true;
  finish_status_ = ToGrpcStatus(status);
  if (!writing_) FinishLocked(finish_status_);  // else once the queue is out
}

void ReactorLink::FinishLocked(const grpc::Status& status) {
  if (finished_) return;
  finished_ = true;
  reactor_->Finish(status);
}

void ReactorLink::OnWriteDone(bool ok) {
  base::MutexLock lock(&mu_);
  writing_ = false;
  if (reactor_ == nullptr) return;
  if (!ok) {
    // The agent is gone: nothing more can be written; end the call so that
    // OnDone follows.
    queue_.clear();
    FinishLocked(finish_requested_ ? finish_status_
                                   : grpc::Status(grpc::StatusCode::UNAVAILABLE, "write failed"));
    return;
  }
  queue_.pop_front();
  if (!queue_.empty()) {
    WriteFrontLocked();
  } else if (finish_requested_) {
    FinishLocked(finish_status_);
  }
}

void ReactorLink::OnCancel() {
  base::MutexLock lock(&mu_);
  if (reactor_ == nullptr) return;
  if (!finish_requested_) {
    finish_requested_ = true;
    finish_status_ = grpc::Status(grpc::StatusCode::CANCELLED, "stream cancelled");
  }
  // A write in flight fails now; OnWriteDone then finishes.
  if (!writing_) FinishLocked(finish_status_);
}

void ReactorLink::OnDone() {
  base::MutexLock lock(&mu_);
  reactor_ = nullptr;
  queue_.clear();
}

GrpcAgentService::GrpcAgentService(JobRegistry* registry, IngestBudget* budget,
                                   BadInputCounters* counters, AgentSessionOptions session_options)
    : registry_(registry),
      budget_(budget),
      counters_(counters),
      session_options_(session_options) {}

grpc::ServerBidiReactor<v1::AgentMessage, v1::Control>* GrpcAgentService::Connect(
    grpc::CallbackServerContext* context) {
  return new AgentStreamReactor(context, this);
}

}  // namespace trainscope::collector
