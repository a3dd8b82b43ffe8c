// Runs the built `trainscope` binary (path from TRAINSCOPE_BINARY) the way a
// user does, checking exit codes and output.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <string>

namespace {

using ::testing::HasSubstr;

struct Result {
  int exit_code = -1;
  std::string output;  // stdout and stderr together
};

// `env`: a prefix for the shell, "env -u NAME VAR=VALUE" style.
Result RunBinary(const std::string& args, const std::string& env = "") {
  const std::string command = env + " " + std::string(TRAINSCOPE_BINARY) + " " + args + " 2>&1";
  Result result;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return result;
  std::array<char, 4096> buffer;
  size_t n;
  while ((n = fread(buffer.data(), 1, buffer.size(), pipe)) > 0)
    result.output.append(buffer.data(), n);
  const int status = pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

TEST(TrainscopeBinaryTest, HelpListsSubcommands) {
  for (const char* args : {"--help", "", "help"}) {
    Result result = RunBinary(args);
    EXPECT_EQ(result.exit_code, 0) << args;
    EXPECT_THAT(result.output, HasSubstr("Usage: trainscope COMMAND"));
    EXPECT_THAT(result.output, HasSubstr("replay"));
  }
}

TEST(TrainscopeBinaryTest, Version) {
  Result result = RunBinary("--version");
  EXPECT_EQ(result.exit_code, 0);
  EXPECT_THAT(result.output, HasSubstr("trainscope 0.1.0"));
}

TEST(TrainscopeBinaryTest, HaltHelp) {
  Result result = RunBinary("halt --help");
  EXPECT_EQ(result.exit_code, 0);
  EXPECT_THAT(result.output, HasSubstr("Usage: trainscope halt JOB [flags]"));
  EXPECT_THAT(result.output, HasSubstr("--reason TEXT"));
  EXPECT_THAT(result.output, HasSubstr("--token-file FILE"));
}

TEST(TrainscopeBinaryTest, UnknownSubcommandExits2) {
  Result result = RunBinary("frobnicate");
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_THAT(result.output, HasSubstr("unknown command 'frobnicate'"));
}

TEST(TrainscopeBinaryTest, UnknownFlagExits2NamingIt) {
  Result result = RunBinary("jobs --bogus");
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_THAT(result.output, HasSubstr("unknown flag --bogus"));
}

TEST(TrainscopeBinaryTest, UnreachableCollectorFailsFast) {
  // Port 1 on loopback: nothing listens, the connection is refused at once;
  // --timeout 1 bounds it anyway.
  Result result = RunBinary("jobs --collector 127.0.0.1:1 --timeout 1");
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_THAT(result.output,
              HasSubstr("cannot reach the collector at 127.0.0.1:1 (is trainscope-collector "
                        "running? set --collector or TRAINSCOPE_COLLECTOR)"));
}

TEST(TrainscopeBinaryTest, MissingTokenExplainsTheWays) {
  // No token anywhere: not in the environment, and no job key this user can
  // read (the collector's default one derives the job's token otherwise).
  Result result = RunBinary("halt J --reason test",
                            "env -u TRAINSCOPE_TOKEN -u TRAINSCOPE_JOB_SECRET "
                            "-u TRAINSCOPE_JOB_SECRET_FILE -u TRAINSCOPE_JOB_KEY_FILE "
                            "XDG_CONFIG_HOME=/nonexistent/trainscope-test");
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_THAT(result.output, HasSubstr("--token"));
  EXPECT_THAT(result.output, HasSubstr("TRAINSCOPE_TOKEN"));
  EXPECT_THAT(result.output, HasSubstr("TRAINSCOPE_JOB_SECRET"));
}

}  // namespace
