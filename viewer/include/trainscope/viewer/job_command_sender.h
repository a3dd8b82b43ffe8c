// Sends the Controls panel's commands for one job to the collector's
// Commands service (client::CommandsClient) on a worker thread of its own,
// so no RPC runs on the UI thread: recording on/off, the loss-contribution
// hooks on/off, and halt. The outcome, as the one line the panel shows, goes
// to a callback on the worker; the caller moves it to its own thread (the
// panel posts it to the UI thread's event loop).
//
// Usage:
//   JobCommandSender sender("127.0.0.1:7070", "job-1");
//   sender.Send("halt", token, [](JobCommandSender::Outcome outcome) { ... });
//
// Threading: Send and the destructor from one thread (the UI thread); one
// command at a time: Send waits for the previous one (each has a 10 s
// deadline) and the destructor joins the last.
#ifndef TRAINSCOPE_VIEWER_JOB_COMMAND_SENDER_H_
#define TRAINSCOPE_VIEWER_JOB_COMMAND_SENDER_H_

#include <cstdint>
#include <functional>
#include <string>
#include <thread>

#include "trainscope/client/client_security.h"

namespace trainscope::viewer {

class JobCommandSender {
 public:
  struct Outcome {
    bool ok = false;
    std::string text;  // "halt: 4 ranks reached ..." or "halt failed: ..."
  };

  // `security`: TLS and the read token when the collector requires them.
  JobCommandSender(std::string collector, std::string job_id, client::ClientSecurity security = {});
  ~JobCommandSender();
  JobCommandSender(const JobCommandSender&) = delete;
  JobCommandSender& operator=(const JobCommandSender&) = delete;

  // `command` is the collector's name for it: "enable", "disable",
  // "enable-loss-contribution", "disable-loss-contribution" or "halt".
  void Send(const std::string& command, const std::string& token,
            std::function<void(Outcome)> done);

  // The line for a command the collector accepted: not ok when it reached
  // no rank (a halt of a job with no connected rank stops nothing now).
  static Outcome Describe(const std::string& command, uint32_t ranks_reached,
                          const std::string& message);

 private:
  // The RPC itself, on the worker.
  Outcome Run(const std::string& command, const std::string& token) const;

  const std::string collector_;
  const std::string job_id_;
  const client::ClientSecurity security_;
  std::thread worker_;
};

}  // namespace trainscope::viewer

#endif  // TRAINSCOPE_VIEWER_JOB_COMMAND_SENDER_H_
