// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit tests of /proc/malloc_stats (mm/malloc_type_stream.c), read through
 * the functions its read_iter() calls: the stream's layout and length, a
 * type's exact records, reads of any size that give the same stream, and
 * reads at earlier offsets.
 */

#include <kunit/test.h>
#include <linux/cpumask.h>
#include <linux/malloc_type.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/uio.h>

#include "malloc_type_internal.h"

static MALLOC_DEFINE(M_KUNIT_STREAM, "kunit stream", "KUnit: the stream");

/* Reads @len bytes at *@pos of @st into @buf, in reads of @chunk bytes. */
static ssize_t stream_read(struct malloc_type_stream *st, void *buf,
			   size_t len, loff_t *pos, size_t chunk)
{
	size_t done = 0;

	while (done < len) {
		struct kvec kv = { .iov_base = buf + done,
				   .iov_len = min(chunk, len - done) };
		struct iov_iter to;
		ssize_t n;

		iov_iter_kvec(&to, ITER_DEST, &kv, 1, kv.iov_len);
		n = malloc_type_stream_read(st, &to, pos);
		if (n <= 0)
			return done ? done : n;
		done += n;
	}
	return done;
}

static size_t record_size(void)
{
	return sizeof(struct malloc_type_header) +
	       nr_cpu_ids * sizeof(struct malloc_type_stats);
}

/* The whole stream of a new reader, in reads of @chunk bytes. */
static void *whole_stream(struct kunit *test, size_t chunk, size_t *len)
{
	struct malloc_type_stream *st = malloc_type_stream_open();
	struct malloc_type_stream_header h;
	loff_t pos = 0;
	void *buf;

	KUNIT_ASSERT_NOT_NULL(test, st);
	KUNIT_ASSERT_EQ(test, stream_read(st, &h, sizeof(h), &pos, chunk),
			(ssize_t)sizeof(h));
	*len = sizeof(h) + h.mtsh_count * record_size();
	buf = kunit_kmalloc(test, *len + 1, GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, buf);
	memcpy(buf, &h, sizeof(h));
	KUNIT_EXPECT_EQ(test, stream_read(st, buf + sizeof(h), *len + 1 - sizeof(h),
					  &pos, chunk),
			(ssize_t)(*len - sizeof(h)));
	malloc_type_stream_release(st);
	return buf;
}

/* The index of the record of @mtp in @buf, or -1. */
static int find_type(const void *buf, struct malloc_type *mtp)
{
	const struct malloc_type_stream_header *h = buf;
	unsigned int i;

	for (i = 0; i < h->mtsh_count; i++) {
		const struct malloc_type_header *th =
			buf + sizeof(*h) + i * record_size();

		if (th->mth_id == READ_ONCE(mtp->ks_mti.mti_id))
			return i;
	}
	return -1;
}

/* The sums over the CPU records of @mtp's record in stream @buf. */
static void type_sums(struct kunit *test, const void *buf, struct malloc_type *mtp,
		      u64 *allocs, u64 *bytes, u64 *mask)
{
	const struct malloc_type_header *th;
	const struct malloc_type_stats *s;
	unsigned int cpu;
	int i = find_type(buf, mtp);

	*allocs = *bytes = *mask = 0;
	KUNIT_ASSERT_GE(test, i, 0);
	th = buf + sizeof(struct malloc_type_stream_header) + i * record_size();
	s = (const void *)(th + 1);
	for (cpu = 0; cpu < nr_cpu_ids; cpu++) {
		*allocs += s[cpu].mts_numallocs;
		*bytes += s[cpu].mts_memalloced;
		*mask |= s[cpu].mts_size;
		if (!cpu_possible(cpu))
			KUNIT_EXPECT_EQ(test, s[cpu].mts_numallocs, 0);
	}
}

static void stream_layout_and_records(struct kunit *test)
{
	const struct malloc_type_stream_header *h;
	const struct malloc_type_header *th;
	u64 allocs0, bytes0, mask0, allocs, bytes, mask;
	size_t len;
	void *p, *buf;

	/* The counters are cumulative: what one allocation adds to them. */
	buf = whole_stream(test, SZ_64K, &len);
	type_sums(test, buf, M_KUNIT_STREAM, &allocs0, &bytes0, &mask0);
	p = kmalloc_mt(100, GFP_KERNEL, M_KUNIT_STREAM);
	KUNIT_ASSERT_NOT_NULL(test, p);
	buf = whole_stream(test, SZ_64K, &len);
	kfree_mt(p, M_KUNIT_STREAM);

	h = buf;
	KUNIT_EXPECT_EQ(test, h->mtsh_version, MALLOC_TYPE_STREAM_VERSION);
	KUNIT_EXPECT_EQ(test, h->mtsh_maxcpus, nr_cpu_ids);
	KUNIT_EXPECT_GE(test, h->mtsh_count, 1);
	KUNIT_EXPECT_EQ(test, h->_mtsh_pad, 0);
	KUNIT_EXPECT_EQ(test, len, sizeof(*h) + h->mtsh_count * record_size());
	th = buf + sizeof(*h) + find_type(buf, M_KUNIT_STREAM) * record_size();
	KUNIT_EXPECT_STREQ(test, th->mth_name, "kunit stream");
	KUNIT_EXPECT_STREQ(test, th->mth_owner, "vmlinux");
	/* Not a module's, not gone; a peak pattern may track it. */
	KUNIT_EXPECT_EQ(test, th->mth_flags & ~MALLOC_TYPE_F_PEAK, 0);
	type_sums(test, buf, M_KUNIT_STREAM, &allocs, &bytes, &mask);
	KUNIT_EXPECT_EQ(test, allocs - allocs0, 1);
	KUNIT_EXPECT_EQ(test, bytes - bytes0, kmalloc_size_roundup(100));
	KUNIT_EXPECT_NE(test, mask, 0);
}

/*
 * Reads of every size give the same stream: the same types in the same
 * order (while none registers or goes: no module loads during the boot's
 * KUnit run), and the same record of a type no one else allocates with.
 */
static void stream_reads_of_any_size(struct kunit *test)
{
	static const size_t chunks[] = { 1, 7, 16, 64, 129, 4096 };
	const size_t hdr = sizeof(struct malloc_type_stream_header);
	size_t len0, len, i;
	void *ref, *buf;
	int at, bt;

	ref = whole_stream(test, SZ_64K, &len0);
	at = find_type(ref, M_KUNIT_STREAM);
	KUNIT_ASSERT_GE(test, at, 0);
	for (i = 0; i < ARRAY_SIZE(chunks); i++) {
		const struct malloc_type_stream_header *h;
		unsigned int t;

		buf = whole_stream(test, chunks[i], &len);
		h = buf;
		KUNIT_EXPECT_EQ_MSG(test, len, hdr + h->mtsh_count * record_size(),
				    "reads of %zu bytes", chunks[i]);
		bt = find_type(buf, M_KUNIT_STREAM);
		KUNIT_ASSERT_GE(test, bt, 0);
		KUNIT_EXPECT_EQ(test, memcmp(ref + hdr + at * record_size(),
					     buf + hdr + bt * record_size(),
					     record_size()), 0);
		if (len != len0)
			continue;
		for (t = 0; t < h->mtsh_count; t++) {
			const struct malloc_type_header *a = ref + hdr + t * record_size();
			const struct malloc_type_header *b = buf + hdr + t * record_size();

			KUNIT_EXPECT_EQ(test, a->mth_id, b->mth_id);
			KUNIT_EXPECT_STREQ(test, a->mth_name, b->mth_name);
		}
	}
}

/* A read at an earlier offset, not 0, finds the types before the last one read. */
static void stream_reads_back(struct kunit *test)
{
	struct malloc_type_stream *st = malloc_type_stream_open();
	struct malloc_type_header first, again;
	struct malloc_type_stream_header h;
	loff_t pos = 0;

	KUNIT_ASSERT_NOT_NULL(test, st);
	KUNIT_ASSERT_EQ(test, stream_read(st, &h, sizeof(h), &pos, 16), 16);
	KUNIT_ASSERT_GE(test, h.mtsh_count, 2);
	KUNIT_ASSERT_EQ(test, stream_read(st, &first, sizeof(first), &pos, 64),
			(ssize_t)sizeof(first));
	/* On to the second type, then back to the first. */
	pos = sizeof(h) + record_size();
	KUNIT_ASSERT_EQ(test, stream_read(st, &again, sizeof(again), &pos, 64),
			(ssize_t)sizeof(again));
	KUNIT_EXPECT_NE(test, again.mth_id, first.mth_id);
	pos = sizeof(h);
	KUNIT_ASSERT_EQ(test, stream_read(st, &again, sizeof(again), &pos, 64),
			(ssize_t)sizeof(again));
	KUNIT_EXPECT_EQ(test, again.mth_id, first.mth_id);
	KUNIT_EXPECT_EQ(test, again.mth_flags & MALLOC_TYPE_F_GONE, 0);
	KUNIT_EXPECT_STREQ(test, again.mth_name, first.mth_name);
	/* Past the end: nothing. */
	pos = sizeof(h) + h.mtsh_count * record_size();
	KUNIT_EXPECT_EQ(test, stream_read(st, &again, sizeof(again), &pos, 64), 0);
	malloc_type_stream_release(st);
}

static struct kunit_case malloc_type_stream_cases[] = {
	KUNIT_CASE(stream_layout_and_records),
	KUNIT_CASE(stream_reads_of_any_size),
	KUNIT_CASE(stream_reads_back),
	{}
};

static struct kunit_suite malloc_type_stream_suite = {
	.name = "malloc_type_stream",
	.test_cases = malloc_type_stream_cases,
};

kunit_test_suite(malloc_type_stream_suite);

MODULE_DESCRIPTION("KUnit tests of /proc/malloc_stats");
MODULE_LICENSE("GPL");
