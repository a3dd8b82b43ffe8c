#include "trainscope/cli/python_injector.h"

#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <optional>
#include <regex>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "google/protobuf/util/json_util.h"
#include "trainscope/cli/child_process.h"

namespace trainscope::cli {
namespace {

// Runs inside the target, on its main thread (see the header).
constexpr char kBootstrap[] = R"PY(# trainscope attach/detach: runs inside the target process.
import json, os, sys, time


def _trainscope_inject(directory, pid):
    status_path = os.path.join(directory, 'status.json')

    def write(result):
        tmp = status_path + '.tmp'
        with open(tmp, 'w') as f:
            json.dump(result, f)
        os.replace(tmp, status_path)

    try:
        with open(os.path.join(directory, 'config.json')) as f:
            config = json.load(f)
        if time.time() > config['deadline_unix']:
            return  # the CLI gave up: do nothing rather than act by surprise later
        open(os.path.join(directory, 'started'), 'w').close()
        python_dir = config['python_dir']
        added = python_dir not in sys.path
        if added:
            sys.path.insert(0, python_dir)
        try:
            import trainscope.remote as remote
        finally:
            if added and python_dir in sys.path:
                sys.path.remove(python_dir)
        if config['action'] == 'attach':
            result = remote.attach_from_outside(config)
        else:
            result = remote.detach_from_outside()
        out = {'ok': True, 'pid': os.getpid()}
        out.update(result or {})
        write(out)
    except BaseException as e:
        try:
            import traceback
            write({'ok': False,
                   'error': ''.join(traceback.format_exception_only(type(e), e)).strip(),
                   'traceback': traceback.format_exc()[-4000:]})
        except BaseException:
            pass


_trainscope_inject(__trainscope_dir__, __trainscope_pid__)
)PY";

constexpr char kPtraceHint[] =
    "see /proc/sys/kernel/yama/ptrace_scope (1: only descendants, 2: only root, 3: never; "
    "`sysctl kernel.yama.ptrace_scope=0` allows tracing your own processes) or run as root; "
    "in a container, ptrace needs CAP_SYS_PTRACE";

// A C string literal for gdb's expression parser.
std::string GdbStringLiteral(const std::string& text) {
  std::string out = "\"";
  for (char c : text) {
    switch (c) {
      case '\\':
        out += "\\\\";
        break;
      case '"':
        out += "\\\"";
        break;
      case '\n':
        out += "\\n";
        break;
      default:
        out += c;
    }
  }
  return out + "\"";
}

bool SafePathForPython(const std::string& path) {
  for (char c : path) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '/' || c == '.' || c == '_' || c == '-';
    if (!ok) return false;
  }
  return !path.empty();
}

absl::Status WriteFile(const std::filesystem::path& path, const std::string& content, uid_t owner) {
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) {
    return absl::InternalError(
        absl::StrCat("cannot create ", path.string(), ": ", std::strerror(errno)));
  }
  size_t done = 0;
  while (done < content.size()) {
    const ssize_t n = write(fd, content.data() + done, content.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int error = errno;
      close(fd);
      return absl::InternalError(
          absl::StrCat("cannot write ", path.string(), ": ", std::strerror(error)));
    }
    done += static_cast<size_t>(n);
  }
  if (geteuid() == 0 && owner != 0) (void)fchown(fd, owner, static_cast<gid_t>(-1));
  close(fd);
  return absl::OkStatus();
}

// One target's private directory: mode 0700, owned by the target's user.
class PrivateDir {
 public:
  static absl::StatusOr<PrivateDir> Create(const std::filesystem::path& parent, uid_t owner) {
    std::string pattern = (parent / "trainscope-inject-XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr) {
      return absl::InternalError(absl::StrCat("cannot create a directory in ", parent.string(),
                                              ": ", std::strerror(errno)));
    }
    if (geteuid() == 0 && owner != 0 &&
        chown(pattern.c_str(), owner, static_cast<gid_t>(-1)) != 0) {
      const int error = errno;
      std::filesystem::remove_all(pattern);
      return absl::InternalError(
          absl::StrCat("cannot hand ", pattern, " to uid ", owner, ": ", std::strerror(error)));
    }
    return PrivateDir(pattern);
  }
  PrivateDir(PrivateDir&& other) noexcept : path_(std::move(other.path_)) { other.path_.clear(); }
  PrivateDir& operator=(PrivateDir&&) = delete;
  ~PrivateDir() {
    std::error_code ec;
    if (!path_.empty()) std::filesystem::remove_all(path_, ec);
  }
  const std::filesystem::path& path() const { return path_; }

 private:
  explicit PrivateDir(std::filesystem::path path) : path_(std::move(path)) {}
  std::filesystem::path path_;
};

bool ProcessGone(pid_t pid) { return kill(pid, 0) != 0 && errno == ESRCH; }

struct Pending {
  pid_t pid = 0;
  std::optional<PrivateDir> dir;
  std::optional<ChildProcess> gdb;
  absl::Status status;  // set once this target is settled
  bool settled = false;
  google::protobuf::Struct result;
};

}  // namespace

const char* PythonInjector::BootstrapSource() { return kBootstrap; }

std::string PythonInjector::PendingCallSource(const std::filesystem::path& dir, pid_t pid) {
  const std::string d = dir.string();
  return absl::StrCat("try:\n exec(compile(open('", d,
                      "/bootstrap.py').read(),'trainscope-bootstrap','exec'),"
                      "{'__name__':'__trainscope_bootstrap__','__trainscope_dir__':'",
                      d, "','__trainscope_pid__':", pid, "})\nexcept BaseException:\n pass\n");
}

std::vector<std::string> PythonInjector::GdbArgv(pid_t pid, const std::string& source) const {
  return {options_.gdb, "-nx", "-batch", "-q",
          // Loading every library's symbols (libtorch's are huge) takes ~10 s;
          // the Python C API is in the executable or libpython, strdup in libc.
          "-iex", "set auto-solib-add off", "-iex", "set debuginfod enabled off", "-iex",
          "set pagination off", "-iex", "set confirm off", "-p", std::to_string(pid), "-ex",
          "sharedlibrary libc\\.so", "-ex", "sharedlibrary libpython", "-ex",
          absl::StrCat("call (int)Py_AddPendingCall((int(*)(void*))PyRun_SimpleString, "
                       "(void*)(char*)strdup(",
                       GdbStringLiteral(source), "))"),
          "-ex", "detach", "-ex", "quit"};
}

absl::Status PythonInjector::InterpretGdbOutput(pid_t pid, const std::string& output) {
  // The call prints "$1 = <return value>".
  static const std::regex kResult(R"(^\$[0-9]+ = (-?[0-9]+)\s*$)");
  std::optional<int> returned;
  for (absl::string_view line : absl::StrSplit(output, '\n')) {
    std::smatch match;
    const std::string text(line);
    if (std::regex_match(text, match, kResult)) {
      int value = 0;
      if (absl::SimpleAtoi(match[1].str(), &value)) returned = value;
    }
  }
  if (returned.has_value()) {
    if (*returned == 0) return absl::OkStatus();
    return absl::UnavailableError(
        absl::StrCat("pid ", pid, ": Py_AddPendingCall returned ", *returned,
                     " (its queue of pending calls is full); try again in a moment"));
  }
  if (absl::StrContains(output, "Operation not permitted")) {
    return absl::PermissionDeniedError(absl::StrCat(
        "pid ", pid, ": gdb may not attach (ptrace: Operation not permitted); ", kPtraceHint));
  }
  if (absl::StrContains(output, "No such process")) {
    return absl::NotFoundError(absl::StrCat("pid ", pid, " exited before gdb could attach"));
  }
  if (absl::StrContains(output, "No symbol \"Py_AddPendingCall\"") ||
      absl::StrContains(output, "No symbol \"PyRun_SimpleString\"")) {
    return absl::FailedPreconditionError(
        absl::StrCat("pid ", pid,
                     ": gdb found no Python C API (Py_AddPendingCall, PyRun_SimpleString) in "
                     "its executable or libpython; is it a CPython process?"));
  }
  if (absl::StrContains(output, "No symbol \"strdup\"")) {
    return absl::FailedPreconditionError(
        absl::StrCat("pid ", pid, ": gdb found no strdup (libc not loaded?)"));
  }
  // Show gdb's last lines: they say what it could not do.
  std::vector<absl::string_view> lines = absl::StrSplit(output, '\n', absl::SkipWhitespace());
  const size_t from = lines.size() > 4 ? lines.size() - 4 : 0;
  std::vector<absl::string_view> tail(lines.begin() + from, lines.end());
  return absl::InternalError(
      absl::StrCat("pid ", pid, ": gdb could not inject the call: ",
                   tail.empty() ? "(no output)" : absl::StrJoin(tail, " | ")));
}

absl::Status PythonInjector::CheckGdbCanCall() const {
  absl::StatusOr<ChildProcess> canary = ChildProcess::Start({"sleep", "30"});
  if (!canary.ok()) return absl::OkStatus();
  absl::StatusOr<ChildProcess> gdb = ChildProcess::Start(
      {options_.gdb, "-nx", "-batch", "-q", "-iex", "set auto-solib-add off", "-iex",
       "set debuginfod enabled off", "-p", std::to_string(canary->pid()), "-ex",
       "sharedlibrary libc\\.so", "-ex", "call (int)getpid()", "-ex", "detach", "-ex", "quit"});
  if (!gdb.ok()) return absl::OkStatus();
  const ChildResult result = gdb->Wait(absl::Now() + options_.timeout);
  if (absl::StrContains(result.output, "Couldn't write extended state status")) {
    return absl::FailedPreconditionError(absl::StrCat(
        "`", options_.gdb,
        "` cannot call a function in a process on this machine: it fails to restore the CPU's "
        "extended register state afterwards (\"Couldn't write extended state status\", seen "
        "with gdb 13 on CPUs with AMX) and leaves the process broken, so trainscope will not "
        "try it on your job. Use a newer gdb (--gdb PATH), or start the job with trainscope "
        "(`trainscope run`, or TRAINSCOPE_COLLECTOR set) and switch recording on and off "
        "with `trainscope enable/disable`"));
  }
  return absl::OkStatus();
}

std::vector<InjectionOutcome> PythonInjector::Run(const std::vector<ProcessInfo>& targets,
                                                  const InjectionRequest& request) const {
  const absl::Time start = absl::Now();
  const absl::Time deadline = start + options_.timeout;
  const bool attach = request.action == InjectionRequest::Action::kAttach;
  if (absl::Status can_call = targets.empty() ? absl::OkStatus() : CheckGdbCanCall();
      !can_call.ok()) {
    std::vector<InjectionOutcome> refused(targets.size());
    for (size_t i = 0; i < targets.size(); ++i) {
      refused[i].pid = targets[i].pid;
      refused[i].status = can_call;
    }
    return refused;
  }
  std::vector<Pending> pending(targets.size());
  auto settle = [](Pending& p, absl::Status status) {
    if (p.settled) return;
    p.status = std::move(status);
    p.settled = true;
    p.gdb.reset();
  };
  // Everything the targets need goes to disk first; then every gdb starts.
  for (size_t i = 0; i < targets.size(); ++i) {
    Pending& p = pending[i];
    p.pid = targets[i].pid;
    std::filesystem::path parent = options_.temp_dir;
    if (!SafePathForPython(parent.string())) parent = "/tmp";
    absl::StatusOr<PrivateDir> dir = PrivateDir::Create(parent, targets[i].uid);
    if (!dir.ok()) {
      settle(p, dir.status());
      continue;
    }
    p.dir.emplace(*std::move(dir));
    google::protobuf::Struct config = request.config;
    auto& fields = *config.mutable_fields();
    fields["action"].set_string_value(attach ? "attach" : "detach");
    fields["python_dir"].set_string_value(request.python_dir.string());
    fields["deadline_unix"].set_number_value(static_cast<double>(absl::ToUnixMicros(deadline)) /
                                             1e6);
    fields["pid"].set_number_value(p.pid);
    std::string json;
    google::protobuf::util::JsonPrintOptions print;
    if (!google::protobuf::util::MessageToJsonString(config, &json, print).ok()) {
      settle(p, absl::InternalError("cannot encode the injection config as JSON"));
      continue;
    }
    absl::Status written = WriteFile(p.dir->path() / "config.json", json, targets[i].uid);
    if (written.ok()) {
      written = WriteFile(p.dir->path() / "bootstrap.py", kBootstrap, targets[i].uid);
    }
    if (!written.ok()) {
      settle(p, written);
      continue;
    }
    absl::StatusOr<ChildProcess> gdb =
        ChildProcess::Start(GdbArgv(p.pid, PendingCallSource(p.dir->path(), p.pid)));
    if (!gdb.ok()) {
      settle(p,
             absl::FailedPreconditionError(absl::StrCat(
                 "cannot run gdb (", gdb.status().message(),
                 "); install it (Debian package gdb, see scripts/setup.sh) or give --gdb PATH")));
      continue;
    }
    p.gdb.emplace(*std::move(gdb));
  }
  // gdb: each finishes in about a second; a hung one is killed at the deadline.
  for (Pending& p : pending) {
    if (p.settled) continue;
    ChildResult result = p.gdb->Wait(deadline);
    if (result.timed_out) {
      // A killed tracer detaches its tracee; make sure it is not left stopped.
      kill(p.pid, SIGCONT);
      settle(p, absl::DeadlineExceededError(
                    absl::StrCat("pid ", p.pid, ": gdb did not finish within ",
                                 absl::FormatDuration(options_.timeout),
                                 " and was killed (raise --timeout on a slow or loaded machine)")));
      continue;
    }
    p.gdb.reset();
    absl::Status injected = InterpretGdbOutput(p.pid, result.output);
    if (!injected.ok()) settle(p, injected);
  }
  // Then the targets themselves: each writes status.json once its main
  // thread has run the call.
  const absl::Duration grace = absl::Seconds(10);  // for a call that started before the deadline
  while (true) {
    bool waiting = false;
    const absl::Time now = absl::Now();
    for (Pending& p : pending) {
      if (p.settled) continue;
      const std::filesystem::path status_path = p.dir->path() / "status.json";
      std::ifstream in(status_path);
      if (in) {
        std::stringstream text;
        text << in.rdbuf();
        google::protobuf::Struct result;
        google::protobuf::util::JsonParseOptions parse;
        parse.ignore_unknown_fields = true;
        if (!google::protobuf::util::JsonStringToMessage(text.str(), &result, parse).ok()) {
          settle(p, absl::InternalError(
                        absl::StrCat("pid ", p.pid, ": unreadable ", status_path.string())));
          continue;
        }
        const auto& fields = result.fields();
        auto ok = fields.find("ok");
        if (ok != fields.end() && ok->second.bool_value()) {
          p.result = std::move(result);
          settle(p, absl::OkStatus());
        } else {
          auto error = fields.find("error");
          settle(p, absl::AbortedError(absl::StrCat(
                        "pid ", p.pid, ": trainscope.remote.",
                        attach ? "attach_from_outside" : "detach_from_outside", " failed: ",
                        error != fields.end() ? error->second.string_value() : "(no message)")));
        }
        continue;
      }
      if (ProcessGone(p.pid)) {
        settle(p, absl::AbortedError(absl::StrCat("pid ", p.pid, " exited before it ran the ",
                                                  attach ? "attach" : "detach")));
        continue;
      }
      const bool started = std::filesystem::exists(p.dir->path() / "started");
      if (now >= deadline + (started ? grace : absl::ZeroDuration())) {
        settle(p, absl::DeadlineExceededError(absl::StrCat(
                      "pid ", p.pid,
                      started ? ": the call started but did not finish within "
                              : ": did not run the injected call within ",
                      absl::FormatDuration(started ? options_.timeout + grace : options_.timeout),
                      started ? ""
                              : " (its main thread is not running Python code: blocked in a "
                                "C call, a collective or a sleep?); it will not run it later",
                      "")));
        continue;
      }
      waiting = true;
    }
    if (!waiting) break;
    if (options_.stop != nullptr && options_.stop->load(std::memory_order_relaxed)) {
      for (Pending& p : pending) settle(p, absl::CancelledError("interrupted"));
      break;
    }
    absl::SleepFor(absl::Milliseconds(20));
  }
  std::vector<InjectionOutcome> outcomes;
  for (Pending& p : pending) {
    InjectionOutcome outcome;
    outcome.pid = p.pid;
    outcome.status = p.status;
    outcome.result = std::move(p.result);
    outcomes.push_back(std::move(outcome));
  }
  return outcomes;
}

}  // namespace trainscope::cli
