// SPDX-License-Identifier: GPL-2.0
/*
 * Every function and accessor of <memstat.h>, and every error path, through
 * the installed library: run by tests/run.sh under AddressSanitizer and
 * UndefinedBehaviorSanitizer (linked with libmemstat.so) and under valgrind
 * (linked with libmemstat.a).
 *
 * Usage: memstat_test FIXTURES SLABDIR SYSCTLDIR [CORE]
 *   FIXTURES   the directory examples/capi_fixtures.rs wrote (first.stream,
 *              second.stream, truncated.stream, version99.stream) and
 *              tests/fixtures/slabinfo
 *   SLABDIR    a SLUB sysfs directory (tools/memstat/tests/fixtures/slab)
 *   SYSCTLDIR  a sysctl tree (tools/memstat/tests/fixtures/sysctl)
 *   CORE       a vmcore with malloc types (optional)
 *
 * Every MEMSTAT_ERROR_* code is produced but MEMSTAT_ERROR_NOMEMORY: the
 * library's allocations abort the process when memory is out, as Rust's do,
 * but for a stream's buffer, whose failure it reports and which no test can
 * make fail reliably.
 *
 * Prints TAP ("ok N - ...", "not ok N - ..."); exits 1 if a check failed.
 */

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <memstat.h>

static int checks, failures;

#define CHECK(cond, ...)                                                      \
	do {                                                                  \
		checks++;                                                     \
		if (cond) {                                                   \
			printf("ok %d - ", checks);                           \
		} else {                                                      \
			failures++;                                           \
			printf("not ok %d - ", checks);                       \
		}                                                             \
		printf(__VA_ARGS__);                                          \
		printf(" (%s:%d)\n", __FILE__, __LINE__);                     \
	} while (0)

#define CHECK_U64(got, want, what)                                            \
	do {                                                                  \
		unsigned long long g_ = (got), w_ = (want);                   \
		CHECK(g_ == w_, "%s: %llu, want %llu", what, g_, w_);         \
	} while (0)

static char fixtures[4096];

static const char *fixture(const char *name)
{
	static char path[8192];

	snprintf(path, sizeof(path), "%s/%s", fixtures, name);
	return path;
}

static int count_entries(struct memory_type_list *mtlp)
{
	struct memory_type *mtp;
	int n = 0;

	for (mtp = memstat_mtl_first(mtlp); mtp != NULL; mtp = memstat_mtl_next(mtp))
		n++;
	return n;
}

static void test_strerror(void)
{
	static const struct {
		int error;
		const char *text;
	} texts[] = {
		{ MEMSTAT_ERROR_NOMEMORY, "Cannot allocate memory" },
		{ MEMSTAT_ERROR_VERSION, "Version mismatch" },
		{ MEMSTAT_ERROR_PERMISSION, "Permission denied" },
		{ MEMSTAT_ERROR_DATAERROR, "Data format error" },
		{ MEMSTAT_ERROR_KVM, "KVM error" },
		{ MEMSTAT_ERROR_KVM_NOSYMBOL, "KVM unable to find symbol" },
		{ MEMSTAT_ERROR_KVM_SHORTREAD, "KVM short read" },
		{ MEMSTAT_ERROR_IO, "I/O error" },
		{ MEMSTAT_ERROR_INVALID, "Invalid argument" },
		{ MEMSTAT_ERROR_UNDEFINED, "Unknown error" },
		{ 4, "Unknown error" },
		{ -1, "Unknown error" },
	};
	size_t i;

	for (i = 0; i < sizeof(texts) / sizeof(texts[0]); i++)
		CHECK(strcmp(memstat_strerror(texts[i].error), texts[i].text) == 0,
		    "memstat_strerror(%d) is \"%s\"", texts[i].error, texts[i].text);
}

static void test_null_arguments(void)
{
	struct memory_type_list *mtlp;
	char errbuf[MEMSTAT_KVM_ERRBUF_SIZE];

	errno = 0;
	CHECK(memstat_mtl_first(NULL) == NULL && errno == EINVAL, "memstat_mtl_first(NULL)");
	CHECK(memstat_mtl_next(NULL) == NULL, "memstat_mtl_next(NULL)");
	CHECK(memstat_mtl_find(NULL, ALLOCATOR_ANY, "x") == NULL, "memstat_mtl_find(NULL, ...)");
	CHECK(memstat_mtl_geterror(NULL) == MEMSTAT_ERROR_INVALID, "memstat_mtl_geterror(NULL)");
	CHECK(strcmp(memstat_mtl_geterrmsg(NULL), "") == 0, "memstat_mtl_geterrmsg(NULL)");
	memstat_mtl_free(NULL);
	CHECK(1, "memstat_mtl_free(NULL) returns");
	errno = 0;
	CHECK(memstat_sysctl_all(NULL, 0) == -1 && errno == EINVAL, "memstat_sysctl_all(NULL)");
	CHECK(memstat_sysctl_malloc(NULL, 0) == -1, "memstat_sysctl_malloc(NULL)");
	CHECK(memstat_sysctl_uma(NULL, 0) == -1, "memstat_sysctl_uma(NULL)");
	CHECK(memstat_file_malloc(NULL, fixture("first.stream")) == -1, "memstat_file_malloc(NULL)");
	CHECK(memstat_file_uma(NULL, fixture("slabinfo")) == -1, "memstat_file_uma(NULL)");
	CHECK(memstat_kvm_all(NULL, NULL) == -1, "memstat_kvm_all(NULL, NULL)");
	CHECK(memstat_kvm_malloc(NULL, NULL) == -1, "memstat_kvm_malloc(NULL, NULL)");
	CHECK(memstat_kvm_uma(NULL, NULL) == -1, "memstat_kvm_uma(NULL, NULL)");
	memstat_kvm_close(NULL);
	errbuf[0] = 'x';
	errno = 0;
	CHECK(memstat_kvm_open(NULL, NULL, errbuf, sizeof(errbuf)) == NULL && errno == EINVAL &&
	    strstr(errbuf, "NULL core") != NULL, "memstat_kvm_open(NULL, NULL): %s", errbuf);

	/* Accessors of NULL return 0, "" or NULL; setters do nothing. */
	errno = 0;
	CHECK(strcmp(memstat_get_name(NULL), "") == 0 && errno == EINVAL, "memstat_get_name(NULL)");
	errno = 0;
	CHECK(memstat_get_allocator(NULL) == ALLOCATOR_UNKNOWN && errno == EINVAL,
	    "memstat_get_allocator(NULL) sets errno");
	CHECK(strcmp(memstat_get_owner(NULL), "") == 0, "memstat_get_owner(NULL)");
	CHECK(strcmp(memstat_get_probename(NULL), "") == 0, "memstat_get_probename(NULL)");
	CHECK(memstat_get_allocator(NULL) == ALLOCATOR_UNKNOWN, "memstat_get_allocator(NULL)");
	CHECK(memstat_get_bytes(NULL) == 0 && memstat_get_count(NULL) == 0 &&
	    memstat_get_maxcpus(NULL) == 0, "accessors of NULL are 0");
	CHECK(memstat_get_caller_pointer(NULL, 0) == NULL, "memstat_get_caller_pointer(NULL)");
	memstat_set_caller_pointer(NULL, 0, &checks);
	memstat_set_caller_uint64(NULL, 0, 1);
	memstat_set_percpu_caller_pointer(NULL, 0, 0, &checks);
	memstat_set_percpu_caller_uint64(NULL, 0, 0, 1);
	CHECK(memstat_get_percpu_memalloced(NULL, 0) == 0, "memstat_get_percpu_memalloced(NULL)");
	CHECK(memstat_malloc_zone_used(NULL, 0) == 0, "memstat_malloc_zone_used(NULL)");

	/* A NULL path or name is the caller's error, recorded in the list. */
	mtlp = memstat_mtl_alloc();
	CHECK(mtlp != NULL, "memstat_mtl_alloc");
	CHECK(memstat_mtl_geterror(mtlp) == MEMSTAT_ERROR_UNDEFINED,
	    "a new list's error is MEMSTAT_ERROR_UNDEFINED");
	CHECK(memstat_mtl_first(mtlp) == NULL, "a new list is empty");
	CHECK(memstat_file_malloc(mtlp, NULL) == -1 &&
	    memstat_mtl_geterror(mtlp) == MEMSTAT_ERROR_INVALID, "memstat_file_malloc(list, NULL)");
	CHECK(memstat_file_uma(mtlp, NULL) == -1 &&
	    memstat_mtl_geterror(mtlp) == MEMSTAT_ERROR_INVALID, "memstat_file_uma(list, NULL)");
	CHECK(memstat_mtl_find(mtlp, ALLOCATOR_ANY, NULL) == NULL &&
	    memstat_mtl_geterror(mtlp) == MEMSTAT_ERROR_INVALID, "memstat_mtl_find(list, ..., NULL)");
	CHECK(memstat_kvm_malloc(mtlp, NULL) == -1 &&
	    memstat_mtl_geterror(mtlp) == MEMSTAT_ERROR_INVALID, "memstat_kvm_malloc(list, NULL)");
	CHECK(memstat_kvm_malloc(mtlp, &checks) == -1 &&
	    memstat_mtl_geterror(mtlp) == MEMSTAT_ERROR_INVALID,
	    "memstat_kvm_malloc(list, not a handle)");
	CHECK(memstat_sysctl_malloc(mtlp, 1) == -1 &&
	    memstat_mtl_geterror(mtlp) == MEMSTAT_ERROR_INVALID &&
	    strstr(memstat_mtl_geterrmsg(mtlp), "flags") != NULL,
	    "memstat_sysctl_malloc(list, 1): %s", memstat_mtl_geterrmsg(mtlp));
	CHECK(memstat_sysctl_uma(mtlp, -1) == -1, "memstat_sysctl_uma(list, -1)");
	CHECK(memstat_sysctl_all(mtlp, 2) == -1, "memstat_sysctl_all(list, 2)");
	memstat_mtl_free(mtlp);
}

static void test_bad_sources(void)
{
	struct memory_type_list *mtlp = memstat_mtl_alloc();
	struct memory_type *mtp;
	char errbuf[MEMSTAT_KVM_ERRBUF_SIZE];
	char tiny[8];

	errno = 0;
	CHECK(memstat_file_malloc(mtlp, fixture("no-such.stream")) == -1 &&
	    memstat_mtl_geterror(mtlp) == MEMSTAT_ERROR_IO && errno == ENOENT,
	    "a missing stream: MEMSTAT_ERROR_IO, ENOENT: %s", memstat_mtl_geterrmsg(mtlp));
	CHECK(memstat_file_malloc(mtlp, fixture("truncated.stream")) == -1 &&
	    memstat_mtl_geterror(mtlp) == MEMSTAT_ERROR_DATAERROR,
	    "a truncated stream: MEMSTAT_ERROR_DATAERROR: %s", memstat_mtl_geterrmsg(mtlp));
	CHECK(memstat_file_malloc(mtlp, fixture("version99.stream")) == -1 &&
	    memstat_mtl_geterror(mtlp) == MEMSTAT_ERROR_VERSION,
	    "a stream of version 99: MEMSTAT_ERROR_VERSION: %s", memstat_mtl_geterrmsg(mtlp));
	CHECK(memstat_file_malloc(mtlp, fixture("slabinfo")) == -1 &&
	    memstat_mtl_geterror(mtlp) != MEMSTAT_ERROR_UNDEFINED,
	    "a slabinfo file read as a stream fails: %s", memstat_mtl_geterrmsg(mtlp));
	CHECK(memstat_file_uma(mtlp, fixture("first.stream")) == -1 &&
	    memstat_mtl_geterror(mtlp) == MEMSTAT_ERROR_DATAERROR,
	    "a stream read as slabinfo: MEMSTAT_ERROR_DATAERROR: %s", memstat_mtl_geterrmsg(mtlp));
	CHECK(memstat_mtl_first(mtlp) == NULL, "failed reads leave the list empty");

	/* A source the caller may not read (0200 even for root, in procfs). */
	errno = 0;
	CHECK(memstat_file_malloc(mtlp, "/proc/sys/vm/drop_caches") == -1 &&
	    memstat_mtl_geterror(mtlp) == MEMSTAT_ERROR_PERMISSION && errno == EACCES,
	    "an unreadable stream: MEMSTAT_ERROR_PERMISSION, EACCES: %s",
	    memstat_mtl_geterrmsg(mtlp));

	/* A failed update leaves the list as it was. */
	CHECK(memstat_file_malloc(mtlp, fixture("first.stream")) == 0, "read first.stream");
	mtp = memstat_mtl_first(mtlp);
	CHECK(memstat_file_malloc(mtlp, fixture("truncated.stream")) == -1 &&
	    count_entries(mtlp) == 3 && memstat_mtl_first(mtlp) == mtp &&
	    strcmp(memstat_get_name(mtp), "devbuf") == 0,
	    "a failed update keeps the entries and their addresses");

	/* Environment overrides of the live sources. */
	setenv("MEMSTAT_MALLOC_STATS", fixture("no-such.stream"), 1);
	CHECK(memstat_sysctl_malloc(mtlp, 0) == -1 &&
	    memstat_mtl_geterror(mtlp) == MEMSTAT_ERROR_IO,
	    "memstat_sysctl_malloc of a missing MEMSTAT_MALLOC_STATS");
	CHECK(memstat_sysctl_all(mtlp, 0) == -1, "memstat_sysctl_all stops at the malloc failure");
	unsetenv("MEMSTAT_MALLOC_STATS");
	memstat_mtl_free(mtlp);

	errno = 0;
	CHECK(memstat_kvm_open(NULL, fixture("no-such.core"), errbuf, sizeof(errbuf)) == NULL &&
	    errno == ENOENT && strstr(errbuf, "no-such.core") != NULL,
	    "memstat_kvm_open of a missing core: %s", errbuf);
	CHECK(memstat_kvm_open(NULL, fixture("first.stream"), errbuf, sizeof(errbuf)) == NULL &&
	    errbuf[0] != '\0', "memstat_kvm_open of a stream: %s", errbuf);
	memset(tiny, 'x', sizeof(tiny));
	CHECK(memstat_kvm_open(NULL, fixture("first.stream"), tiny, sizeof(tiny)) == NULL &&
	    strlen(tiny) == sizeof(tiny) - 1, "memstat_kvm_open cuts its message to the buffer");
	CHECK(memstat_kvm_open(NULL, fixture("first.stream"), NULL, 0) == NULL,
	    "memstat_kvm_open with no buffer");
}

static void test_malloc(void)
{
	struct memory_type_list *mtlp = memstat_mtl_alloc();
	struct memory_type *devbuf, *foo, *odd, *pipe, *mtp;
	const char *owner, *probe;
	uint64_t sum;
	int cpu;

	CHECK(memstat_file_malloc(mtlp, fixture("first.stream")) == 0, "read first.stream");
	CHECK(count_entries(mtlp) == 3, "three malloc types");
	devbuf = memstat_mtl_first(mtlp);
	foo = memstat_mtl_next(devbuf);
	odd = memstat_mtl_next(foo);
	CHECK(memstat_mtl_next(odd) == NULL, "the list ends after the third");
	CHECK(strcmp(memstat_get_name(devbuf), "devbuf") == 0, "first is devbuf");
	CHECK(strcmp(memstat_get_name(foo), "foo bar") == 0, "second is \"foo bar\"");
	CHECK(strcmp(memstat_get_name(odd), "odd\\012name\\377") == 0,
	    "a name's bytes in text form: %s", memstat_get_name(odd));
	CHECK(memstat_mtl_find(mtlp, ALLOCATOR_MALLOC, "devbuf") == devbuf, "find devbuf");
	CHECK(memstat_mtl_find(mtlp, ALLOCATOR_ANY, "foo bar") == foo, "find \"foo bar\", any");
	CHECK(memstat_mtl_find(mtlp, ALLOCATOR_UMA, "devbuf") == NULL, "no slab cache devbuf");
	CHECK(memstat_mtl_find(mtlp, ALLOCATOR_UNKNOWN, "devbuf") == NULL,
	    "ALLOCATOR_UNKNOWN matches nothing");
	CHECK(memstat_mtl_find(mtlp, 77, "devbuf") == NULL, "an unknown allocator matches nothing");
	CHECK(memstat_mtl_find(mtlp, ALLOCATOR_MALLOC, "odd\\012name\\377") == odd,
	    "find a name by its text form");
	CHECK(memstat_mtl_find(mtlp, ALLOCATOR_MALLOC, "\xff") == NULL,
	    "a name that is no text form matches nothing");
	CHECK(memstat_mtl_find(mtlp, ALLOCATOR_MALLOC, "nothing") == NULL, "find nothing");

	CHECK(memstat_get_allocator(devbuf) == ALLOCATOR_MALLOC, "devbuf is ALLOCATOR_MALLOC");
	CHECK_U64(memstat_get_memalloced(devbuf), 12288 + 64, "devbuf memalloced");
	CHECK_U64(memstat_get_memfreed(devbuf), 4096, "devbuf memfreed");
	CHECK_U64(memstat_get_numallocs(devbuf), 4, "devbuf numallocs");
	CHECK_U64(memstat_get_numfrees(devbuf), 1, "devbuf numfrees");
	CHECK_U64(memstat_get_bytes(devbuf), 8192 + 64, "devbuf bytes");
	CHECK_U64(memstat_get_count(devbuf), 3, "devbuf count");
	CHECK_U64(memstat_get_sizemask(devbuf), (1 << 11) | (1 << 3), "devbuf sizemask");
	CHECK_U64(memstat_get_failures(devbuf), 0, "devbuf failures");
	CHECK_U64(memstat_get_peak(devbuf), 12288, "devbuf peak");
	CHECK_U64(memstat_get_id(devbuf), 1, "devbuf id");
	CHECK(strcmp(memstat_get_owner(devbuf), "vmlinux") == 0, "devbuf owner vmlinux");
	CHECK(strcmp(memstat_get_probename(foo), "foo_bar") == 0, "foo bar's probe name foo_bar");
	CHECK(strcmp(memstat_get_owner(foo), "foo_mod") == 0, "foo bar's owner foo_mod");
	CHECK_U64(memstat_get_failures(foo), 1, "foo bar failures");
	CHECK_U64(memstat_get_peak(foo), 0, "an untracked peak is 0");
	CHECK_U64(memstat_get_countlimit(devbuf), 0, "countlimit");
	CHECK_U64(memstat_get_byteslimit(devbuf), 0, "byteslimit");
	CHECK_U64(memstat_get_size(devbuf), 0, "a malloc type's size");
	CHECK_U64(memstat_get_rsize(devbuf), 0, "a malloc type's rsize");
	CHECK_U64(memstat_get_free(devbuf), 0, "free");
	CHECK_U64(memstat_get_sleeps(devbuf), 0, "sleeps");
	CHECK_U64(memstat_get_xdomain(devbuf), 0, "xdomain");
	CHECK_U64(memstat_get_zonefree(devbuf), 0, "zonefree");
	CHECK_U64(memstat_get_kegfree(devbuf), 0, "kegfree");
	CHECK(memstat_get_maxcpus(devbuf) == 4, "4 per-CPU records");

	/* Per-CPU figures add up to the totals. */
	sum = 0;
	for (cpu = 0; cpu < memstat_get_maxcpus(devbuf); cpu++)
		sum += memstat_get_percpu_memalloced(devbuf, cpu);
	CHECK_U64(sum, memstat_get_memalloced(devbuf), "sum of percpu memalloced");
	CHECK_U64(memstat_get_percpu_memfreed(devbuf, 0), 4096, "percpu memfreed cpu 0");
	CHECK_U64(memstat_get_percpu_numallocs(devbuf, 2), 1, "percpu numallocs cpu 2");
	CHECK_U64(memstat_get_percpu_numfrees(devbuf, 0), 1, "percpu numfrees cpu 0");
	CHECK_U64(memstat_get_percpu_sizemask(devbuf, 2), 1 << 3, "percpu sizemask cpu 2");
	CHECK_U64(memstat_get_percpu_free(devbuf, 1), 0, "percpu free cpu 1");
	CHECK_U64(memstat_get_percpu_failures(foo, 1), 1, "percpu failures cpu 1");

	/* CPUs and caller indexes out of range: 0, and MEMSTAT_ERROR_INVALID. */
	CHECK_U64(memstat_get_percpu_memalloced(devbuf, 4), 0, "cpu 4 of 4");
	CHECK(memstat_mtl_geterror(mtlp) == MEMSTAT_ERROR_INVALID,
	    "cpu out of range recorded: %s", memstat_mtl_geterrmsg(mtlp));
	CHECK_U64(memstat_get_percpu_numallocs(devbuf, -1), 0, "cpu -1");
	CHECK_U64(memstat_get_percpu_memfreed(devbuf, 1 << 30), 0, "cpu 2^30");
	CHECK_U64(memstat_get_percpu_numfrees(devbuf, 99), 0, "cpu 99 numfrees");
	CHECK_U64(memstat_get_percpu_sizemask(devbuf, 99), 0, "cpu 99 sizemask");
	CHECK_U64(memstat_get_percpu_free(devbuf, 99), 0, "cpu 99 free");
	CHECK_U64(memstat_get_percpu_failures(devbuf, 99), 0, "cpu 99 failures");
	CHECK(memstat_get_caller_pointer(devbuf, MEMSTAT_MAXCALLER) == NULL,
	    "caller pointer %d", MEMSTAT_MAXCALLER);
	CHECK_U64(memstat_get_caller_uint64(devbuf, -1), 0, "caller uint64 -1");
	memstat_set_caller_uint64(devbuf, MEMSTAT_MAXCALLER, 5);
	memstat_set_caller_pointer(devbuf, -3, &checks);
	memstat_set_percpu_caller_uint64(devbuf, 4, 0, 5);
	memstat_set_percpu_caller_uint64(devbuf, 0, MEMSTAT_MAXCALLER, 5);
	memstat_set_percpu_caller_pointer(devbuf, -1, 0, &checks);
	CHECK(memstat_get_percpu_caller_pointer(devbuf, 0, MEMSTAT_MAXCALLER) == NULL,
	    "percpu caller pointer index out of range");
	CHECK_U64(memstat_get_percpu_caller_uint64(devbuf, 4, 0), 0,
	    "percpu caller uint64 of cpu 4");

	/* Caller-owned fields. */
	memstat_set_caller_pointer(devbuf, 0, &checks);
	memstat_set_caller_pointer(devbuf, MEMSTAT_MAXCALLER - 1, devbuf);
	memstat_set_caller_uint64(devbuf, 3, 0xdeadbeefcafeULL);
	memstat_set_percpu_caller_pointer(devbuf, 3, 1, &failures);
	memstat_set_percpu_caller_uint64(devbuf, 2, MEMSTAT_MAXCALLER - 1, 42);
	memstat_set_caller_uint64(foo, 0, 7);
	CHECK(memstat_get_caller_pointer(devbuf, 0) == &checks, "caller pointer 0");
	CHECK(memstat_get_caller_pointer(devbuf, MEMSTAT_MAXCALLER - 1) == devbuf,
	    "caller pointer 15");
	CHECK(memstat_get_caller_pointer(devbuf, 1) == NULL, "caller pointer 1 starts NULL");
	CHECK_U64(memstat_get_caller_uint64(devbuf, 3), 0xdeadbeefcafeULL, "caller uint64 3");
	CHECK(memstat_get_percpu_caller_pointer(devbuf, 3, 1) == &failures, "percpu pointer");
	CHECK_U64(memstat_get_percpu_caller_uint64(devbuf, 2, MEMSTAT_MAXCALLER - 1), 42,
	    "percpu uint64");

	/* Zones: none before a query of a kernel; the list's own for zone_used. */
	CHECK(memstat_malloc_zone_get_count() == 0, "no zone table before a kernel query");
	CHECK(memstat_malloc_zone_get_size(0) == 0, "zone 0 size before a kernel query");
	CHECK(memstat_malloc_zone_used(devbuf, 11) == 1, "devbuf used zone 11");
	CHECK(memstat_malloc_zone_used(devbuf, 3) == 1, "devbuf used zone 3");
	CHECK(memstat_malloc_zone_used(devbuf, 4) == 0, "devbuf did not use zone 4");
	CHECK(memstat_malloc_zone_used(devbuf, 64) == 0, "zone 64 is out of range");
	CHECK(memstat_malloc_zone_used(devbuf, (size_t)-1) == 0, "zone SIZE_MAX is out of range");

	/* The next read: an update keeps the entries that stay, in place, with their
	 * caller fields; removes the one that went; appends the new one. */
	CHECK(memstat_file_malloc(mtlp, fixture("second.stream")) == 0, "read second.stream");
	CHECK(count_entries(mtlp) == 3, "three malloc types again");
	CHECK(memstat_mtl_first(mtlp) == devbuf, "devbuf is where it was");
	CHECK(memstat_mtl_next(devbuf) == odd, "the module's type is gone, odd follows devbuf");
	pipe = memstat_mtl_next(odd);
	CHECK(pipe != NULL && strcmp(memstat_get_name(pipe), "pipe") == 0, "pipe appended");
	CHECK(memstat_mtl_find(mtlp, ALLOCATOR_ANY, "foo bar") == NULL, "foo bar removed");
	CHECK_U64(memstat_get_memalloced(devbuf), 12288 + 64 + 128, "devbuf memalloced updated");
	CHECK_U64(memstat_get_count(devbuf), 5, "devbuf count updated");
	CHECK(memstat_get_caller_pointer(devbuf, 0) == &checks, "caller pointer kept");
	CHECK_U64(memstat_get_caller_uint64(devbuf, 3), 0xdeadbeefcafeULL, "caller uint64 kept");
	CHECK(memstat_get_percpu_caller_pointer(devbuf, 3, 1) == &failures, "percpu pointer kept");
	CHECK_U64(memstat_get_caller_uint64(pipe, 3), 0, "a new entry's caller fields are 0");
	CHECK_U64(memstat_get_bytes(pipe), 4096, "pipe bytes over 4 CPUs");

	/* An entry's strings stay valid while the entry does, even when an
	 * update changes them: here devbuf's owner. */
	owner = memstat_get_owner(devbuf);
	probe = memstat_get_probename(devbuf);
	CHECK(memstat_file_malloc(mtlp, fixture("owner.stream")) == 0, "read owner.stream");
	CHECK(memstat_mtl_first(mtlp) == devbuf && count_entries(mtlp) == 1,
	    "devbuf stays, the others go");
	CHECK(strcmp(memstat_get_owner(devbuf), "other_mod") == 0, "devbuf's new owner");
	CHECK(strcmp(owner, "vmlinux") == 0 && strcmp(probe, "devbuf") == 0,
	    "the owner and probe name taken before the update are still readable");
	CHECK(memstat_file_malloc(mtlp, fixture("second.stream")) == 0, "read second.stream again");

	/* The slab caches join the same list. */
	CHECK(memstat_file_uma(mtlp, fixture("slabinfo")) == 0, "read the slabinfo fixture");
	mtp = memstat_mtl_find(mtlp, ALLOCATOR_UMA, "skbuff_head_cache");
	CHECK(mtp != NULL && memstat_get_allocator(mtp) == ALLOCATOR_UMA, "skbuff_head_cache");
	CHECK(memstat_mtl_find(mtlp, ALLOCATOR_ANY, "devbuf") == devbuf, "devbuf still there");
	CHECK(count_entries(mtlp) == 7, "3 malloc types and 4 slab caches: %d", count_entries(mtlp));
	memstat_mtl_free(mtlp);
}

static int write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	if (f == NULL)
		return -1;
	fputs(text, f);
	return fclose(f);
}

/* A SLUB sysfs tree with one unnamed cache, :0000064, read; then the alias
 * kmalloc-64 is linked to it and the tree read again. */
static int test_renamed_cache(void)
{
	static const char *attrs[] = { "object_size", "slab_size", "objects", "total_objects" };
	struct memory_type_list *mtlp = memstat_mtl_alloc();
	struct memory_type *mtp;
	char dir[4096], path[8192];
	const char *name;
	size_t i;
	int ok;

	snprintf(dir, sizeof(dir), "%s", fixture("sys"));
	mkdir(dir, 0755);
	snprintf(path, sizeof(path), "%s/:0000064", dir);
	mkdir(path, 0755);
	for (i = 0; i < sizeof(attrs) / sizeof(attrs[0]); i++) {
		snprintf(path, sizeof(path), "%s/:0000064/%s", dir, attrs[i]);
		if (write_file(path, "64\n") != 0)
			return -1;
	}
	snprintf(path, sizeof(path), "%s/kmalloc-64", dir);
	unlink(path);
	if (memstat_file_uma(mtlp, dir) != 0)
		return -1;
	mtp = memstat_mtl_first(mtlp);
	name = memstat_get_name(mtp);
	CHECK(strcmp(name, ":0000064") == 0, "an unnamed cache: %s", name);
	if (symlink(":0000064", path) != 0 || memstat_file_uma(mtlp, dir) != 0)
		return -1;
	ok = memstat_mtl_first(mtlp) == mtp && strcmp(memstat_get_name(mtp), "kmalloc-64") == 0 &&
	    strcmp(name, ":0000064") == 0;
	memstat_mtl_free(mtlp);
	return ok ? 0 : -1;
}

static void test_slab(const char *slabdir)
{
	struct memory_type_list *mtlp = memstat_mtl_alloc();
	struct memory_type *mtp, *alias;

	CHECK(memstat_file_uma(mtlp, slabdir) == 0, "read the SLUB sysfs fixture");
	mtp = memstat_mtl_find(mtlp, ALLOCATOR_UMA, "kmalloc-64");
	CHECK(mtp != NULL, "kmalloc-64");
	CHECK(strcmp(memstat_get_owner(mtp), "") == 0, "a slab cache has no owner");
	CHECK_U64(memstat_get_size(mtp), 64, "kmalloc-64 size");
	CHECK_U64(memstat_get_rsize(mtp), 64, "kmalloc-64 rsize");
	CHECK_U64(memstat_get_count(mtp), 2548, "kmalloc-64 count");
	CHECK_U64(memstat_get_free(mtp), 12, "kmalloc-64 free");
	CHECK_U64(memstat_get_id(mtp), 0, "a slab cache's id");
	CHECK(memstat_get_maxcpus(mtp) == 0, "a slab cache has no per-CPU records");
	CHECK_U64(memstat_get_percpu_memalloced(mtp, 0), 0, "no CPU 0 for a slab cache");
	alias = memstat_mtl_find(mtlp, ALLOCATOR_UMA, "anon_vma_chain");
	CHECK(alias != NULL && alias == memstat_mtl_find(mtlp, ALLOCATOR_UMA, ":0000024"),
	    "a merged cache is found by its alias and its directory");
	memstat_set_caller_uint64(mtp, 0, 99);
	CHECK(memstat_file_uma(mtlp, slabdir) == 0 &&
	    memstat_mtl_find(mtlp, ALLOCATOR_UMA, "kmalloc-64") == mtp &&
	    memstat_get_caller_uint64(mtp, 0) == 99, "a second read keeps the entry and its field");

	/* A cache whose shown name changes (a first alias appears) keeps its
	 * entry, and the name taken before stays readable. */
	CHECK(test_renamed_cache() == 0, "a renamed cache's old name stays readable");

	/* The environment names the live sources for memstat_sysctl_uma. */
	setenv("MEMSTAT_SLAB_DIR", slabdir, 1);
	CHECK(memstat_sysctl_uma(mtlp, 0) == 0 &&
	    memstat_mtl_find(mtlp, ALLOCATOR_UMA, "kmalloc-64") == mtp, "MEMSTAT_SLAB_DIR");
	unsetenv("MEMSTAT_SLAB_DIR");
	setenv("MEMSTAT_SLABINFO", fixture("slabinfo"), 1);
	CHECK(memstat_sysctl_uma(mtlp, 0) == 0 &&
	    memstat_mtl_find(mtlp, ALLOCATOR_UMA, "skbuff_head_cache") != NULL &&
	    memstat_mtl_find(mtlp, ALLOCATOR_UMA, "anon_vma_chain") == NULL,
	    "MEMSTAT_SLABINFO alone: the caches of the file, the others removed");
	unsetenv("MEMSTAT_SLABINFO");
	memstat_mtl_free(mtlp);
}

static void test_sysctl(const char *sysctldir)
{
	struct memory_type_list *mtlp = memstat_mtl_alloc();
	struct memory_type *devbuf;

	setenv("MEMSTAT_MALLOC_STATS", fixture("first.stream"), 1);
	setenv("MEMSTAT_SYSCTL_DIR", sysctldir, 1);
	CHECK(memstat_sysctl_malloc(mtlp, 0) == 0, "memstat_sysctl_malloc from the environment");
	CHECK(memstat_malloc_zone_get_count() == 13, "13 zones: %zu",
	    memstat_malloc_zone_get_count());
	CHECK(memstat_malloc_zone_get_size(0) == 8, "zone 0 is 8 bytes");
	CHECK(memstat_malloc_zone_get_size(11) == 4096, "zone 11 is 4096 bytes");
	CHECK(memstat_malloc_zone_get_size(13) == 0, "zone 13 is out of range");
	CHECK(memstat_malloc_zone_get_size((size_t)-1) == 0, "zone SIZE_MAX is out of range");
	devbuf = memstat_mtl_find(mtlp, ALLOCATOR_MALLOC, "devbuf");
	CHECK(memstat_malloc_zone_used(devbuf, 11) == 1, "devbuf used 4096");
	CHECK(memstat_malloc_zone_used(devbuf, 13) == 0, "zone 13 of 13 is not used");
	setenv("MEMSTAT_SLAB_DIR", fixture("no-such-dir"), 1);
	errno = 0;
	CHECK(memstat_sysctl_all(mtlp, 0) == -1 && memstat_mtl_geterror(mtlp) == MEMSTAT_ERROR_IO &&
	    errno == ENOENT, "memstat_sysctl_all: malloc read, then slab caches fail: %s",
	    memstat_mtl_geterrmsg(mtlp));
	setenv("MEMSTAT_SLAB_DIR", "", 1);
	setenv("MEMSTAT_SLABINFO", fixture("slabinfo"), 1);
	CHECK(memstat_sysctl_all(mtlp, 0) == 0 && count_entries(mtlp) == 7,
	    "memstat_sysctl_all: 3 malloc types, 4 slab caches");
	unsetenv("MEMSTAT_SLAB_DIR");
	unsetenv("MEMSTAT_SLABINFO");
	unsetenv("MEMSTAT_MALLOC_STATS");
	unsetenv("MEMSTAT_SYSCTL_DIR");
	memstat_mtl_free(mtlp);
}

static void test_kvm(const char *core)
{
	struct memory_type_list *mtlp = memstat_mtl_alloc();
	struct memstat_kvm *kd;
	char errbuf[MEMSTAT_KVM_ERRBUF_SIZE] = "";

	kd = memstat_kvm_open(NULL, core, errbuf, sizeof(errbuf));
	CHECK(kd != NULL, "memstat_kvm_open(NULL, %s): %s", core, errbuf);
	if (kd == NULL)
		return;
	CHECK(memstat_kvm_malloc(mtlp, kd) == 0, "memstat_kvm_malloc: %s",
	    memstat_mtl_geterrmsg(mtlp));
	CHECK(count_entries(mtlp) == 71, "71 malloc types in the core, used or not: %d",
	    count_entries(mtlp));
	CHECK(memstat_mtl_find(mtlp, ALLOCATOR_MALLOC, "binder txn") != NULL, "binder txn");
	CHECK_U64(memstat_get_numallocs(memstat_mtl_find(mtlp, ALLOCATOR_MALLOC, "binder work")),
	    2673, "binder work requests");
	CHECK(memstat_malloc_zone_get_count() > 0, "the core's zones published");
	CHECK(memstat_kvm_uma(mtlp, kd) == -1 &&
	    memstat_mtl_geterror(mtlp) == MEMSTAT_ERROR_KVM_NOSYMBOL && errno == ENOTSUP,
	    "memstat_kvm_uma: no slab caches from cores");
	CHECK(count_entries(mtlp) == 71, "the failed uma read left the list");
	CHECK(memstat_kvm_all(mtlp, kd) == 0 && count_entries(mtlp) == 71, "memstat_kvm_all");
	memstat_kvm_close(kd);

	/* The same core without its memory (every PT_LOAD made PT_NULL): the
	 * notes say where the registry is, the core does not hold it. */
	kd = memstat_kvm_open(NULL, fixture("noload.core"), errbuf, sizeof(errbuf));
	CHECK(kd != NULL, "memstat_kvm_open of the core without its memory: %s", errbuf);
	CHECK(memstat_kvm_malloc(mtlp, kd) == -1 &&
	    memstat_mtl_geterror(mtlp) == MEMSTAT_ERROR_KVM_SHORTREAD && count_entries(mtlp) == 71,
	    "memstat_kvm_malloc of memory a core lacks: MEMSTAT_ERROR_KVM_SHORTREAD: %s",
	    memstat_mtl_geterrmsg(mtlp));
	memstat_kvm_close(kd);
	memstat_mtl_free(mtlp);
}

/* Copy the ELF64 core at `from` to `to` with every PT_LOAD header made
 * PT_NULL. */
static int write_noload_core(const char *from, const char *to)
{
	static unsigned char buf[1 << 20];
	uint64_t phoff;
	uint16_t phentsize, phnum, i;
	uint32_t type;
	size_t n;
	FILE *f;

	f = fopen(from, "rb");
	if (f == NULL)
		return -1;
	n = fread(buf, 1, sizeof(buf), f);
	fclose(f);
	if (n < 64)
		return -1;
	memcpy(&phoff, buf + 0x20, sizeof(phoff));
	memcpy(&phentsize, buf + 0x36, sizeof(phentsize));
	memcpy(&phnum, buf + 0x38, sizeof(phnum));
	for (i = 0; i < phnum; i++) {
		size_t at = phoff + (size_t)i * phentsize;

		if (at + sizeof(type) > n)
			return -1;
		memcpy(&type, buf + at, sizeof(type));
		if (type == 1) {
			type = 0;
			memcpy(buf + at, &type, sizeof(type));
		}
	}
	f = fopen(to, "wb");
	if (f == NULL)
		return -1;
	if (fwrite(buf, 1, n, f) != n) {
		fclose(f);
		return -1;
	}
	return fclose(f);
}

int main(int argc, char **argv)
{
	if (argc < 4) {
		fprintf(stderr, "usage: memstat_test FIXTURES SLABDIR SYSCTLDIR [CORE]\n");
		return 2;
	}
	snprintf(fixtures, sizeof(fixtures), "%s", argv[1]);
	test_strerror();
	test_null_arguments();
	test_bad_sources();
	test_malloc();
	test_slab(argv[2]);
	test_sysctl(argv[3]);
	if (argc > 4) {
		CHECK(write_noload_core(argv[4], fixture("noload.core")) == 0,
		    "write a copy of %s without its memory", argv[4]);
		test_kvm(argv[4]);
	}
	printf("1..%d\n", checks);
	printf("# %d passed, %d failed\n", checks - failures, failures);
	return failures ? 1 : 0;
}
