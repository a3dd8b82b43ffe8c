#include "trainscope/base/arg_parser.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace trainscope::base {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

ArgParser MakeParser() {
  ArgParser parser("trainscope halt", "Halt a job.");
  parser.AddPositional("JOB", "the job");
  parser.AddPositional("EXTRA", "optional extra", /*required=*/false);
  parser.AddFlag("reason", "TEXT", "why");
  parser.AddFlag("timeout", "SECONDS", "deadline", "10");
  parser.AddRepeatedFlag("kinds", "LIST", "kinds");
  parser.AddBoolFlag("json", "json output");
  return parser;
}

TEST(ArgParserTest, PositionalsAndBothValueForms) {
  absl::StatusOr<ParsedArgs> args =
      MakeParser().Parse({"job-1", "--reason", "too slow", "--timeout=3"});
  ASSERT_TRUE(args.ok()) << args.status();
  EXPECT_EQ(args->Positional("JOB"), "job-1");
  EXPECT_FALSE(args->Positional("EXTRA").has_value());
  EXPECT_EQ(args->Value("reason"), "too slow");
  EXPECT_EQ(args->Value("timeout"), "3");
  EXPECT_FALSE(args->help_requested());
}

TEST(ArgParserTest, DefaultsApplyWhenAbsentButHasSaysNotGiven) {
  absl::StatusOr<ParsedArgs> args = MakeParser().Parse({"j"});
  ASSERT_TRUE(args.ok());
  EXPECT_EQ(args->Value("timeout"), "10");
  EXPECT_FALSE(args->Has("timeout"));
  EXPECT_FALSE(args->Value("reason").has_value());
}

TEST(ArgParserTest, FlagsMayComeBeforePositionals) {
  absl::StatusOr<ParsedArgs> args = MakeParser().Parse({"--json", "j", "x"});
  ASSERT_TRUE(args.ok());
  EXPECT_TRUE(args->Bool("json"));
  EXPECT_EQ(args->Positional("JOB"), "j");
  EXPECT_EQ(args->Positional("EXTRA"), "x");
}

TEST(ArgParserTest, BooleanForms) {
  EXPECT_FALSE(MakeParser().Parse({"j"})->Bool("json"));
  EXPECT_TRUE(MakeParser().Parse({"j", "--json"})->Bool("json"));
  EXPECT_TRUE(MakeParser().Parse({"j", "--json=true"})->Bool("json"));
  EXPECT_FALSE(MakeParser().Parse({"j", "--json=false"})->Bool("json"));
  absl::StatusOr<ParsedArgs> bad = MakeParser().Parse({"j", "--json=maybe"});
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("--json"));
  EXPECT_THAT(bad.status().message(), HasSubstr("maybe"));
}

TEST(ArgParserTest, BooleanDoesNotSwallowTheNextArgument) {
  absl::StatusOr<ParsedArgs> args = MakeParser().Parse({"--json", "j"});
  ASSERT_TRUE(args.ok());
  EXPECT_EQ(args->Positional("JOB"), "j");
}

TEST(ArgParserTest, RepeatedFlagKeepsEveryValueInOrder) {
  absl::StatusOr<ParsedArgs> args =
      MakeParser().Parse({"j", "--kinds", "job", "--kinds=rank,command"});
  ASSERT_TRUE(args.ok());
  EXPECT_THAT(args->Values("kinds"), ElementsAre("job", "rank,command"));
  EXPECT_EQ(args->Value("kinds"), "rank,command");
}

TEST(ArgParserTest, LastValueWinsForASingleValueFlag) {
  absl::StatusOr<ParsedArgs> args = MakeParser().Parse({"j", "--reason", "a", "--reason", "b"});
  ASSERT_TRUE(args.ok());
  EXPECT_EQ(args->Value("reason"), "b");
}

TEST(ArgParserTest, DoubleDashEndsOptions) {
  absl::StatusOr<ParsedArgs> args = MakeParser().Parse({"--", "--json", "-x"});
  ASSERT_TRUE(args.ok()) << args.status();
  EXPECT_EQ(args->Positional("JOB"), "--json");
  EXPECT_EQ(args->Positional("EXTRA"), "-x");
  EXPECT_FALSE(args->Bool("json"));
}

TEST(ArgParserTest, ValueMayStartWithASingleDashOrBeADash) {
  absl::StatusOr<ParsedArgs> args = MakeParser().Parse({"j", "--reason", "-1", "--timeout", "-"});
  ASSERT_TRUE(args.ok()) << args.status();
  EXPECT_EQ(args->Value("reason"), "-1");
  EXPECT_EQ(args->Value("timeout"), "-");
}

TEST(ArgParserTest, UnknownFlagNamesItAndListsValidOnes) {
  absl::StatusOr<ParsedArgs> args = MakeParser().Parse({"j", "--resaon", "x"});
  ASSERT_FALSE(args.ok());
  EXPECT_TRUE(absl::IsInvalidArgument(args.status()));
  EXPECT_THAT(args.status().message(), HasSubstr("unknown flag --resaon"));
  EXPECT_THAT(args.status().message(), HasSubstr("trainscope halt"));
  EXPECT_THAT(args.status().message(), HasSubstr("did you mean --reason?"));
  EXPECT_THAT(args.status().message(), HasSubstr("--reason, --timeout, --kinds, --json, --help"));
}

TEST(ArgParserTest, UnknownFlagFarFromAnyGetsNoSuggestion) {
  absl::StatusOr<ParsedArgs> args = MakeParser().Parse({"j", "--zzzzzzzz"});
  ASSERT_FALSE(args.ok());
  EXPECT_THAT(args.status().message(), testing::Not(HasSubstr("did you mean")));
}

TEST(ArgParserTest, UnknownShortFlag) {
  absl::StatusOr<ParsedArgs> args = MakeParser().Parse({"j", "-x"});
  ASSERT_FALSE(args.ok());
  EXPECT_THAT(args.status().message(), HasSubstr("unknown flag -x"));
}

TEST(ArgParserTest, UnknownFlagWithInlineValueNamesOnlyTheFlag) {
  absl::StatusOr<ParsedArgs> args = MakeParser().Parse({"j", "--nope=1"});
  ASSERT_FALSE(args.ok());
  EXPECT_THAT(args.status().message(), HasSubstr("unknown flag --nope for"));
}

TEST(ArgParserTest, MissingValueAtTheEnd) {
  absl::StatusOr<ParsedArgs> args = MakeParser().Parse({"j", "--reason"});
  ASSERT_FALSE(args.ok());
  EXPECT_THAT(args.status().message(), HasSubstr("flag --reason needs a value (--reason TEXT)"));
}

TEST(ArgParserTest, MissingValueBeforeAnotherFlag) {
  absl::StatusOr<ParsedArgs> args = MakeParser().Parse({"j", "--reason", "--json"});
  ASSERT_FALSE(args.ok());
  EXPECT_THAT(args.status().message(), HasSubstr("flag --reason needs a value"));
}

TEST(ArgParserTest, EmptyInlineValueIsAValue) {
  absl::StatusOr<ParsedArgs> args = MakeParser().Parse({"j", "--reason="});
  ASSERT_TRUE(args.ok());
  EXPECT_EQ(args->Value("reason"), "");
}

TEST(ArgParserTest, MissingRequiredPositional) {
  absl::StatusOr<ParsedArgs> args = MakeParser().Parse({"--json"});
  ASSERT_FALSE(args.ok());
  EXPECT_THAT(args.status().message(), HasSubstr("missing JOB"));
}

TEST(ArgParserTest, UnexpectedPositional) {
  absl::StatusOr<ParsedArgs> args = MakeParser().Parse({"a", "b", "c"});
  ASSERT_FALSE(args.ok());
  EXPECT_THAT(args.status().message(), HasSubstr("unexpected argument 'c'"));
  EXPECT_THAT(args.status().message(), HasSubstr("JOB EXTRA"));
}

TEST(ArgParserTest, HelpWinsOverMissingArguments) {
  for (const char* help : {"--help", "-h"}) {
    absl::StatusOr<ParsedArgs> args = MakeParser().Parse({help});
    ASSERT_TRUE(args.ok()) << help;
    EXPECT_TRUE(args->help_requested());
  }
}

TEST(ArgParserTest, TypedAccessorsNameTheFlag) {
  absl::StatusOr<ParsedArgs> args = MakeParser().Parse({"j", "--timeout", "abc"});
  ASSERT_TRUE(args.ok());
  absl::StatusOr<std::optional<double>> timeout = args->Double("timeout", 0.1, 100);
  ASSERT_FALSE(timeout.ok());
  EXPECT_THAT(timeout.status().message(), HasSubstr("--timeout"));
  EXPECT_THAT(timeout.status().message(), HasSubstr("'abc'"));

  args = MakeParser().Parse({"j", "--timeout", "500"});
  EXPECT_FALSE(args->Double("timeout", 0.1, 100).ok());
  EXPECT_FALSE(args->Int("timeout", 0, 100).ok());
  args = MakeParser().Parse({"j", "--timeout", "2.5"});
  EXPECT_DOUBLE_EQ(**args->Double("timeout", 0.1, 100), 2.5);
  EXPECT_FALSE(args->Int("timeout", 0, 100).ok());
  EXPECT_FALSE(args->Int("reason", 0, 100)->has_value());  // absent, no default
}

TEST(ArgParserTest, UsageListsEverything) {
  ArgParser parser = MakeParser();
  parser.AddEpilog("Environment: TRAINSCOPE_TOKEN");
  const std::string usage = parser.Usage();
  EXPECT_THAT(usage, HasSubstr("Halt a job."));
  EXPECT_THAT(usage, HasSubstr("Usage: trainscope halt JOB [EXTRA] [flags]"));
  EXPECT_THAT(usage, HasSubstr("--reason TEXT"));
  EXPECT_THAT(usage, HasSubstr("(default: 10)"));
  EXPECT_THAT(usage, HasSubstr("(may be repeated)"));
  EXPECT_THAT(usage, HasSubstr("--json\n"));
  EXPECT_THAT(usage, HasSubstr("-h, --help"));
  EXPECT_THAT(usage, HasSubstr("Environment: TRAINSCOPE_TOKEN"));
}

TEST(ArgParserTest, DashAndUnderscoreSpellTheSameFlag) {
  ArgParser parser("trainscope-collector", "Collect.");
  parser.AddFlag("data-dir", "DIR", "where", "./data");
  parser.AddFlag("max_message_bytes", "N", "largest message");
  for (const std::vector<std::string>& line :
       {std::vector<std::string>{"--data-dir=/d", "--max-message-bytes", "5"},
        std::vector<std::string>{"--data_dir", "/d", "--max_message_bytes=5"}}) {
    absl::StatusOr<ParsedArgs> args = parser.Parse(line);
    ASSERT_TRUE(args.ok()) << args.status();
    EXPECT_EQ(args->Value("data-dir"), "/d");
    EXPECT_EQ(args->Value("data_dir"), "/d");
    EXPECT_TRUE(args->Has("max-message-bytes"));
    EXPECT_EQ(**args->Int("max_message_bytes", 0, 10), 5);
  }
  EXPECT_EQ(parser.Parse(std::vector<std::string>{})->Value("data_dir"), "./data");
}

TEST(ArgParserTest, SingleDashLongFlagsAsAbseilAccepted) {
  ArgParser parser("p", "P.");
  parser.AddFlag("data-dir", "DIR", "where");
  parser.AddBoolFlag("fsync", "sync", /*default_value=*/true);
  absl::StatusOr<ParsedArgs> args = parser.Parse({"-data_dir=/d", "-nofsync"});
  ASSERT_TRUE(args.ok()) << args.status();
  EXPECT_EQ(args->Value("data-dir"), "/d");
  EXPECT_FALSE(args->Bool("fsync"));
  absl::StatusOr<ParsedArgs> bad = parser.Parse({"-data-dri=/d"});
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("unknown flag -data-dri for 'p'"));
  EXPECT_THAT(bad.status().message(), HasSubstr("did you mean --data-dir?"));
}

TEST(ArgParserTest, BooleanDefaultsAndNegation) {
  ArgParser parser("p", "P.");
  parser.AddBoolFlag("fsync", "sync", /*default_value=*/true);
  parser.AddBoolFlag("print-default-rules", "print");
  EXPECT_TRUE(parser.Parse(std::vector<std::string>{})->Bool("fsync"));
  EXPECT_FALSE(parser.Parse(std::vector<std::string>{})->Bool("print_default_rules"));
  for (const char* off : {"--nofsync", "--no-fsync", "--no_fsync", "--fsync=false", "--fsync=0",
                          "--fsync=no", "--fsync=False", "--fsync=f"}) {
    absl::StatusOr<ParsedArgs> args = parser.Parse({off});
    ASSERT_TRUE(args.ok()) << off << ": " << args.status();
    EXPECT_FALSE(args->Bool("fsync")) << off;
    EXPECT_TRUE(args->Has("fsync")) << off;
  }
  for (const char* on : {"--fsync", "--fsync=true", "--fsync=1", "--fsync=YES", "--fsync=t"}) {
    EXPECT_TRUE(parser.Parse({"--nofsync", on})->Bool("fsync")) << on;
  }
  EXPECT_TRUE(parser.Parse({"--print_default_rules"})->Bool("print-default-rules"));
  absl::StatusOr<ParsedArgs> bad = parser.Parse({"--nofsync=true"});
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("--nofsync takes no value"));
  // "no" before a flag that is not boolean is no negation: an unknown flag.
  parser.AddFlag("rules", "FILE", "rules");
  bad = parser.Parse({"--norules"});
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("unknown flag --norules"));
}

TEST(ArgParserTest, AliasesReachTheFlag) {
  ArgParser parser("p", "P.");
  parser.AddFlag("for", "STEPS", "consecutive steps", "0");
  parser.AddAlias("for_steps", "for");
  EXPECT_EQ(parser.Parse({"--for_steps=3"})->Value("for"), "3");
  EXPECT_EQ(parser.Parse({"--for-steps", "4"})->Value("for"), "4");
  EXPECT_EQ(parser.Parse({"--for", "5"})->Value("for_steps"), "5");
  EXPECT_THAT(parser.Usage(), HasSubstr("(also --for_steps)"));
}

TEST(ArgParserTest, ParsesAMainsArgvWithoutTheProgramName) {
  ArgParser parser("p", "P.");
  parser.AddFlag("job", "J", "job");
  const char* argv[] = {"/usr/bin/p", "--job", "j1"};
  absl::StatusOr<ParsedArgs> args = parser.Parse(3, argv);
  ASSERT_TRUE(args.ok()) << args.status();
  EXPECT_EQ(args->Value("job"), "j1");
  EXPECT_TRUE(args->positionals().empty());
}

TEST(ArgParserTest, TypedErrorsNameTheFlagAsDeclared) {
  ArgParser parser("p", "P.");
  parser.AddFlag("segment-mb", "MIB", "segment size", "64");
  absl::StatusOr<ParsedArgs> args = parser.Parse({"--segment_mb=lots"});
  ASSERT_TRUE(args.ok());
  absl::StatusOr<std::optional<int64_t>> value = args->Int("segment_mb", 1, 4096);
  ASSERT_FALSE(value.ok());
  EXPECT_THAT(value.status().message(),
              HasSubstr("--segment-mb expects a whole number from 1 to 4096, got 'lots'"));
}

TEST(ArgParserTest, UsageShowsBooleanDefaultsAndHowToTurnThemOff) {
  ArgParser parser("p", "P.");
  parser.AddBoolFlag("fsync", "fdatasync each commit", /*default_value=*/true);
  parser.AddBoolFlag("insecure", "no encryption");
  const std::string usage = parser.Usage();
  EXPECT_THAT(usage, HasSubstr("  --fsync\n      fdatasync each commit (default: true; --nofsync "
                               "turns it off)\n"));
  EXPECT_THAT(usage, HasSubstr("  --insecure\n      no encryption\n"));
}

}  // namespace
}  // namespace trainscope::base

namespace trainscope::base {
namespace {

TEST(ArgParserRestTest, RestPositionalsAndTheUsageTail) {
  ArgParser parser("trainscope attach", "Attach.");
  parser.AddRepeatedFlag("pid", "PID", "a process");
  parser.AddRestPositionals("PID", "more processes");
  parser.SetUsageTail("-- X");
  absl::StatusOr<ParsedArgs> args = parser.Parse({"--pid", "1", "2", "3"});
  ASSERT_TRUE(args.ok()) << args.status();
  EXPECT_EQ(args->Values("pid"), std::vector<std::string>{"1"});
  EXPECT_EQ(args->Rest(), (std::vector<std::string>{"2", "3"}));
  EXPECT_NE(parser.Usage().find("Usage: trainscope attach [PID...] [flags] -- X"),
            std::string::npos)
      << parser.Usage();
  ArgParser hidden("trainscope run", "Run.");
  hidden.AddRestPositionals("PROGRAM", "");
  EXPECT_EQ(hidden.Usage().find("PROGRAM"), std::string::npos);
  EXPECT_EQ(hidden.Parse({"python3"})->Rest(), std::vector<std::string>{"python3"});
}

}  // namespace
}  // namespace trainscope::base
