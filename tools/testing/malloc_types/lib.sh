# Shared shell helpers for the scripts of this directory. Sourced, not run.
# shellcheck shell=bash

MT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
MT_ROOT=$(cd "$MT_DIR/../../.." && pwd)
# shellcheck source=versions
. "$MT_DIR/versions"

# The build cache lives outside the clone so that fresh clones (CI) reuse
# it; it is keyed by the kernel package version.
: "${MT_CACHE:=${XDG_CACHE_HOME:-$HOME/.cache}/malloc-types}"
MT_KCACHE="$MT_CACHE/linux-${KERNEL_PKG_VERSION//[~+:]/_}"
MT_TOOLS="$MT_CACHE/tools"
export MT_CACHE MT_KCACHE MT_TOOLS

# The current step, named in the one-line error of a failing step.
MT_STEP=${MT_STEP:-setup}
mt_step() { MT_STEP=$1; }
die() {
	echo "malloc-types: $MT_STEP: $*" >&2
	exit 1
}
# Run a command with its output in a log; on failure say which step failed
# and why (the last non-empty line of the log), and where the log is.
mt_run() {
	local log="$MT_CACHE/logs/${MT_STEP// /-}.log"
	mkdir -p "$MT_CACHE/logs"
	if ! "$@" >"$log" 2>&1; then
		local why
		why=$(grep -v '^[[:space:]]*$' "$log" | tail -n 1)
		die "'$*' failed: ${why:-no output} (log: $log)"
	fi
}

# Cargo takes a source file whose modification time is older than its last
# build of a target directory as built, and the cache's target directories
# are shared by every clone: a clone whose files were written before another
# clone's build of other content would get that build (a stale binary in the
# guest). mt_cargo_fresh KEY DIR... makes the content decide: it touches each
# of the repository's files under the DIRs (paths from the top of the clone;
# build outputs, fuzzing corpora and other ignored files left out) whose
# content differs from what the build named KEY last saw, so that the build
# that follows compiles what changed; mt_cargo_built KEY, after that build
# succeeded, records what it saw. A file cargo does not compile (a README)
# is touched to no effect. The stamp also names the clone: cargo keeps a
# package's source paths relative to it, so a build made in another clone
# would look fresh, while what it compiled in (env!("CARGO_MANIFEST_DIR")
# of a test, which finds the test's data with it) names the other clone; in
# a clone the stamp does not name, every file counts as changed.
mt_repo_files() { # mt_repo_files DIR...: the repository's files under the DIRs, NUL-separated
	if git -C "$MT_ROOT" rev-parse --git-dir >/dev/null 2>&1; then
		(cd "$MT_ROOT" && git ls-files -z -co --exclude-standard -- "$@")
	else
		(cd "$MT_ROOT" && find "$@" \( -name target -o -name corpus -o -name artifacts \) -prune \
			-o -type f -print0)
	fi
}
mt_cargo_fresh() {
	local key=$1 stamp
	shift
	stamp="$MT_CACHE/cargo-stamps/$key"
	mkdir -p "$MT_CACHE/cargo-stamps"
	[ "$(head -n 1 "$stamp" 2>/dev/null)" = "root $MT_ROOT" ] || rm -f "$stamp"
	# "SHA-256 PATH" a file (a symbolic link: of its target), in byte order.
	MT_CARGO_SUMS=$(mt_repo_files "$@" | (cd "$MT_ROOT" && python3 -c '
import hashlib, os, sys
for p in filter(None, sys.stdin.buffer.read().split(b"\0")):
    data = b"link:" + os.readlink(p) if os.path.islink(p) else open(p, "rb").read()
    sys.stdout.buffer.write(hashlib.sha256(data).hexdigest().encode() + b" " + p + b"\n")
') | LC_ALL=C sort)
	# The lines that are not in the stamp: files new or changed since.
	LC_ALL=C comm -23 <(printf '%s\n' "$MT_CARGO_SUMS") <(LC_ALL=C sort "$stamp" 2>/dev/null) |
		cut -d' ' -f2- | (cd "$MT_ROOT" && tr '\n' '\0' | xargs -0 -r touch -h)
}
mt_cargo_built() { printf 'root %s\n%s\n' "$MT_ROOT" "$MT_CARGO_SUMS" >"$MT_CACHE/cargo-stamps/$1"; }

# The files this repository lays over the kernel tree: one line per file,
# "REPOSITORY-PATH<TAB>KERNEL-PATH". Everything under these directories is at
# its kernel path; the subsystem's root Kconfig is sourced from mm/Kconfig.
# The harness (tools/testing/malloc_types) and the user space tools stay out:
# they are not kernel code. prepare-tree.sh lays these files over the tree,
# series.py adds them with the patches of the series.
mt_overlay() {
	local files f
	if git -C "$MT_ROOT" rev-parse --git-dir >/dev/null 2>&1; then
		files=$(cd "$MT_ROOT" && git ls-files -co --exclude-standard)
	else
		files=$(cd "$MT_ROOT" && find . -type f -not -path './.git/*' | sed 's|^\./||')
	fi
	while IFS= read -r f; do
		[ -f "$MT_ROOT/$f" ] || continue
		case "$f" in
		Kconfig) printf '%s\t%s\n' "$f" mm/Kconfig.malloc_types ;;
		rust/* | include/* | mm/* | kernel/* | lib/* | samples/* | drivers/* | \
			Documentation/* | arch/* | scripts/* | tools/testing/selftests/*)
			printf '%s\t%s\n' "$f" "$f" ;;
		esac
	done <<<"$files"
}

# Patch file $1 without its sections on the kernel paths of stdin (one a line):
# the diff of the kernel's own files, for a tree where the repository's files
# are laid over as they are at the end of the series (prepare-tree.sh). A
# "--- " line is a section's only if a "+++ " line follows it.
mt_kernel_diff() {
	awk 'FILENAME == "-" { drop[$0] = 1; next }
	function keep(hdr, nxt, f) {
		if (nxt !~ /^\+\+\+ /)
			return out
		f = nxt
		sub(/^\+\+\+ [^\/]*\//, "", f)
		sub(/[ \t].*$/, "", f)
		return !(f in drop)
	}
	/^--- / {
		hdr = $0
		if ((getline nxt) <= 0) {
			if (out) print hdr
			next
		}
		out = keep(hdr, nxt)
		if (out) { print hdr; print nxt }
		next
	}
	out { print }' - out=1 "$1"
}

# The architecture of kernel flavour $1 (x86_64 or arm64), and the path of its
# boot image relative to its build directory.
mt_arch() { case $1 in arm64*) echo arm64 ;; *) echo x86_64 ;; esac; }
mt_image() { case $1 in arm64*) echo arch/arm64/boot/Image ;; *) echo arch/x86/boot/bzImage ;; esac; }

# Everything a boot of kernel flavour $1 needs, built or reused: set-up, the
# tree, the kernel, the tools and the initramfs. Exits on the first failure
# (each step has said which and why).
mt_prepare() {
	case $1 in
	prod | bench*) bash "$MT_DIR/setup.sh" inline || exit 1 ;;
	*) bash "$MT_DIR/setup.sh" || exit 1 ;;
	esac
	bash "$MT_DIR/prepare-tree.sh" >/dev/null || exit 1
	bash "$MT_DIR/build-kernel.sh" "$1" >/dev/null || exit 1
	bash "$MT_DIR/build-tools.sh" "$(mt_arch "$1")" || exit 1
	bash "$MT_DIR/mkinitramfs.sh" "$1" >/dev/null || exit 1
}
