#include "trainscope/base/arg_parser.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace trainscope::base {

namespace {

// The one spelling a flag name is compared in: '_' is written '-'.
std::string NormalName(std::string_view name) {
  std::string out(name);
  std::replace(out.begin(), out.end(), '_', '-');
  return out;
}

// Abseil's boolean words (case-insensitive), which the collector accepted.
std::optional<bool> ParseBoolWord(std::string_view text) {
  const std::string lower = absl::AsciiStrToLower(absl::string_view(text.data(), text.size()));
  if (lower == "true" || lower == "1" || lower == "yes" || lower == "t" || lower == "y") {
    return true;
  }
  if (lower == "false" || lower == "0" || lower == "no" || lower == "f" || lower == "n") {
    return false;
  }
  return std::nullopt;
}

// Edit distance, for "did you mean" on a mistyped flag.
size_t EditDistance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

}  // namespace

std::string ParsedArgs::Key(std::string_view flag) const {
  std::string key = NormalName(flag);
  auto alias = aliases_.find(key);
  return alias == aliases_.end() ? key : alias->second;
}

std::optional<std::string> ParsedArgs::Positional(std::string_view name) const {
  for (size_t i = 0; i < positional_names_.size() && i < positionals_.size(); ++i) {
    if (positional_names_[i] == name) return positionals_[i];
  }
  return std::nullopt;
}

std::vector<std::string> ParsedArgs::Rest() const {
  if (positionals_.size() <= positional_names_.size()) return {};
  return std::vector<std::string>(positionals_.begin() + positional_names_.size(),
                                  positionals_.end());
}

bool ParsedArgs::Has(std::string_view flag) const {
  return values_.find(Key(flag)) != values_.end();
}

std::optional<std::string> ParsedArgs::Value(std::string_view flag) const {
  const std::string key = Key(flag);
  auto it = values_.find(key);
  if (it != values_.end() && !it->second.empty()) return it->second.back();
  auto def = defaults_.find(key);
  if (def != defaults_.end()) return def->second;
  return std::nullopt;
}

std::vector<std::string> ParsedArgs::Values(std::string_view flag) const {
  auto it = values_.find(Key(flag));
  return it == values_.end() ? std::vector<std::string>{} : it->second;
}

bool ParsedArgs::Bool(std::string_view flag) const {
  std::optional<std::string> value = Value(flag);
  return value.has_value() && *value == "true";
}

absl::StatusOr<std::optional<int64_t>> ParsedArgs::Int(std::string_view flag, int64_t min,
                                                       int64_t max) const {
  std::optional<std::string> text = Value(flag);
  if (!text.has_value()) return std::optional<int64_t>();
  int64_t value = 0;
  if (!absl::SimpleAtoi(*text, &value) || value < min || value > max) {
    auto shown = shown_names_.find(Key(flag));
    return absl::InvalidArgumentError(
        absl::StrCat("--", shown == shown_names_.end() ? std::string(flag) : shown->second,
                     " expects a whole number from ", min, " to ", max, ", got '", *text, "'"));
  }
  return std::optional<int64_t>(value);
}

absl::StatusOr<std::optional<double>> ParsedArgs::Double(std::string_view flag, double min,
                                                         double max) const {
  std::optional<std::string> text = Value(flag);
  if (!text.has_value()) return std::optional<double>();
  double value = 0;
  if (!absl::SimpleAtod(*text, &value) || !std::isfinite(value) || value < min || value > max) {
    auto shown = shown_names_.find(Key(flag));
    return absl::InvalidArgumentError(
        absl::StrCat("--", shown == shown_names_.end() ? std::string(flag) : shown->second,
                     " expects a number from ", min, " to ", max, ", got '", *text, "'"));
  }
  return std::optional<double>(value);
}

ArgParser::ArgParser(std::string command, std::string summary)
    : command_(std::move(command)), summary_(std::move(summary)) {}

void ArgParser::AddPositional(std::string name, std::string help, bool required) {
  positionals_.push_back({std::move(name), std::move(help), required});
}

void ArgParser::AddRestPositionals(std::string name, std::string help) {
  rest_ = PositionalSpec{std::move(name), std::move(help), false};
}

void ArgParser::AddFlag(std::string name, std::string value_name, std::string help,
                        std::optional<std::string> default_value) {
  flags_.push_back({std::move(name),
                    std::move(value_name),
                    std::move(help),
                    FlagKind::kValue,
                    std::move(default_value),
                    {}});
}

void ArgParser::AddRepeatedFlag(std::string name, std::string value_name, std::string help) {
  flags_.push_back(
      {std::move(name), std::move(value_name), std::move(help), FlagKind::kRepeated, {}, {}});
}

void ArgParser::AddBoolFlag(std::string name, std::string help, bool default_value) {
  flags_.push_back({std::move(name),
                    "",
                    std::move(help),
                    FlagKind::kBool,
                    default_value ? std::optional<std::string>("true") : std::nullopt,
                    {}});
}

void ArgParser::AddAlias(std::string alias, std::string name) {
  const std::string key = NormalName(name);
  for (FlagSpec& flag : flags_) {
    if (NormalName(flag.name) == key) {
      flag.aliases.push_back(std::move(alias));
      return;
    }
  }
}

void ArgParser::AddEpilog(std::string text) { epilog_.push_back(std::move(text)); }

const ArgParser::FlagSpec* ArgParser::FindFlag(std::string_view name) const {
  const std::string key = NormalName(name);
  for (const FlagSpec& flag : flags_) {
    if (NormalName(flag.name) == key) return &flag;
    for (const std::string& alias : flag.aliases) {
      if (NormalName(alias) == key) return &flag;
    }
  }
  return nullptr;
}

std::string ArgParser::UnknownFlagError(std::string_view shown) const {
  std::string_view bare = shown;
  while (!bare.empty() && bare.front() == '-') bare.remove_prefix(1);
  const std::string key = NormalName(bare);
  std::string suggestion;
  size_t best = 3;  // suggest only close matches
  for (const FlagSpec& flag : flags_) {
    const size_t distance = EditDistance(key, NormalName(flag.name));
    if (distance < best) {
      best = distance;
      suggestion = absl::StrCat(" (did you mean --", flag.name, "?)");
    }
  }
  return absl::StrCat("unknown flag ", std::string(shown), " for '", command_, "'", suggestion,
                      "; valid flags: ", ValidFlagList());
}

std::string ArgParser::ValidFlagList() const {
  std::vector<std::string> names;
  for (const FlagSpec& flag : flags_) names.push_back("--" + flag.name);
  names.push_back("--help");
  return absl::StrJoin(names, ", ");
}

absl::StatusOr<ParsedArgs> ArgParser::Parse(int argc, const char* const* argv) const {
  std::vector<std::string> args;
  for (int i = 1; i < argc; ++i) args.emplace_back(argv[i]);
  return Parse(args);
}

absl::StatusOr<ParsedArgs> ArgParser::Parse(const std::vector<std::string>& args) const {
  ParsedArgs parsed;
  for (const PositionalSpec& positional : positionals_) {
    parsed.positional_names_.push_back(positional.name);
  }
  for (const FlagSpec& flag : flags_) {
    const std::string key = NormalName(flag.name);
    parsed.shown_names_[key] = flag.name;
    if (flag.default_value.has_value()) parsed.defaults_[key] = *flag.default_value;
    for (const std::string& alias : flag.aliases) parsed.aliases_[NormalName(alias)] = key;
  }

  bool options_ended = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    const bool looks_like_flag = !options_ended && arg.size() > 1 && arg[0] == '-';
    if (!looks_like_flag) {
      parsed.positionals_.push_back(arg);
      continue;
    }
    if (arg == "--") {
      options_ended = true;
      continue;
    }
    if (arg == "-h" || arg == "--help") {
      parsed.help_requested_ = true;
      continue;
    }
    const bool single_dash = arg.rfind("--", 0) != 0;
    std::string_view body = std::string_view(arg).substr(single_dash ? 1 : 2);
    std::optional<std::string> inline_value;
    if (size_t eq = body.find('='); eq != std::string_view::npos) {
      inline_value = std::string(body.substr(eq + 1));
      body = body.substr(0, eq);
    }
    const FlagSpec* spec = FindFlag(body);
    bool negated = false;
    if (spec == nullptr && body.size() > 2 && body.substr(0, 2) == "no") {
      // --nofsync / --no-fsync: a boolean flag turned off.
      std::string_view positive = body.substr(2);
      if (positive.front() == '-' || positive.front() == '_') positive.remove_prefix(1);
      const FlagSpec* flag = FindFlag(positive);
      if (flag != nullptr && flag->kind == FlagKind::kBool) {
        spec = flag;
        negated = true;
      }
    }
    if (spec == nullptr) {
      return absl::InvalidArgumentError(
          UnknownFlagError(single_dash ? std::string(arg.substr(0, 1 + body.size()))
                                       : absl::StrCat("--", std::string(body))));
    }
    std::vector<std::string>& slot = parsed.values_[NormalName(spec->name)];
    if (spec->kind == FlagKind::kBool) {
      if (negated) {
        if (inline_value.has_value()) {
          return absl::InvalidArgumentError(absl::StrCat("flag --", std::string(body),
                                                         " takes no value (it turns --", spec->name,
                                                         " off), got '", *inline_value, "'"));
        }
        slot.push_back("false");
        continue;
      }
      std::optional<bool> value =
          inline_value.has_value() ? ParseBoolWord(*inline_value) : std::optional<bool>(true);
      if (!value.has_value()) {
        return absl::InvalidArgumentError(absl::StrCat("flag --", spec->name,
                                                       " takes no value (or =true / =false), got '",
                                                       *inline_value, "'"));
      }
      slot.push_back(*value ? "true" : "false");
      continue;
    }
    if (inline_value.has_value()) {
      slot.push_back(*inline_value);
      continue;
    }
    // A following "--x" is the next flag, not this flag's value: that typo
    // (`--reason --token T`) must not silently swallow a flag.
    const bool next_is_value =
        i + 1 < args.size() && !(args[i + 1].size() > 2 && args[i + 1].rfind("--", 0) == 0);
    if (!next_is_value) {
      return absl::InvalidArgumentError(absl::StrCat("flag --", spec->name, " needs a value (--",
                                                     spec->name, " ", spec->value_name, ")"));
    }
    slot.push_back(args[++i]);
  }

  if (parsed.help_requested_) return parsed;  // help wins over missing arguments
  for (size_t i = parsed.positionals_.size(); i < positionals_.size(); ++i) {
    if (positionals_[i].required) {
      return absl::InvalidArgumentError(absl::StrCat("missing ", positionals_[i].name, " for '",
                                                     command_, "' (", positionals_[i].help, ")"));
    }
  }
  if (!rest_.has_value() && parsed.positionals_.size() > positionals_.size()) {
    std::vector<std::string> names;
    for (const PositionalSpec& positional : positionals_) names.push_back(positional.name);
    return absl::InvalidArgumentError(absl::StrCat(
        "unexpected argument '", parsed.positionals_[positionals_.size()], "' for '", command_,
        "' (it takes ", names.empty() ? "no arguments" : absl::StrJoin(names, " "), ")"));
  }
  return parsed;
}

std::string ArgParser::Usage() const {
  std::string out = absl::StrCat(summary_, "\n\nUsage: ", command_);
  for (const PositionalSpec& positional : positionals_) {
    absl::StrAppend(&out, positional.required ? " " : " [", positional.name,
                    positional.required ? "" : "]");
  }
  // A rest without help is accepted but not advertised (the caller explains it).
  const bool show_rest = rest_.has_value() && !rest_->help.empty();
  if (show_rest) absl::StrAppend(&out, " [", rest_->name, "...]");
  absl::StrAppend(&out, " [flags]", usage_tail_.empty() ? "" : " ", usage_tail_, "\n");
  if (!positionals_.empty() || show_rest) {
    absl::StrAppend(&out, "\nArguments:\n");
    for (const PositionalSpec& positional : positionals_) {
      absl::StrAppend(&out, "  ", positional.name, "\n      ", positional.help, "\n");
    }
    if (show_rest) absl::StrAppend(&out, "  ", rest_->name, "...\n      ", rest_->help, "\n");
  }
  absl::StrAppend(&out, "\nFlags:\n");
  for (const FlagSpec& flag : flags_) {
    absl::StrAppend(&out, "  --", flag.name);
    if (flag.kind != FlagKind::kBool) absl::StrAppend(&out, " ", flag.value_name);
    absl::StrAppend(&out, "\n      ", flag.help);
    if (flag.kind == FlagKind::kRepeated) absl::StrAppend(&out, " (may be repeated)");
    if (flag.default_value.has_value() && !flag.default_value->empty()) {
      absl::StrAppend(
          &out, " (default: ", *flag.default_value,
          flag.kind == FlagKind::kBool ? absl::StrCat("; --no", flag.name, " turns it off") : "",
          ")");
    }
    for (const std::string& alias : flag.aliases) absl::StrAppend(&out, " (also --", alias, ")");
    absl::StrAppend(&out, "\n");
  }
  absl::StrAppend(&out, "  -h, --help\n      show this help\n");
  for (const std::string& text : epilog_) absl::StrAppend(&out, "\n", text, "\n");
  return out;
}

}  // namespace trainscope::base
