#!/usr/bin/env bash
# Fuzzes the parser of the selection files (mm/malloc_type_pattern.c) with
# libFuzzer, built in user space with the kernel tree's glob_match():
#   run.sh TREE [RUNS]   (TREE: a kernel tree with lib/glob.c)
# Builds into $MT_CACHE/fuzz (or a temporary directory), runs RUNS inputs
# (default 200000) and exits non-zero on a failed check or a sanitizer
# report, which libFuzzer prints with the input that caused it.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../../.." && pwd)
tree=${1:?usage: run.sh TREE [RUNS]}
runs=${2:-200000}
out=${MT_CACHE:+$MT_CACHE/fuzz}
out=${out:-$(mktemp -d)}
mkdir -p "$out/corpus-selection"
cc=${CC_FUZZ:-clang-${LLVM_VERSION:-19}}
"$cc" -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
	-Wall -Werror -I"$here/include" -I"$root/include" \
	"$here/selection_fuzz.c" "$root/mm/malloc_type_pattern.c" "$tree/lib/glob.c" \
	-o "$out/selection_fuzz"
# Seeds: the words of the selection files' documentation and tests.
printf 'foo_bar:malloc !dev*:free\n' >"$out/corpus-selection/seed1"
printf 'kunit_sel\\072c [!a-z]\\052 \\134x ' >"$out/corpus-selection/seed2"
printf 'a\\001b [\\135]x [ unclosed\\133' >"$out/corpus-selection/seed3"
exec "$out/selection_fuzz" -runs="$runs" -max_len=300 "$out/corpus-selection"
