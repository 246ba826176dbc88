// SPDX-License-Identifier: GPL-2.0
/*
 * The user space ABI of malloc types (Documentation/ABI/testing/procfs-malloc_types):
 *
 *  - /proc/malloc_stats: the stream header (version, CPU records), its length,
 *    each type's header (name, id, zone, flags, peak, reserved fields,
 *    owner; a type gone while the stream is read: its id and its flag), the
 *    records of CPU ids that are not possible, and one whole stream per read
 *    from offset 0 whatever the size of the reads;
 *  - /proc/malloc_types: the version line, the column header, one row per
 *    type of the stream with its zone, owner, peak and size classes;
 *  - the sysctls kernel.malloc_count, vm.malloc_numzones,
 *    vm.malloc_zone_count, vm.malloc_zone_sizes and vm.malloc_zone_memuse:
 *    values, read-only;
 *  - permissions: the files are root's alone (0400, /proc/malloc_types_peak
 *    0600), the sysctls 0444, and another user cannot open the files.
 *
 * Needs root. Types may register and go while it runs (module loads): the
 * checks that compare two reads retry until the registry holds still.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <linux/malloc_type.h>

#include "../kselftest.h"

#define STATS_PATH	"/proc/malloc_stats"
#define TYPES_PATH	"/proc/malloc_types"
#define PEAK_PATH	"/proc/malloc_types_peak"
#define SYSCTL_COUNT	"/proc/sys/kernel/malloc_count"
#define SYSCTL_NUMZONES	"/proc/sys/vm/malloc_numzones"
#define SYSCTL_ZCOUNT	"/proc/sys/vm/malloc_zone_count"
#define SYSCTL_ZSIZES	"/proc/sys/vm/malloc_zone_sizes"
#define SYSCTL_ZMEMUSE	"/proc/sys/vm/malloc_zone_memuse"
#define MAX_ZONES	16	/* malloc_types.numzones= is at most 16 */

struct buf {
	char *data;
	size_t len;
};

/* Reads all of @path in reads of @chunk bytes on one open file. */
static int read_file(const char *path, size_t chunk, struct buf *b)
{
	size_t cap = 1 << 16;
	int fd = open(path, O_RDONLY);

	if (fd < 0)
		return -errno;
	b->data = malloc(cap);
	b->len = 0;
	if (!b->data) {
		close(fd);
		return -ENOMEM;
	}
	for (;;) {
		ssize_t n;

		if (b->len + chunk > cap) {
			char *p;

			cap = 2 * (b->len + chunk);
			p = realloc(b->data, cap);
			if (!p) {
				free(b->data);
				close(fd);
				return -ENOMEM;
			}
			b->data = p;
		}
		n = read(fd, b->data + b->len, chunk);
		if (n < 0) {
			int err = -errno;

			free(b->data);
			close(fd);
			return err;
		}
		if (n == 0)
			break;
		b->len += n;
	}
	close(fd);
	return 0;
}

/* Reads the integers of a sysctl into @v (at most @max); returns how many. */
static int read_ints(const char *path, long long *v, int max)
{
	struct buf b;
	char *p, *end;
	int n = 0;

	if (read_file(path, 4096, &b))
		return -1;
	b.data[b.len < 4096 ? b.len : 4095] = '\0';
	for (p = b.data; n < max; p = end) {
		errno = 0;
		v[n] = strtoll(p, &end, 10);
		if (end == p || errno)
			break;
		n++;
	}
	while (*end == '\t' || *end == ' ' || *end == '\n')
		end++;
	free(b.data);
	return *end ? -1 : n;
}

static long long read_int(const char *path)
{
	long long v;

	return read_ints(path, &v, 1) == 1 ? v : -1;
}

/* nr_cpu_ids: the highest possible CPU id plus one. */
static long possible_cpus(bool *possible, long max)
{
	long lo, hi, top = -1;
	struct buf b;
	char *p;

	if (read_file("/sys/devices/system/cpu/possible", 4096, &b))
		return -1;
	b.data[b.len < 4096 ? b.len : 4095] = '\0';
	memset(possible, 0, max);
	for (p = b.data; *p && *p != '\n';) {
		lo = strtol(p, &p, 10);
		hi = lo;
		if (*p == '-')
			hi = strtol(p + 1, &p, 10);
		for (long c = lo; c <= hi && c < max; c++)
			possible[c] = true;
		top = hi > top ? hi : top;
		if (*p == ',')
			p++;
	}
	free(b.data);
	return top + 1;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static bool all_zero(const void *p, size_t n)
{
	const unsigned char *c = p;

	for (size_t i = 0; i < n; i++)
		if (c[i])
			return false;
	return true;
}

/* A NUL-terminated, zero-filled string of 1 to @n - 1 bytes. */
static bool good_string(const char *s, size_t n)
{
	size_t len = strnlen(s, n);

	return len > 0 && len < n && all_zero(s + len, n - len);
}

struct stream {
	struct buf b;
	const struct malloc_type_stream_header *sh;
};

static const struct malloc_type_header *type_at(const struct stream *s, unsigned int i)
{
	size_t rec = sizeof(struct malloc_type_header) +
		     (size_t)s->sh->mtsh_maxcpus * sizeof(struct malloc_type_stats);

	return (const void *)(s->b.data + sizeof(*s->sh) + i * rec);
}

static const struct malloc_type_stats *stats_of(const struct malloc_type_header *h)
{
	return (const void *)(h + 1);
}

static bool stream_length_ok(const struct stream *s)
{
	if (s->b.len < sizeof(*s->sh))
		return false;
	return s->b.len == sizeof(*s->sh) + s->sh->mtsh_count *
		(sizeof(struct malloc_type_header) +
		 (size_t)s->sh->mtsh_maxcpus * sizeof(struct malloc_type_stats));
}

/*
 * Reads the stream while kernel.malloc_count holds still around it, so that
 * its count can be compared with the sysctl.
 */
static int read_stream(struct stream *s, size_t chunk, long long *count)
{
	for (int tries = 0; tries < 20; tries++) {
		long long before = read_int(SYSCTL_COUNT), after;
		int err = read_file(STATS_PATH, chunk, &s->b);

		if (err)
			return err;
		after = read_int(SYSCTL_COUNT);
		s->sh = (const void *)s->b.data;
		if (before == after && before >= 0) {
			*count = before;
			return 0;
		}
		free(s->b.data);
	}
	return -EAGAIN;
}

static void test_stream(void)
{
	static bool possible[1 << 16];
	long long count, numzones = read_int(SYSCTL_NUMZONES);
	long nr_cpu_ids = possible_cpus(possible, 1 << 16);
	const unsigned int known_flags = MALLOC_TYPE_F_MODULE | MALLOC_TYPE_F_PEAK |
					 MALLOC_TYPE_F_UNLOADED;
	bool names = true, ids = true, zones = true, flags = true, peaks = true;
	bool reserved = true, owners = true, impossible = true;
	uint64_t *id_list;
	struct stream s;
	int err = read_stream(&s, 1 << 20, &count);

	if (err) {
		ksft_test_result_fail("stream: read %s: %s\n", STATS_PATH, strerror(-err));
		for (int i = 0; i < 10; i++)
			ksft_test_result_skip("stream: no stream\n");
		return;
	}
	ksft_test_result(s.b.len >= sizeof(*s.sh) &&
			 s.sh->mtsh_version == MALLOC_TYPE_STREAM_VERSION &&
			 s.sh->_mtsh_pad == 0,
			 "stream: header: version %#x, padding zero\n", MALLOC_TYPE_STREAM_VERSION);
	ksft_test_result(nr_cpu_ids > 0 && s.sh->mtsh_maxcpus == nr_cpu_ids,
			 "stream: one record per possible CPU id (%ld)\n", nr_cpu_ids);
	ksft_test_result(s.sh->mtsh_count == count && count > 0,
			 "stream: count is kernel.malloc_count (%lld)\n", count);
	if (!stream_length_ok(&s)) {
		ksft_test_result_fail("stream: length %zu is not that of %u types of %u CPUs\n",
				      s.b.len, s.sh->mtsh_count, s.sh->mtsh_maxcpus);
		for (int i = 0; i < 7; i++)
			ksft_test_result_skip("stream: bad length\n");
		free(s.b.data);
		return;
	}
	ksft_test_result_pass("stream: length %zu of %u types of %u CPU records\n",
			      s.b.len, s.sh->mtsh_count, s.sh->mtsh_maxcpus);
	id_list = calloc(s.sh->mtsh_count, sizeof(*id_list));
	if (!id_list)
		ksft_exit_fail_msg("out of memory\n");
	for (unsigned int i = 0; i < s.sh->mtsh_count; i++) {
		const struct malloc_type_header *h = type_at(&s, i);
		const struct malloc_type_stats *st = stats_of(h);

		id_list[i] = h->mth_id;
		/* A type unregistered while the stream was read: its id, its flag, zeros. */
		if (h->mth_flags & MALLOC_TYPE_F_GONE) {
			flags &= h->mth_flags == MALLOC_TYPE_F_GONE;
			reserved &= all_zero(h->mth_name, sizeof(h->mth_name)) &&
				    all_zero(st, s.sh->mtsh_maxcpus * sizeof(*st));
			continue;
		}
		names &= good_string(h->mth_name, sizeof(h->mth_name));
		owners &= good_string(h->mth_owner, sizeof(h->mth_owner));
		zones &= numzones > 0 && h->mth_zone < numzones;
		flags &= !(h->mth_flags & ~known_flags);
		flags &= !!(h->mth_flags & MALLOC_TYPE_F_MODULE) ==
			 !!strcmp(h->mth_owner, "vmlinux");
		/* Only a module's type outlives its module. */
		flags &= !(h->mth_flags & MALLOC_TYPE_F_UNLOADED) ||
			 (h->mth_flags & MALLOC_TYPE_F_MODULE);
		peaks &= (h->mth_flags & MALLOC_TYPE_F_PEAK) || h->mth_peak == 0;
		reserved &= h->_mth_reserved == 0;
		for (unsigned int c = 0; c < s.sh->mtsh_maxcpus; c++) {
			reserved &= st[c]._mts_reserved2 == 0 && st[c]._mts_reserved3 == 0;
			if (!possible[c])
				impossible &= all_zero(&st[c], sizeof(st[c]));
		}
	}
	qsort(id_list, s.sh->mtsh_count, sizeof(*id_list), cmp_u64);
	for (unsigned int i = 0; i < s.sh->mtsh_count; i++)
		ids &= id_list[i] != 0 && (i == 0 || id_list[i] != id_list[i - 1]);
	free(id_list);
	ksft_test_result(names, "stream: names NUL-terminated, 1 to %d bytes, zero-filled\n",
			 MALLOC_MAX_NAME - 1);
	ksft_test_result(ids, "stream: ids nonzero and unique\n");
	ksft_test_result(zones, "stream: zones below vm.malloc_numzones (%lld)\n", numzones);
	ksft_test_result(flags, "stream: flags known, MALLOC_TYPE_F_MODULE for modules\n");
	ksft_test_result(peaks && reserved,
			 "stream: mth_peak zero unless tracked, reserved fields zero\n");
	ksft_test_result(owners, "stream: owners NUL-terminated and zero-filled\n");
	ksft_test_result(impossible, "stream: records of impossible CPU ids are zero\n");
	free(s.b.data);
}

/*
 * The set of types is taken by the read from offset 0: reads of any size
 * give a whole stream of one count.
 */
static void test_stream_chunks(void)
{
	static const size_t chunks[] = { 1, 7, 64, 4095, 4096, 65536 };
	bool ok = true;

	for (size_t i = 0; i < ARRAY_SIZE(chunks); i++) {
		struct stream s;
		long long count;

		if (read_stream(&s, chunks[i], &count)) {
			ok = false;
			break;
		}
		if (!stream_length_ok(&s) || s.sh->mtsh_count != count) {
			ksft_print_msg("reads of %zu bytes: %zu bytes, %u types\n",
				       chunks[i], s.b.len, s.sh->mtsh_count);
			ok = false;
		}
		free(s.b.data);
	}
	ksft_test_result(ok, "stream: a whole stream per read from 0, reads of 1 to 65536 bytes\n");
}

/*
 * The text form of a name, as /proc/malloc_types shows it: each byte that
 * is not printable ASCII, and each backslash, as a backslash and three
 * octal digits. @out holds 4 * MALLOC_MAX_NAME bytes.
 */
static void name_text(const char *name, char *out)
{
	for (; *name; name++) {
		unsigned char c = *name;

		if (c < 0x20 || c > 0x7e || c == '\\')
			out += sprintf(out, "\\%03o", c);
		else
			*out++ = c;
	}
	*out = '\0';
}

/* "malloc_types - version: 1.1", the column header, a row per type. */
static void test_text(void)
{
	static const char header[] =
		"malloc_types - version: 1.1\n"
		"#        Type InUse MemUse Requests Zone Fails HighUse Owner         Size(s)\n";
	long long sizes[64], count;
	int nsizes = read_ints(SYSCTL_ZSIZES, sizes, 64);
	bool rows = true, sized = true;
	struct stream s;
	struct buf t;
	char *line;
	unsigned int i = 0;

	for (int tries = 0;; tries++) {
		if (read_stream(&s, 1 << 20, &count) || tries == 20) {
			ksft_test_result_fail("text: the registry never held still\n");
			ksft_test_result_skip("text: rows\n");
			ksft_test_result_skip("text: size classes\n");
			return;
		}
		if (read_file(TYPES_PATH, 1 << 20, &t)) {
			free(s.b.data);
			continue;
		}
		if (read_int(SYSCTL_COUNT) == count)
			break;
		free(s.b.data);
		free(t.data);
	}
	ksft_test_result(t.len > sizeof(header) - 1 && !memcmp(t.data, header, sizeof(header) - 1),
			 "text: version line and column header\n");
	t.data[t.len - 1] = '\0';
	line = t.data + sizeof(header) - 1;
	for (; line && *line && i < s.sh->mtsh_count; i++) {
		const struct malloc_type_header *h = type_at(&s, i);
		char *next = strchr(line, '\n'), *p = line, *owner, *end, *next_size;
		char highuse[32], text[4 * MALLOC_MAX_NAME];
		unsigned long long zone;
		int n;

		if (next)
			*next++ = '\0';
		while (*p == ' ')
			p++;
		/* Rows are in the stream's order, each opening with its name's text form. */
		name_text(h->mth_name, text);
		if (strncmp(p, text, strlen(text)) || p[strlen(text)] != ' ') {
			ksft_print_msg("row %u: '%s' is not type '%s'\n", i, line, text);
			rows = false;
			break;
		}
		p += strlen(text);
		/* InUse MemUse(K) Requests Zone Fails HighUse Owner [Size(s)] */
		if (sscanf(p, "%*u %*uK %*u %llu %*u %31s %n", &zone, highuse, &n) != 2 ||
		    zone != h->mth_zone ||
		    !!strcmp(highuse, "-") != !!(h->mth_flags & MALLOC_TYPE_F_PEAK)) {
			ksft_print_msg("row %u: '%s' does not match the stream\n", i, line);
			rows = false;
		}
		owner = p + n;
		end = strchr(owner, ' ');
		if (strncmp(owner, h->mth_owner, end ? (size_t)(end - owner) : strlen(owner)) ||
		    strlen(h->mth_owner) != (end ? (size_t)(end - owner) : strlen(owner))) {
			ksft_print_msg("row %u: owner of '%s' is not '%s'\n",
				       i, line, h->mth_owner);
			rows = false;
		}
		/* Each size class listed is one of vm.malloc_zone_sizes. */
		for (p = end; p && *p;) {
			long long v;
			bool found = false;

			while (*p == ' ' || *p == ',')
				p++;
			if (!*p)
				break;
			v = strtoll(p, &next_size, 10);
			if (next_size == p) {
				sized = false;
				break;
			}
			p = next_size;
			for (int k = 0; k < nsizes; k++)
				found |= sizes[k] == v;
			sized &= found;
		}
		line = next;
	}
	rows &= i == s.sh->mtsh_count && (!line || !*line);
	ksft_test_result(rows, "text: one row per type of the stream, its zone, peak and owner\n");
	ksft_test_result(sized && nsizes > 0, "text: size classes are vm.malloc_zone_sizes\n");
	free(s.b.data);
	free(t.data);
}

static void test_sysctls(void)
{
	long long sizes[65], memuse[65], zcount = read_int(SYSCTL_ZCOUNT),
		  numzones = read_int(SYSCTL_NUMZONES);
	int n = read_ints(SYSCTL_ZSIZES, sizes, 65);
	int nmemuse = read_ints(SYSCTL_ZMEMUSE, memuse, 65);
	bool increasing = n > 0, nonnegative = nmemuse > 0;
	static const char * const ro[] = {
		SYSCTL_COUNT, SYSCTL_NUMZONES, SYSCTL_ZCOUNT, SYSCTL_ZSIZES, SYSCTL_ZMEMUSE
	};
	bool eperm = true;

	for (int i = 1; i < n; i++)
		increasing &= sizes[i] > sizes[i - 1];
	for (int i = 0; i < nmemuse; i++)
		nonnegative &= memuse[i] >= 0;
	ksft_test_result(read_int(SYSCTL_COUNT) > 0, "sysctl: kernel.malloc_count > 0\n");
	ksft_test_result(numzones >= 1 && numzones <= MAX_ZONES,
			 "sysctl: vm.malloc_numzones %lld in 1..%d\n", numzones, MAX_ZONES);
	ksft_test_result(zcount > 0 && zcount <= MALLOC_TYPE_ZONE_COUNT_MAX && n == zcount &&
			 increasing,
			 "sysctl: vm.malloc_zone_sizes: %lld increasing sizes\n",
			 zcount);
	for (size_t i = 0; i < ARRAY_SIZE(ro); i++) {
		int fd = open(ro[i], O_WRONLY);

		if (fd >= 0) {
			/* Root may open a 0444 sysctl for writing; the write fails. */
			eperm &= write(fd, "1\n", 2) < 0 && errno == EPERM;
			close(fd);
		} else {
			eperm &= errno == EACCES || errno == EPERM;
		}
	}
	ksft_test_result(nmemuse == n && nonnegative,
			 "sysctl: vm.malloc_zone_memuse: %d values, one per size class\n",
			 nmemuse);
	ksft_test_result(eperm, "sysctl: the five are read-only, even for root\n");
}

static bool mode_is(const char *path, mode_t mode)
{
	struct stat st;

	return !stat(path, &st) && (st.st_mode & 07777) == mode && st.st_uid == 0;
}

static void test_permissions(void)
{
	int status;
	pid_t pid;

	ksft_test_result(mode_is(STATS_PATH, 0400) && mode_is(TYPES_PATH, 0400),
			 "permissions: %s and %s are 0400 root\n", STATS_PATH, TYPES_PATH);
	if (access(PEAK_PATH, F_OK))
		ksft_test_result_skip("permissions: no %s\n", PEAK_PATH);
	else
		ksft_test_result(mode_is(PEAK_PATH, 0600), "permissions: %s is 0600 root\n",
				 PEAK_PATH);
	ksft_test_result(mode_is(SYSCTL_COUNT, 0444) && mode_is(SYSCTL_ZSIZES, 0444) &&
			 mode_is(SYSCTL_ZMEMUSE, 0444),
			 "permissions: the sysctls are 0444\n");
	/* Another user (nobody) may not open them. */
	pid = fork();
	if (pid == 0) {
		if (setgid(65534) || setuid(65534))
			_exit(2);
		_exit(open(STATS_PATH, O_RDONLY) < 0 && errno == EACCES &&
		      open(TYPES_PATH, O_RDONLY) < 0 && errno == EACCES ? 0 : 1);
	}
	ksft_test_result(pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
			 WEXITSTATUS(status) == 0,
			 "permissions: another user gets EACCES\n");
}

int main(void)
{
	ksft_print_header();
	if (geteuid())
		ksft_exit_skip("malloc types: needs root\n");
	if (access(STATS_PATH, F_OK))
		ksft_exit_skip("malloc types: no %s (CONFIG_MALLOC_TYPES_PROC)\n", STATS_PATH);
	ksft_set_plan(11 + 1 + 3 + 5 + 4);
	test_stream();
	test_stream_chunks();
	test_text();
	test_sysctls();
	test_permissions();
	ksft_finished();
}
