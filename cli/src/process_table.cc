#include "trainscope/cli/process_table.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace trainscope::cli {
namespace {

constexpr char kPtraceScopeHint[] =
    "see /proc/sys/kernel/yama/ptrace_scope (0: any process of the same user; 1: only "
    "descendants; 2: only root/CAP_SYS_PTRACE; 3: never) or run as root";

bool ReadWholeFile(const std::filesystem::path& path, std::string* out, int* error) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    *error = errno;
    return false;
  }
  std::ostringstream buffer;
  buffer << in.rdbuf();
  *out = buffer.str();
  return true;
}

std::string Basename(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// "/usr/bin/python3.11", "python3", "python" (but not "pythonista-helper" et al.
// without a digit or end after "python").
bool LooksLikePythonBinary(const std::string& exe) {
  std::string base = Basename(exe);
  if (absl::EndsWith(base, " (deleted)")) base.resize(base.size() - 10);
  if (!absl::StartsWith(base, "python")) return false;
  const std::string rest = base.substr(6);
  return rest.empty() || std::all_of(rest.begin(), rest.end(), [](char c) {
           return (c >= '0' && c <= '9') || c == '.' || c == 'm' || c == 'd';
         });
}

std::optional<int> PtraceScope(const std::filesystem::path& root) {
  std::string text;
  int error = 0;
  if (!ReadWholeFile(root / "sys/kernel/yama/ptrace_scope", &text, &error)) return std::nullopt;
  int value = 0;
  if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(text), &value)) return std::nullopt;
  return value;
}

}  // namespace

std::string ProcessInfo::Describe() const {
  std::string what = cmdline.empty() ? name : cmdline;
  if (what.size() > 120) what = absl::StrCat(what.substr(0, 117), "...");
  return absl::StrCat(pid, " (", what, ")");
}

absl::StatusOr<pid_t> ParsePid(const std::string& text) {
  int64_t value = 0;
  if (!absl::SimpleAtoi(text, &value) || value <= 0 || value > (1 << 22)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--pid expects a process id (a positive whole number), got '", text, "'"));
  }
  return static_cast<pid_t>(value);
}

ProcessTable::ProcessTable(std::filesystem::path proc_root) : root_(std::move(proc_root)) {}

absl::StatusOr<ProcessInfo> ProcessTable::Inspect(pid_t pid) const {
  const std::filesystem::path dir = root_ / std::to_string(pid);
  ProcessInfo info;
  info.pid = pid;
  std::string status;
  int error = 0;
  if (!ReadWholeFile(dir / "status", &status, &error)) {
    return absl::NotFoundError(absl::StrCat("no process with pid ", pid, " (", dir.string(),
                                            " does not exist: it never ran or has exited)"));
  }
  for (absl::string_view line : absl::StrSplit(status, '\n')) {
    auto value_of = [&](absl::string_view key) -> std::optional<absl::string_view> {
      if (!absl::ConsumePrefix(&line, key)) return std::nullopt;
      return absl::StripAsciiWhitespace(line);
    };
    if (auto v = value_of("Name:")) {
      info.name = std::string(*v);
    } else if (auto v = value_of("State:")) {
      if (!v->empty()) info.state = (*v)[0];
    } else if (auto v = value_of("PPid:")) {
      (void)absl::SimpleAtoi(*v, &info.parent);
    } else if (auto v = value_of("TracerPid:")) {
      (void)absl::SimpleAtoi(*v, &info.tracer);
    } else if (auto v = value_of("Uid:")) {
      std::vector<absl::string_view> ids =
          absl::StrSplit(*v, absl::ByAnyChar(" \t"), absl::SkipEmpty());
      if (!ids.empty()) (void)absl::SimpleAtoi(ids[0], &info.uid);
    }
  }
  std::string cmdline;
  if (ReadWholeFile(dir / "cmdline", &cmdline, &error)) {
    while (!cmdline.empty() && cmdline.back() == '\0') cmdline.pop_back();
    std::replace(cmdline.begin(), cmdline.end(), '\0', ' ');
    info.cmdline = std::move(cmdline);
  }
  std::error_code ec;
  const std::filesystem::path exe = std::filesystem::read_symlink(dir / "exe", ec);
  if (!ec) info.exe = exe.string();
  std::string maps;
  if (ReadWholeFile(dir / "maps", &maps, &error) && !maps.empty()) {
    info.maps_readable = true;
    info.python = LooksLikePythonBinary(info.exe) || absl::StrContains(maps, "/libpython");
    info.torch = absl::StrContains(maps, "/libtorch");
  } else {
    info.maps_error = maps.empty() && error == 0 ? "it is empty (a kernel thread or an exiting "
                                                   "process)"
                                                 : std::strerror(error);
    info.python = LooksLikePythonBinary(info.exe);
  }
  return info;
}

absl::Status ProcessTable::CheckInjectable(const ProcessInfo& info) const {
  const std::string who = absl::StrCat("pid ", info.Describe());
  if (info.state == 'Z' || info.state == 'X') {
    return absl::FailedPreconditionError(absl::StrCat(who, " has exited (zombie)"));
  }
  if (!info.maps_readable) {
    return absl::PermissionDeniedError(absl::StrCat(
        who, ": cannot read ", (root_ / std::to_string(info.pid) / "maps").string(), " (",
        info.maps_error, "); not allowed to inspect it: run as its user or as root; ",
        kPtraceScopeHint));
  }
  if (!info.python) {
    return absl::FailedPreconditionError(
        absl::StrCat(who, " is not a Python process: its executable is ",
                     info.exe.empty() ? "unknown" : info.exe, " and it maps no libpython"));
  }
  if (!info.torch) {
    return absl::FailedPreconditionError(
        absl::StrCat(who, " is a Python process but has not loaded PyTorch (no libtorch in ",
                     (root_ / std::to_string(info.pid) / "maps").string(),
                     "); trainscope attaches to PyTorch training processes"));
  }
  if (info.tracer != 0) {
    return absl::FailedPreconditionError(
        absl::StrCat(who, " is already being traced by pid ", info.tracer,
                     " (a debugger or profiler); detach it first"));
  }
  const bool root = geteuid() == 0;
  if (!root && info.uid != getuid()) {
    return absl::PermissionDeniedError(
        absl::StrCat(who, " belongs to uid ", info.uid, ", not to you (uid ", getuid(),
                     "): ptrace would fail with EPERM; run as that user or as root"));
  }
  if (const std::optional<int> scope = PtraceScope(root_); scope.has_value()) {
    bool allowed = *scope == 0 || (root && *scope <= 2);
    if (!allowed && *scope == 1) {
      // Scope 1 lets a process trace its descendants only.
      pid_t p = info.pid;
      for (int hops = 0; hops < 64 && p > 1 && !allowed; ++hops) {
        absl::StatusOr<ProcessInfo> up = Inspect(p);
        if (!up.ok()) break;
        p = up->parent;
        allowed = p == getpid();
      }
    }
    if (!allowed) {
      return absl::PermissionDeniedError(absl::StrCat(
          who, ": ptrace is not permitted (EPERM): /proc/sys/kernel/yama/ptrace_scope is ", *scope,
          "; ", kPtraceScopeHint));
    }
  }
  return absl::OkStatus();
}

std::vector<pid_t> ProcessTable::Pids() const {
  std::vector<pid_t> pids;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(root_, ec)) {
    pid_t pid = 0;
    if (absl::SimpleAtoi(entry.path().filename().string(), &pid) && pid > 0) pids.push_back(pid);
  }
  std::sort(pids.begin(), pids.end());
  return pids;
}

absl::StatusOr<std::vector<ProcessInfo>> ProcessTable::MatchTrainingProcesses(
    const std::string& pattern) const {
  std::map<pid_t, ProcessInfo> all;
  for (pid_t pid : Pids()) {
    absl::StatusOr<ProcessInfo> info = Inspect(pid);
    if (info.ok()) all.emplace(pid, *std::move(info));
  }
  // Never ourselves or the shell that ran us (its command line holds the pattern).
  std::set<pid_t> excluded;
  for (pid_t p = getpid(); p > 0 && excluded.insert(p).second;) {
    auto it = all.find(p);
    if (it == all.end()) break;
    p = it->second.parent;
  }
  std::multimap<pid_t, pid_t> children;
  for (const auto& [pid, info] : all) children.emplace(info.parent, pid);

  std::set<pid_t> matched;
  for (const auto& [pid, info] : all) {
    if (excluded.count(pid)) continue;
    if (absl::StrContains(info.cmdline, pattern) || absl::StrContains(info.name, pattern)) {
      matched.insert(pid);
    }
  }
  if (matched.empty()) {
    return absl::NotFoundError(
        absl::StrCat("no process matches '", pattern, "' (by command line or name)"));
  }
  // Ranks started by a matched launcher need not match themselves
  // (torch.multiprocessing.spawn children run `python -c ...`).
  std::set<pid_t> related = matched;
  std::vector<pid_t> stack(matched.begin(), matched.end());
  while (!stack.empty()) {
    const pid_t p = stack.back();
    stack.pop_back();
    auto [begin, end] = children.equal_range(p);
    for (auto it = begin; it != end; ++it) {
      if (!excluded.count(it->second) && related.insert(it->second).second) {
        stack.push_back(it->second);
      }
    }
  }
  std::set<pid_t> candidates;
  for (pid_t pid : related) {
    const ProcessInfo& info = all.at(pid);
    if (info.python && info.torch) candidates.insert(pid);
  }
  // A candidate with a candidate below it is a launcher, not a rank.
  std::set<pid_t> launchers;
  for (pid_t pid : candidates) {
    for (pid_t p = all.at(pid).parent; p > 0;) {
      if (candidates.count(p)) launchers.insert(p);
      auto it = all.find(p);
      if (it == all.end() || it->second.parent == p) break;
      p = it->second.parent;
    }
  }
  std::vector<ProcessInfo> out;
  for (pid_t pid : candidates) {
    if (!launchers.count(pid)) out.push_back(all.at(pid));
  }
  if (out.empty()) {
    std::vector<std::string> seen;
    for (pid_t pid : matched) {
      const ProcessInfo& info = all.at(pid);
      seen.push_back(absl::StrCat(info.Describe(), !info.python  ? ": not Python"
                                                   : !info.torch ? ": no PyTorch loaded"
                                                                 : ""));
      if (seen.size() == 5) break;
    }
    return absl::NotFoundError(absl::StrCat("no PyTorch process matches '", pattern, "'; matched ",
                                            matched.size(), ": ", absl::StrJoin(seen, "; "),
                                            matched.size() > seen.size() ? "; ..." : ""));
  }
  return out;
}

}  // namespace trainscope::cli
