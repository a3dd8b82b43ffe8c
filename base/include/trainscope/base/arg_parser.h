// The command-line parser of every trainscope program (the `trainscope` CLI's
// subcommands, trainscope-viewer, trainscope-collector, trainscope-loadgen):
// each program or subcommand declares its own positionals and flags, so
// `PROGRAM --help` lists exactly what it accepts, with defaults, and an
// unknown flag is reported against that list with the closest known name (no
// process-global flags).
//
// Usage:
//   ArgParser parser("trainscope halt", "Halt every rank of a job.");
//   parser.AddPositional("JOB", "the job to halt");
//   parser.AddFlag("reason", "TEXT", "why (recorded in the job's log)");
//   parser.AddBoolFlag("json", "machine-readable output");
//   parser.AddBoolFlag("fsync", "fdatasync each commit", /*default_value=*/true);
//   parser.AddRepeatedFlag("kinds", "LIST", "...");
//   absl::StatusOr<ParsedArgs> args = parser.Parse(argv_after_subcommand);
//   if (!args.ok()) { print args.status().message(); exit 2; }
//   if (args->help_requested()) { print parser.Usage(); exit 0; }
//
// Accepted forms: positionals; `--flag value`; `--flag=value`; `--bool`,
// `--bool=true|false` (also 1/0, yes/no, t/f, y/n) and `--nobool` /
// `--no-bool`; a repeated flag given several times; `-h`/`--help`; `--` ends
// options (everything after it is positional). A flag name may be written
// with '-' or '_' (`--data-dir` and `--data_dir` are the same flag, also for
// the ParsedArgs accessors), and with one leading dash (`-data-dir`) as
// Abseil's flags accepted, so command lines written for them still work.
//
// Threading: immutable after the Add* calls; Parse is const and may be called
// from any thread.
#ifndef TRAINSCOPE_BASE_ARG_PARSER_H_
#define TRAINSCOPE_BASE_ARG_PARSER_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"

namespace trainscope::base {

// The result of a successful parse. Flag names given to the accessors may use
// '-' or '_' (and a flag's alias) like the command line.
class ParsedArgs {
 public:
  bool help_requested() const { return help_requested_; }
  const std::vector<std::string>& positionals() const { return positionals_; }
  // The positional called `name` (as declared with AddPositional), if given.
  std::optional<std::string> Positional(std::string_view name) const;
  // The positionals past the declared ones (see ArgParser::AddRestPositionals).
  std::vector<std::string> Rest() const;

  // Whether the flag appeared on the command line.
  bool Has(std::string_view flag) const;
  // The flag's last value, or its declared default, or nullopt.
  std::optional<std::string> Value(std::string_view flag) const;
  // Every value of a repeated flag, in command-line order.
  std::vector<std::string> Values(std::string_view flag) const;
  // A boolean flag's value (its default when absent).
  bool Bool(std::string_view flag) const;

  // Typed accessors: errors name the flag and say what was expected.
  absl::StatusOr<std::optional<int64_t>> Int(std::string_view flag, int64_t min, int64_t max) const;
  absl::StatusOr<std::optional<double>> Double(std::string_view flag, double min, double max) const;

 private:
  friend class ArgParser;
  // The key of a flag in the maps below: '_' written as '-', aliases resolved.
  std::string Key(std::string_view flag) const;

  bool help_requested_ = false;
  std::vector<std::string> positionals_;
  std::vector<std::string> positional_names_;
  std::map<std::string, std::vector<std::string>, std::less<>> values_;
  std::map<std::string, std::string, std::less<>> defaults_;
  std::map<std::string, std::string, std::less<>> aliases_;
  std::map<std::string, std::string, std::less<>> shown_names_;  // key -> name as declared
};

class ArgParser {
 public:
  // `command` is how the user invokes it ("trainscope halt"); `summary` is
  // shown at the top of the usage (it may span several lines).
  ArgParser(std::string command, std::string summary);

  // Positionals are matched in declaration order; optional ones must come last.
  void AddPositional(std::string name, std::string help, bool required = true);
  // Accepts any number of further positionals after the declared ones
  // (ParsedArgs::Rest), shown as "[NAME...]" (not shown when `help` is empty).
  void AddRestPositionals(std::string name, std::string help);
  // A flag that takes a value. `default_value` is shown in the usage and
  // returned by ParsedArgs::Value when the flag is absent.
  void AddFlag(std::string name, std::string value_name, std::string help,
               std::optional<std::string> default_value = std::nullopt);
  void AddRepeatedFlag(std::string name, std::string value_name, std::string help);
  // A boolean flag; a default of true is shown in the usage (turn it off with
  // --noNAME or --NAME=false).
  void AddBoolFlag(std::string name, std::string help, bool default_value = false);
  // `alias` is another name of the declared flag `name` (an old spelling kept
  // working); the usage mentions it.
  void AddAlias(std::string alias, std::string name);
  // Text after "[flags]" in the usage line, for what the caller parses itself
  // ("-- PROGRAM [ARGS...]").
  void SetUsageTail(std::string text) { usage_tail_ = std::move(text); }
  // Free text appended to the usage (examples, environment variables).
  void AddEpilog(std::string text);

  absl::StatusOr<ParsedArgs> Parse(const std::vector<std::string>& args) const;
  // A main's argc/argv: argv[0] (the program) is skipped.
  absl::StatusOr<ParsedArgs> Parse(int argc, const char* const* argv) const;
  std::string Usage() const;

 private:
  enum class FlagKind { kValue, kRepeated, kBool };
  struct FlagSpec {
    std::string name;
    std::string value_name;
    std::string help;
    FlagKind kind;
    std::optional<std::string> default_value;
    std::vector<std::string> aliases;
  };
  struct PositionalSpec {
    std::string name;
    std::string help;
    bool required;
  };

  // The flag called `name` ('-' or '_', or an alias), or nullptr.
  const FlagSpec* FindFlag(std::string_view name) const;
  std::string ValidFlagList() const;
  std::string UnknownFlagError(std::string_view shown) const;

  std::string command_;
  std::string summary_;
  std::vector<PositionalSpec> positionals_;
  std::vector<FlagSpec> flags_;
  std::vector<std::string> epilog_;
  std::optional<PositionalSpec> rest_;
  std::string usage_tail_;
};

}  // namespace trainscope::base

#endif  // TRAINSCOPE_BASE_ARG_PARSER_H_
