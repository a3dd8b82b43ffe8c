#!/bin/bash
# Structure figures of the C++ tree at a revision, from git and standard tools:
#   scripts/code_figures.sh [REV]        (default: HEAD)
# Prints files and lines per component, the largest class declarations
# (lines from "class X {" to its closing "};" in public and private headers),
# the largest source files, headers named *_internal.h, and how many places
# define each rule that must exist once.
set -eu  # no pipefail: `sort | head` ends its writers early by design
rev="${1:-HEAD}"
cd "$(git rev-parse --show-toplevel)"
files() { git ls-tree -r --name-only "$rev" -- "$@" | grep -E '\.(h|cc)$' || true; }
lines() { local n=0 f; for f in "$@"; do n=$((n + $(git show "$rev:$f" | wc -l))); done; echo $n; }

echo "== C++ files and lines per component at $(git rev-parse --short "$rev")"
for c in agent client collector cli viewer integrations proto base; do
  mapfile -t fs < <(files "$c")
  [ ${#fs[@]} -eq 0 ] && continue
  printf '  %-13s %4d files %7d lines\n' "$c" "${#fs[@]}" "$(lines "${fs[@]}")"
done

echo "== largest class declarations (lines)"
for f in $(files agent client collector cli viewer integrations base | grep '\.h$'); do
  git show "$rev:$f" | awk -v file="$f" '
    /^class [A-Za-z_]+[^;]*\{/ { name = $2; start = NR; depth = 1; next }
    start && /\{/ { depth += gsub(/\{/, "{") }
    start && /\}/ { depth -= gsub(/\}/, "}"); if (depth <= 0) { print NR - start + 1, name, file; start = 0 } }'
done | sort -rn | head -8 | sed 's/^/  /'

echo "== largest source files (lines)"
for f in $(files agent client collector cli viewer integrations base | grep '\.cc$'); do
  echo "$(git show "$rev:$f" | wc -l) $f"
done | sort -rn | head -8 | sed 's/^/  /'

echo "== headers named *_internal.h"
files . | grep '_internal\.h$' | sed 's/^/  /' || true
echo "  ($(files . | grep -c '_internal\.h$' || true) in all)"

echo "== definitions of rules that must exist once"
count() { git grep -lE "$2" "$rev" -- '*.h' '*.cc' ':!tests' ':!fuzz' ':!bench' | sed "s/^$rev://" | sort -u | tr '\n' ' '; }
for rule in "Median|^(inline )?(double|int64_t) Median\(" \
            "job-id validation|(absl::Status|bool) (ValidateJobId|IsValidJobId|CheckJobId)\(" \
            "RETURN_IF_ERROR macro|define RETURN_IF_ERROR"; do
  name="${rule%%|*}"; pattern="${rule#*|}"
  printf '  %-20s %s\n' "$name:" "$(count "$name" "$pattern")"
done
