#!/usr/bin/env bash
# `make check`: every test of the project, judged, ending with the line
# `N passed, N failed`.
#  1. set-up (idempotent), the kernel tree, the test kernel (KASAN, lockdep,
#     DEBUG_PREEMPT, ... and KUnit with the Rust doctests), the tools;
#  2. two QEMU boots: KUnit at boot, then the guest tests (guest/*.sh),
#     with a Prometheus server on the host scraping the guest's exporter
#     (prometheus.py, guest test 75); KUnit again with
#     malloc_types.numzones=4;
#  3. the log judged (judge.py): failing cases, missing suites, kernel
#     reports, a guest that never finished; the kernel without malloc types
#     built (configs/nomt.config);
#  3b. the test kernel cross-built for arm64 with 16 KiB pages and booted
#     under qemu-system-aarch64: KUnit and the guest tests but the tracer
#     consumers' (its results and failures prefixed `arm64:`);
#  4. the style of the Rust code: rustfmt with the kernel's .rustfmt.toml
#     for every Rust file this repository puts in the kernel tree or patches
#     there (what the kernel's `make rustfmtcheck` checks), cargo fmt for the
#     tools;
#  5. `cargo test` and a bounded fuzzing run for tools/memstat, and one of
#     the selection files' parser (fuzz/run.sh);
#  6. clippy (the test kernel is built with `make CLIPPY=1`) and `make
#     rustdoc`: no warning may point to a file of the series;
#  7. the series built after every patch (series-build.sh), the patches
#     whose trees patches/series-built does not list yet.
# A boot keeps one core busy (single-threaded TCG), and much of a kernel
# build is one rustc or one link: so once the tree is laid, the other
# kernels (without malloc types, arm64, kunit.py's) and the checks that need
# no kernel of their own (3, 4, 5 and the documentation and series checks,
# with 7) run in two background lanes at a lower priority, beside the test
# kernel's build and boots in the foreground. Each part writes its output,
# counts and failures to files of its own; the output is printed part by
# part, in order, as each one is joined.
set -uo pipefail
. "$(dirname "$0")/lib.sh"

# Every part's counts ("N M" lines) and failures (a line each) are files
# under $parts, named after the part, so that a part in a background lane
# reports as one in the foreground does: add N M, problem TEXT.
parts=$(mktemp -d "${TMPDIR:-/tmp}/mt-check.XXXXXX")
part=main
add() { echo "$1 $2" >>"$parts/$part.counts"; }
problem() { printf '%s\n' "$1" >>"$parts/$part.problems"; }
# tally NAME: the two counts of the last "NAME: N passed, M failed" line on
# standard input, as "N M" (nothing when there is no such line).
tally() { sed -n "s/^$1: \([0-9]*\) passed, \([0-9]*\) failed\$/\1 \2/p" | tail -n 1; }

# Boot 1: KUnit and the guest tests, with the default single zone.
# Boot 2: KUnit again with malloc_types.numzones=4, so that types are spread
# over dedicated kmalloc buckets (zones 1..3) and that path runs under KASAN,
# and the guest tests that move user data through typed memory (Binder IPC,
# block I/O), under CONFIG_HARDENED_USERCOPY; the other guest tests expect
# zone 0 in their rows. Boot 2 also has malloc_types.default_types=0: the
# KUnit case of the default types then expects untyped Rust allocations
# uncharged, and Binder's test that its workload leaves them unchanged. And
# memguard.desc=pipe: every pipe of the boot's shell is guarded by memguard
# from boot on (guest test 74 checks that nothing was reported). And
# allocation profiling on (sysctl.vm.mem_profiling=1), as kunit.py's boot
# has it: KUnit runs beside it, and the case that checks that allocinfo
# names the call sites of typed blocks runs.
# FLAVOUR (test or arm64) names the kernel; the results of arm64 say so.
boot() { # boot FLAVOUR NAME MODE KERNEL-ARGS...
	local flavour=$1 name=$2 mode=$3 log="$MT_CACHE/logs/check-console-$2.log" prefix=
	shift 3
	[ "$flavour" = arm64 ] && prefix="arm64: "
	echo "check: booting the $flavour kernel: $name (log: $log)"
	# The first boot takes about 13 minutes (KUnit, then every guest test,
	# test 40's read sizes and test 75's scrapes the longest): 30 minutes
	# leave room for a loaded host; a guest that finishes ends itself.
	if ! MT_TIMEOUT=${MT_TIMEOUT:-1800} bash "$MT_DIR/run-qemu.sh" "$flavour" "$mode" "$log" "$@"; then
		add 0 1
		problem "${prefix}kernel tests, $name: QEMU did not start (see above)"
		return
	fi
	verdict=$(python3 "$MT_DIR/judge.py" "$log" --suites "$MT_DIR/suites")
	echo "$verdict" | sed '$d' | sed "s/^/$prefix/"
	read -r _ p _ f <<<"$(echo "$verdict" | tail -n 1)"
	add "$p" "$f"
	if [ "$f" -ne 0 ]; then
		# Keep the failing log: the next run writes over $log.
		cp "$log" "$log.failed"
		problem "${prefix}kernel tests, $name (log: $log.failed)"
	fi
}
# Boot 1 also exports to a real Prometheus server (Debian's prometheus,
# started here on loopback with its own configuration and data under the
# cache, scraping every 10 s, stopping by itself after 30 minutes at the
# latest): QEMU forwards
# the port it scrapes to the guest's exporter, guest test 75 runs a Binder
# workload under it, and prometheus.py compares what PromQL returns with
# the guest's own figures.
# Boot 1 and the arm64 boot are also dumped (guest test 78 with
# mt.vmcore=1): vmcore.py follows the console and has QEMU write the guest's
# memory as an ELF vmcore through QMP; the vmcores are judged after the
# boots (vmcore_check).
vmcore_dir=$MT_CACHE/vmcore
vmcore_watch() { # vmcore_watch NAME: the boot NAME that comes next is dumped
	local log="$MT_CACHE/logs/check-console-$1.log"
	rm -rf "${vmcore_dir:?}/$1"
	mkdir -p "$vmcore_dir/$1"
	rm -f "$log"
	export MT_QMP="$vmcore_dir/$1/qmp.sock"
	python3 "$MT_DIR/vmcore.py" watch "$log" "$MT_QMP" "$vmcore_dir/$1" \
		2>"$MT_CACHE/logs/vmcore-watch-$1.log" &
	vmcore_pid=$!
}
vmcore_unwatch() {
	unset MT_QMP
	wait "$vmcore_pid" || true
}
# vmcore_check NAME VMLINUX OTHER-VMLINUX LABEL [ARGS...]: memstat -M and
# drgn on the last vmcore of boot NAME (vmcore.py check ARGS...).
vmcore_check() {
	local name=$1 vmlinux=$2 other=$3 label=$4 out
	shift 4
	out=$(python3 "$MT_DIR/vmcore.py" check "$@" --dir "$vmcore_dir/$name" \
		--log "$MT_CACHE/logs/check-console-$name.log" --vmlinux "$vmlinux" \
		--memstat "$MT_CACHE/cargo-target/x86_64-unknown-linux-musl/release/memstat" \
		--drgn "$MT_CACHE/drgn-venv/bin/python3" --other-kernel "$other" 2>&1)
	echo "$out" | grep -v '^vmcore: [0-9]* passed' | sed "s/^/$label/"
	read -r p f < <(echo "$out" | tally vmcore)
	[ -n "$p" ] || { p=0 f=1; }
	echo "${label}vmcore: $p passed, $f failed"
	add "$p" "$f"
	[ "$f" -eq 0 ] || problem "${label}the vmcore of boot $name (log: $MT_CACHE/logs/vmcore-watch-$name.log)"
}

prom_dir=$MT_CACHE/prometheus
prom_log=$MT_CACHE/logs/prometheus.log
x86_boots() {
	if fwd=$(python3 "$MT_DIR/prometheus.py" start "$prom_dir" 2>"$prom_log"); then
		export MT_HOSTFWD=$fwd
		vmcore_watch tests
		boot test tests check mt.vmcore=1
		vmcore_unwatch
		unset MT_HOSTFWD
		python3 "$MT_DIR/prometheus.py" check "$prom_dir" "$MT_CACHE/logs/check-console-tests.log" >"$prom_log" 2>&1
		grep -v '^prometheus: [0-9]* passed' "$prom_log"
		read -r p f < <(tally prometheus <"$prom_log")
		[ -n "$p" ] || { tail -n 3 "$prom_log"; p=0 f=1; }
		echo "prometheus: $p passed, $f failed"
		add "$p" "$f"
		[ "$f" -eq 0 ] || problem "the Prometheus scrape test (log: $prom_log)"
		python3 "$MT_DIR/prometheus.py" stop "$prom_dir" >/dev/null
	else
		echo "prometheus: the server did not start: $(tail -n 1 "$prom_log")"
		echo "prometheus: 0 passed, 1 failed"
		add 0 1
		problem "the Prometheus server did not start (log: $prom_log)"
		vmcore_watch tests
		boot test tests check mt.vmcore=1
		vmcore_unwatch
	fi
	boot test numzones4 check malloc_types.numzones=4 malloc_types.default_types=0 \
		memguard.desc=pipe sysctl.vm.mem_profiling=1 mt.only=70-binder,72-rnull,74-memguard
}

# The kernel without CONFIG_MALLOC_TYPES (configs/nomt.config): built, not
# booted, and without a warning, so that the patches keep the subsystem
# optional and the drivers build on their plain allocators.
nomt_log=$MT_CACHE/logs/build-nomt.log
nomt_build() {
	echo "check: building the kernel without malloc types (log: $nomt_log)"
	local why=
	if ! bash "$MT_DIR/build-kernel.sh" nomt >/dev/null 2>"$MT_CACHE/logs/build-nomt.err"; then
		tail -n 5 "$MT_CACHE/logs/build-nomt.err"
		why="does not build"
	elif grep -E '^warning|: warning:' "$nomt_log" | head -n 5 | grep .; then
		why="builds with warnings"
	fi
	if [ -z "$why" ]; then
		echo "nomt: 1 passed, 0 failed (built without a warning)"
		add 1 0
	else
		echo "nomt: 0 passed, 1 failed"
		add 0 1
		problem "the kernel without malloc types $why (log: $nomt_log)"
	fi
}
# The series built after every patch (series-build.sh), as a maintainer
# bisecting it would: the patches whose trees are not built yet, here or
# where patches/series-built was recorded with the same set-up. After the
# series check, in its lane: the two make commits in the same repository.
series_build() {
	local log="$MT_CACHE/logs/series-build.log"
	echo "check: the series built after every patch (log: $log)"
	if bash "$MT_DIR/series-build.sh" >"$log" 2>&1; then
		grep '^series-build: ' "$log"
		echo "series-build: 1 passed, 0 failed"
		add 1 0
	else
		grep -v '^malloc-types: ' "$log" | tail -n 12
		echo "series-build: 0 passed, 1 failed"
		add 0 1
		problem "the series does not build patch by patch: $(grep '^malloc-types: ' "$log" | tail -n 1) (log: $log)"
	fi
}
# Boot 1's vmcore, judged now that there is another kernel to give as -N,
# and the kernel without malloc types to dump (when it built).
x86_vmcore() {
	local nomt_args=()
	[ -f "$parts/nomt-build.problems" ] || nomt_args=(--nomt-kernel "$MT_KCACHE/build-nomt/$(mt_image nomt)" --nomt-vmlinux "$MT_KCACHE/build-nomt/vmlinux")
	vmcore_check tests "$MT_KCACHE/build-test/vmlinux" "$MT_KCACHE/build-nomt/vmlinux" "" "${nomt_args[@]}"
}

# arm64 with 16 KiB pages: the test kernel's fragments plus configs/arm64.config,
# cross-built with the same LLVM and Rust toolchain, the tools built for
# aarch64-unknown-linux-musl, Debian's arm64 busybox; KUnit at boot and every
# guest test but 55-tracepoint-consumers (perf, trace-cmd and bpftrace are the
# host's x86_64 binaries).
arm64_build() {
	echo "check: building the arm64 kernel, tools and initramfs (log: $MT_CACHE/logs/build-arm64.log)"
	(mt_prepare arm64) >"$MT_CACHE/logs/check-arm64-prepare.log" 2>&1 && return
	tail -n 3 "$MT_CACHE/logs/check-arm64-prepare.log" | sed 's/^/arm64: /'
	echo "arm64: 0 passed, 1 failed"
	add 0 1
	problem "arm64: the kernel, tools or initramfs did not build (log: $MT_CACHE/logs/check-arm64-prepare.log)"
}
arm64_boot() {
	[ -f "$parts/arm64-build.problems" ] && return
	local arm64_tests=$(cd "$MT_DIR/guest" && ls [0-9]*.sh | sed 's/\.sh$//' | grep -v '^55-' | paste -sd, -)
	vmcore_watch arm64
	boot arm64 arm64 check "mt.only=$arm64_tests" mt.vmcore=1
	vmcore_unwatch
	vmcore_check arm64 "$MT_KCACHE/build-arm64/vmlinux" "$MT_KCACHE/build-test/vmlinux" "arm64: "
}

# kunit.py, as a kernel developer runs the suites: `kunit.py run
# --kunitconfig=rust/kernel/malloc_type` configures and builds a kernel of its
# own (x86_64, in $MT_KCACHE/build-kunit; the .kunitconfig partitions the
# kmalloc caches, CONFIG_KMALLOC_PARTITION_RANDOM, which the test kernels do
# not: see configs/test.config), boots it under QEMU with allocation
# profiling on and parses its
# KTAP. kunit.py asks QEMU for KVM before TCG, and KVM hangs guests on these
# machines: the run sees /dev/null in place of /dev/kvm (a private mount
# namespace), so QEMU falls back to TCG. kunit-compare.py then checks that
# every suite of the .kunitconfig ran and passed with exactly the cases that
# the test kernel's first boot reported.
# kunit.py's own kernel is built first, in a background lane, with `kunit.py
# build` and the same arguments; the `kunit.py run` in the foreground then
# finds it configured and built, and only boots it.
kunit_py() { # kunit_py build|run ARGS...
	local cmd=$1
	shift
	# shellcheck disable=SC2016
	unshare -m --propagation private bash -c \
		'if [ -e /dev/kvm ]; then mount --bind /dev/null /dev/kvm || exit 1; fi; cd "$1" && shift && exec "$@"' \
		kunit "$MT_KCACHE/linux" env RUSTUP_TOOLCHAIN="$RUST_VERSION" PYTHONDONTWRITEBYTECODE=1 \
		python3 tools/testing/kunit/kunit.py "$cmd" \
		--build_dir="$MT_KCACHE/build-kunit" --arch=x86_64 --kunitconfig=rust/kernel/malloc_type \
		--make_options "LLVM=-$LLVM_VERSION" --make_options "BINDGEN=$MT_TOOLS/bin/bindgen" \
		--jobs="$(nproc)" "$@"
}
kunit_py_build() {
	echo "check: kunit.py build --kunitconfig=rust/kernel/malloc_type (log: $MT_CACHE/logs/kunit-py-build.log)"
	kunit_py build >"$MT_CACHE/logs/kunit-py-build.log" 2>&1 ||
		echo "kunit.py: the build failed; kunit.py run says why (log: $MT_CACHE/logs/kunit-py-build.log)"
}
kunit_py_check() {
	echo "check: kunit.py run --kunitconfig=rust/kernel/malloc_type (log: $MT_CACHE/logs/kunit-py.log)"
	local klog="$MT_CACHE/logs/kunit-py.log" json="$MT_CACHE/logs/kunit-py.json" verdict p f
	rm -f "$json"
	kunit_py run --timeout=1200 --qemu_args="-smp 2" --kernel_args=sysctl.vm.mem_profiling=1 \
		--json="$json" >"$klog" 2>&1
	grep -E '^\[[0-9:]+\] (Testing complete|Elapsed)' "$klog" | sed 's/^/kunit.py: /'
	verdict=$(python3 "$MT_DIR/kunit-compare.py" "$json" "$MT_CACHE/logs/check-console-tests.log" \
		$(grep -v -e '^#' -e '^rust_doctests_kernel$' "$MT_DIR/suites"))
	echo "$verdict" | sed '$d'
	read -r _ p _ f <<<"$(echo "$verdict" | tail -n 1)"
	echo "kunit.py: $p passed, $f failed"
	add "$p" "$f"
	[ "$f" -eq 0 ] || problem "kunit.py (log: $klog)"
}

# The kernel files of the series: those this repository lays over the tree
# and those its patches change.
series_files() {
	{
		mt_overlay | cut -f2
		sed -n 's|^+++ b/||p' "$MT_ROOT"/patches/*.patch
	} | sort -u
}

# rust_findings LOG FILES: the warnings and errors of rustc, clippy or rustdoc
# in LOG that point (`-->`) to a file named in the file FILES, a line each.
rust_findings() {
	awk -v tree="$MT_KCACHE/linux/" -v files="$2" '
		BEGIN { while ((getline f < files) > 0) ours[f] = 1 }
		/^(warning|error)(\[[A-Za-z0-9_]+\])?: / { head = $0; next }
		/^ *--> / && head != "" {
			loc = $2
			if (index(loc, tree) == 1) loc = substr(loc, length(tree) + 1)
			path = loc
			sub(/:[0-9]+:[0-9]+$/, "", path)
			if (path in ours) print loc ": " head
			head = ""
		}' "$1"
}

# The checks a Rust-for-Linux maintainer runs: clippy, from the log of the
# test kernel's build (`make CLIPPY=1`, every Rust object each time), and
# `make rustdoc` in its build directory. No finding may point to a file of
# the series; the kernel's own files are not judged.
rust_lints() {
	echo "check: clippy and rustdoc on the Rust files of the series"
	local list="$parts/series-files" out what log
	series_files >"$list"
	for what in clippy rustdoc; do
		if [ $what = clippy ]; then
			log="$MT_CACHE/logs/build-test.log"
		else
			log="$MT_CACHE/logs/rustdoc-test.log"
			if ! bash "$MT_DIR/build-kernel.sh" test rustdoc 2>&1; then
				echo "$what: 0 passed, 1 failed"
				add 0 1
				problem "$what: make rustdoc failed (log: $log)"
				continue
			fi
		fi
		out=$(rust_findings "$log" "$list")
		if [ -z "$out" ]; then
			echo "$what: 1 passed, 0 failed"
			add 1 0
		else
			echo "$what: 0 passed, 1 failed"
			echo "$out" | sed "s/^/$what: /"
			add 0 1
			problem "$what: $(echo "$out" | wc -l) findings in the files of the series, first: $(echo "$out" | head -n 1) (log: $log)"
		fi
	done
}

# The documentation where the kernel keeps it: kernel-doc -Wall on every C
# file and header the repository adds; get_abi.py validate on the ABI
# directory, none of whose complaints may name our file; and a Sphinx build
# (Debian's python3-sphinx, `make htmldocs`) of Documentation/trace and
# Documentation/core-api, where no warning may name a file of ours. The other
# directories (admin-guide with the ABI, filesystems) take longer than a
# check may: see the README.
docs_check() {
	echo "check: documentation (kernel-doc, get_abi.py, make SPHINXDIRS=\"trace core-api\" htmldocs)"
	local tree="$MT_KCACHE/linux" dlog="$MT_CACHE/logs/htmldocs.log" out p=0 bad=() files
	mapfile -t files < <(mt_overlay | cut -f2 | grep -E '\.[ch]$' | grep -v '^tools/')
	out=$(cd "$tree" && python3 scripts/kernel-doc -none -Wall "${files[@]}" 2>&1)
	if [ -z "$out" ]; then p=$((p + 1)); else bad+=("kernel-doc: $(echo "$out" | head -n 3)"); fi
	out=$(cd "$tree" && python3 tools/docs/get_abi.py --dir Documentation/ABI validate 2>&1 | grep malloc_types)
	if [ -z "$out" ]; then p=$((p + 1)); else bad+=("get_abi.py: $(echo "$out" | head -n 3)"); fi
	if (cd "$tree" && PATH=/usr/bin:$PATH PYTHONDONTWRITEBYTECODE=1 \
		make O="$MT_KCACHE/docs" SPHINXDIRS="trace core-api" htmldocs) >"$dlog" 2>&1; then
		out=$(grep -E 'WARNING|ERROR' "$dlog" | grep -E 'malloc_type|dtmalloc')
		if [ -z "$out" ] && [ -f "$MT_KCACHE/docs/Documentation/output/core-api/malloc_types.html" ] &&
			[ -f "$MT_KCACHE/docs/Documentation/output/trace/events-dtmalloc.html" ]; then
			p=$((p + 1))
		else
			bad+=("htmldocs: ${out:-no page written} (log: $dlog)")
		fi
	else
		bad+=("htmldocs failed: $(tail -n 1 "$dlog") (log: $dlog)")
	fi
	echo "docs: $p passed, ${#bad[@]} failed"
	add "$p" "${#bad[@]}"
	for f in "${bad[@]}"; do
		echo "docs: $f"
		problem "docs: $f"
	done
}

# The series (series.py): git format-patch of patches/ and the files this
# repository adds, with its cover letter; applied with git am to a pristine
# tree, which must then equal the tree the kernels above were built from;
# checkpatch.pl --strict on every patch, clean but for the false positives
# that patches/checkpatch-exceptions lists with why.
series_check() {
	echo "check: the patch series (git format-patch, git am, checkpatch --strict)"
	local slog="$MT_CACHE/logs/series.log" p f
	MT_ROOT=$MT_ROOT KERNEL_PKG=$KERNEL_PKG KERNEL_PKG_VERSION=$KERNEL_PKG_VERSION \
		python3 "$MT_DIR/series.py" check "$MT_CACHE/series" "$MT_KCACHE/linux" >"$slog" 2>&1
	grep -v '^series: ok: checkpatch' "$slog" | grep -v '^series: [0-9]* passed'
	read -r p f < <(tally series <"$slog")
	[ -n "$p" ] || { p=0 f=1; }
	echo "series: $p passed, $f failed (log: $slog)"
	add "$p" "$f"
	[ "$f" -eq 0 ] || problem "the patch series (log: $slog)"
}

# Style: each Rust file of the repository that lands in the kernel tree, and
# each one the patches change (as patched, in the tree), must be what rustfmt
# makes of it with the kernel's .rustfmt.toml; each crate under tools/ what
# cargo fmt makes of it. A file is formatted on its own (from stdin), so that
# rustfmt does not follow its `mod` items into the rest of the crate.
style_check() {
	echo "check: rustfmt (kernel Rust files, the kernel's .rustfmt.toml) and cargo fmt (tools)"
	local tree="$MT_KCACHE/linux" f p=0 bad=() files
	# The repository's own files are those prepare-tree.sh laid over the
	# tree (its manifest, kernel paths); the others, those the patches change.
	mapfile -t files < <({
		sed -n 's|^\(.*\.rs\)$|own:\1|p' "$tree/.malloc-types/manifest"
		sed -n 's|^+++ b/\([^[:space:]]*\.rs\)\([[:space:]].*\)\{0,1\}$|patched:\1|p' "$MT_ROOT"/patches/*.patch
	} | sort -u)
	local label path own
	for label in "${files[@]}"; do
		path=$tree/${label#*:}
		case $label in
		own:*) label=${label#own:} own=1 ;;
		patched:*) label="${label#patched:} (as patched)" own=0 ;;
		esac
		if ! rustfmt "+$RUST_VERSION" --edition 2021 --config-path "$tree/.rustfmt.toml" <"$path" 2>/dev/null |
			cmp -s - "$path"; then
			bad+=("$label: not as rustfmt formats it")
		# rustfmt leaves comments as they are: the repository's own files are
		# at most 100 columns wide (the kernel's upstream files are not all).
		elif [ $own = 1 ] && ! awk 'length($0) > 100 { exit 1 }' "$path"; then
			bad+=("$label: lines over 100 columns")
		else
			p=$((p + 1))
		fi
	done
	# And so are the Rust lines the patches add.
	for f in "$MT_ROOT"/patches/*.patch; do
		long=$(awk '/^\+\+\+ / { rs = ($2 ~ /\.rs$/); next }
			rs && /^\+/ && length($0) > 101 { n++ } END { print n + 0 }' "$f")
		if [ "$long" -eq 0 ]; then
			p=$((p + 1))
		else
			bad+=("${f#"$MT_ROOT"/}: $long added Rust lines over 100 columns")
		fi
	done
	for f in "$MT_ROOT"/tools/*/Cargo.toml; do
		f=${f%/Cargo.toml}
		if (cd "$f" && cargo "+$RUST_VERSION" fmt --all --check >/dev/null 2>&1); then
			p=$((p + 1))
		else
			bad+=("${f#"$MT_ROOT"/}: not as cargo fmt formats it")
		fi
	done
	echo "style: $p passed, ${#bad[@]} failed"
	add "$p" "${#bad[@]}"
	for f in "${bad[@]}"; do
		echo "style: $f"
		problem "style: $f"
	done
}

# cargo test of one userspace crate: cargo_test NAME (tools/NAME).
cargo_test() {
	echo "check: cargo test (tools/$1)"
	clog="$MT_CACHE/logs/cargo-test-$1.log"
	mt_cargo_fresh "test-$1" "tools/$1"
	(cd "$MT_ROOT/tools/$1" &&
		CARGO_TARGET_DIR="$MT_CACHE/cargo-target" MEMSTAT_REQUIRE_PROMTOOL=1 \
			MEMSTAT_REQUIRE_PPROF=1 MEMSTAT_REQUIRE_CHROMIUM=1 \
			cargo "+$RUST_VERSION" test --workspace --locked --no-fail-fast) >"$clog" 2>&1
	crc=$?
	[ $crc -ne 0 ] || mt_cargo_built "test-$1"
	read -r p f < <(awk '/^test result:/ { for (i = 1; i <= NF; i++) { if ($(i+1) ~ /^passed/) p += $i; if ($(i+1) ~ /^failed/) f += $i } }
		END { print p + 0, f + 0 }' "$clog")
	if [ $crc -ne 0 ] && [ "$f" -eq 0 ]; then f=1; fi
	echo "cargo test ($1): $p passed, $f failed"
	add "$p" "$f"
	[ $crc -eq 0 ] || { grep -E '^(test .* FAILED|error)' "$clog" | head -n 10; problem "cargo test $1 (log: $clog)"; }
}
tools_check() {
	[ -f "$MT_ROOT/tools/binderload/Cargo.toml" ] && cargo_test binderload
	if [ -f "$MT_ROOT/tools/memstat/Cargo.toml" ]; then
		cargo_test memstat

		# libmemstat for C programs: `make install`, the manual's example and the
		# test program through the installed header and memstat.pc, under
		# ASan/UBSan and valgrind.
		echo "check: libmemstat for C (tools/memstat/capi/tests/run.sh)"
		alog="$MT_CACHE/logs/capi.log"
		mt_cargo_fresh capi-test tools/memstat
		CARGO_TARGET_DIR="$MT_CACHE/cargo-target" CARGO="cargo +$RUST_VERSION" \
			bash "$MT_ROOT/tools/memstat/capi/tests/run.sh" "$MT_CACHE/capi-check" >"$alog" 2>&1
		arc=$?
		[ $arc -ne 0 ] || mt_cargo_built capi-test
		read -r p f < <(tally capi <"$alog")
		p=${p:-0} f=${f:-0}
		if [ $arc -ne 0 ] && [ "$f" -eq 0 ]; then f=1; fi
		echo "libmemstat for C: $p passed, $f failed"
		add "$p" "$f"
		[ $arc -eq 0 ] || { grep -E '^(FAILED|not ok)' "$alog" | head -n 10; problem "libmemstat for C (log: $alog)"; }

		# The stream parser, the name rule with the pattern matcher (text
		# forms, exact patterns, globs on bytes), dtmalloc stacks' reader
		# of trace_pipe with its outputs, and the parsers of slabinfo and the
		# sysctls of the kmalloc coverage.
		mt_cargo_fresh fuzz tools/memstat
		fuzzed=0
		for target in stream names stacks kernel_files; do
			echo "check: fuzzing the $target target (${MT_FUZZ_RUNS:=20000} runs)"
			flog="$MT_CACHE/logs/fuzz-$target.log"
			if CARGO_TARGET_DIR="$MT_CACHE/cargo-target-fuzz" bash "$MT_ROOT/tools/memstat/fuzz/run.sh" "$MT_FUZZ_RUNS" $target >"$flog" 2>&1; then
				echo "fuzz: $target clean after $MT_FUZZ_RUNS runs"
				add 1 0
				fuzzed=$((fuzzed + 1))
			else
				echo "fuzz: FAILED ($target): $(grep -v '^\s*$' "$flog" | tail -n 1)"
				add 0 1
				problem "fuzzing $target (log: $flog)"
			fi
		done
		[ $fuzzed -lt 3 ] || mt_cargo_built fuzz
	fi
}

# The licenses of every crate each Cargo workspace builds on (cargo-deny,
# dev-dependencies included): tools/memstat and its fuzz project are GPL-2.0,
# so nothing that GPL-2.0-only code cannot be combined with (Apache-2.0 alone,
# CDDL-1.0); tools/binderload is Apache-2.0 (tools/binderload/deny.toml says
# why). The GPL-2.0 rules must refuse binderload's tree: the check can fail.
license_check() {
	echo "check: licenses (cargo deny check licenses)"
	local p=0 bad=() ws dir cfg llog
	for ws in tools/memstat:tools/memstat/deny.toml tools/memstat/fuzz:tools/memstat/deny.toml \
		tools/binderload:tools/binderload/deny.toml; do
		dir=${ws%%:*} cfg=${ws#*:}
		[ -f "$MT_ROOT/$dir/Cargo.toml" ] || continue
		llog="$MT_CACHE/logs/licenses-${dir//\//-}.log"
		if "$MT_TOOLS/bin/cargo-deny" --manifest-path "$MT_ROOT/$dir/Cargo.toml" --config "$MT_ROOT/$cfg" \
			--locked --workspace check licenses >"$llog" 2>&1; then
			p=$((p + 1))
		else
			bad+=("$dir: $(grep -cE '^error' "$llog") license errors (log: $llog)")
		fi
	done
	llog="$MT_CACHE/logs/licenses-refused.log"
	if [ -f "$MT_ROOT/tools/binderload/Cargo.toml" ]; then
		if "$MT_TOOLS/bin/cargo-deny" --manifest-path "$MT_ROOT/tools/binderload/Cargo.toml" \
			--config "$MT_ROOT/tools/memstat/deny.toml" --locked check licenses >"$llog" 2>&1; then
			bad+=("the GPL-2.0 rules accept binderload's Apache-2.0-only crates (log: $llog)")
		elif grep -q 'rejected' "$llog"; then
			p=$((p + 1))
		else
			bad+=("cargo deny did not run on binderload (log: $llog)")
		fi
	fi
	echo "licenses: $p passed, ${#bad[@]} failed"
	[ ${#bad[@]} -eq 0 ] || printf '  %s\n' "${bad[@]}"
	add "$p" "${#bad[@]}"
	[ ${#bad[@]} -eq 0 ] || problem "licenses"
}

# The parser of the selection files (mm/malloc_type_pattern.c), fuzzed with
# libFuzzer in user space against the kernel's glob_match() and an oracle of
# the pattern rule (tools/testing/malloc_types/fuzz/).
selection_fuzz() {
	echo "check: fuzzing the selection files' parser (${MT_FUZZ_SELECTION_RUNS:=200000} runs)"
	slog="$MT_CACHE/logs/fuzz-selection.log"
	if bash "$MT_DIR/fuzz/run.sh" "$MT_KCACHE/linux" "$MT_FUZZ_SELECTION_RUNS" >"$slog" 2>&1; then
		echo "fuzz: selection parser clean after $MT_FUZZ_SELECTION_RUNS runs"
		add 1 0
	else
		echo "fuzz: FAILED: $(grep -E 'check failed|ERROR|SUMMARY' "$slog" | head -n 1)"
		add 0 1
		problem "fuzzing the selection files' parser (log: $slog)"
	fi
}

# The parts, in the order their output is printed. A background lane runs
# its parts one after the other (lane NAME PART...); a part in the
# foreground prints as it goes (fg_part PART), one in a lane when it is
# joined (join_part PART). A part's name is its function's, with - for _.
lane_pids=()
run_part() { # run_part PART: its function, output to $parts/PART.out
	part=$1
	("${1//-/_}") >"$parts/$1.out" 2>&1
	touch "$parts/$1.done"
}
lane() { # lane NAME PART...: the parts in the background, at a lower priority
	local name=$1
	shift
	(
		renice -n 10 -p "$BASHPID" >/dev/null
		for p in "$@"; do run_part "$p"; done
	) &
	lane_pids+=($!)
	echo "check: started in the background ($name): $*"
}
fg_part() { # fg_part PART
	part=$1
	"${1//-/_}" 2>&1 | tee "$parts/$1.out"
	part=main
}
join_part() { # join_part PART: wait for a part of a lane, then print its output
	while [ ! -e "$parts/$1.done" ]; do
		local alive=0 pid
		for pid in "${lane_pids[@]}"; do kill -0 "$pid" 2>/dev/null && alive=1; done
		if [ $alive = 0 ] && [ ! -e "$parts/$1.done" ]; then
			part=$1 add 0 1
			part=$1 problem "$1: its lane ended before it did"
			break
		fi
		sleep 2
	done
	cat "$parts/$1.out" 2>/dev/null
}
# On any exit, nothing of this run may go on holding the cache's lock: the
# lanes' processes, the vmcore watcher and the Prometheus server end with it.
descendants() { local c; for c in $(pgrep -P "$1"); do descendants "$c"; echo "$c"; done; }
cleanup() {
	local pids
	pids=$(descendants $$)
	# shellcheck disable=SC2086
	[ -n "$pids" ] && kill $pids 2>/dev/null
	python3 "$MT_DIR/prometheus.py" stop "$prom_dir" >/dev/null 2>&1
	rm -rf "$parts"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Set-up and the tree first; then the two lanes start: lane 1 builds the
# kernels the boots after the first ones need, the one needed first first;
# lane 2 runs the checks that need no kernel of their own. The test kernel,
# its tools and initramfs are built in the foreground meanwhile, at the
# higher priority: everything after waits for them.
bash "$MT_DIR/setup.sh" || exit 1
bash "$MT_DIR/prepare-tree.sh" >/dev/null || exit 1
lane kernels nomt-build arm64-build kunit-py-build
lane checks docs-check series-check series-build style-check tools-check license-check selection-fuzz
bash "$MT_DIR/build-kernel.sh" test >/dev/null || exit 1
fg_part rust-lints
bash "$MT_DIR/build-tools.sh" x86_64 || exit 1
bash "$MT_DIR/mkinitramfs.sh" test >/dev/null || exit 1
fg_part x86-boots
join_part nomt-build
fg_part x86-vmcore
join_part arm64-build
fg_part arm64-boot
join_part kunit-py-build
fg_part kunit-py-check
for p in docs-check series-check series-build style-check tools-check license-check selection-fuzz; do
	join_part "$p"
done
wait

# The sums of every part's counts, and every part's failures.
read -r passed failed < <(cat "$parts"/*.counts 2>/dev/null | awk '{ p += $1; f += $2 } END { print p + 0, f + 0 }')
nproblems=0
while IFS= read -r p; do
	echo "check: FAILED: $p"
	nproblems=$((nproblems + 1))
done < <(cat "$parts"/*.problems 2>/dev/null)
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ "$nproblems" -eq 0 ]
