// SPDX-License-Identifier: GPL-2.0
/*
 * Malloc types: /proc/malloc_stats, the binary stream for programs, laid
 * out as FreeBSD's kern.malloc_stats sysctl (<uapi/linux/malloc_type.h>).
 *
 * The stream is made as it is read, one type at a time, so that a reader
 * costs a bounded amount of memory and never holds up the registry:
 *
 * - A read from offset 0 takes the set of types: the ids of the types
 *   registered now, under the registry mutex (8 bytes a type, the only
 *   memory that grows with the number of types), which fixes mtsh_count
 *   and the length of the stream.
 * - Each type's record (its header and one stats record per CPU id, 128 +
 *   64 * nr_cpu_ids bytes) is built when the reading reaches it, into a
 *   buffer of one record, from the type's per-CPU counters read under
 *   rcu_read_lock(); reads within the record are served from the buffer,
 *   so a record is never torn, whatever the sizes of the reads.
 * - A type unregistered since the set was taken keeps its place as a
 *   record with MALLOC_TYPE_F_GONE, so that the stream keeps the length
 *   its header announces.
 *
 * Finding a type by id walks the registry's list under RCU from the type
 * found before it, which is valid while no type has been unregistered
 * since (malloc_type_unregistered), so a whole stream costs one walk of
 * the list.
 *
 * The file is readable by root only: it reveals the heap's layout.
 */

#define pr_fmt(fmt) "malloc_types: " fmt

#include <linux/atomic.h>
#include <linux/cpumask.h>
#include <linux/fs.h>
#include <linux/init.h>
#include <linux/malloc_type.h>
#include <linux/minmax.h>
#include <linux/mm.h>
#include <linux/mutex.h>
#include <linux/percpu.h>
#include <linux/proc_fs.h>
#include <linux/rculist.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/uio.h>

#include "malloc_type_internal.h"

/**
 * struct malloc_type_stream - the state of an open /proc/malloc_stats
 * @lock: serializes the reads of the file.
 * @header: the stream header of the set of types.
 * @ids: the ids of the set's types, in stream order (newest first).
 * @nr: their number.
 * @record: the record of the type at index @cur, @record_size bytes.
 * @record_size: sizeof(struct malloc_type_header) + nr_cpu_ids records.
 * @cur: the index of the type in @record, or -1.
 * @hint: the type found last: its list node, where the walk for a type
 *	after it resumes while malloc_type_unregistered is still @hint_seq.
 * @hint_id: its id.
 * @hint_seq: malloc_type_unregistered when @hint was found.
 */
struct malloc_type_stream {
	struct mutex				lock;	/* serializes the reads */
	struct malloc_type_stream_header	header;
	u64					*ids;
	unsigned int				nr;
	void					*record;
	size_t					record_size;
	long					cur;
	struct list_head			*hint;
	u64					hint_id;
	unsigned long				hint_seq;
};

/*
 * Takes the set of types, and starts the stream over. The array of ids is
 * allocated under the registry mutex, where the number of types holds still
 * (the accounting never takes the mutex, so allocating under it is safe).
 */
static int malloc_type_stream_take(struct malloc_type_stream *st)
{
	struct malloc_type_internal *mti;
	unsigned int n = 0;
	u64 *ids;

	mutex_lock(&malloc_type_mutex);
	ids = kvmalloc_array(max(malloc_type_count(), 1U), sizeof(*ids),
			     GFP_KERNEL);
	if (!ids) {
		mutex_unlock(&malloc_type_mutex);
		return -ENOMEM;
	}
	list_for_each_entry(mti, &malloc_type_list, mti_list)
		ids[n++] = mti->mti_id;
	mutex_unlock(&malloc_type_mutex);
	kvfree(st->ids);
	st->ids = ids;
	st->nr = n;
	st->header = (struct malloc_type_stream_header) {
		.mtsh_version = MALLOC_TYPE_STREAM_VERSION,
		.mtsh_maxcpus = nr_cpu_ids,
		.mtsh_count = n,
	};
	st->cur = -1;
	st->hint = NULL;
	return 0;
}

/*
 * The registered type with id @id, or NULL if it has gone. Under
 * rcu_read_lock(); the type stays valid until it is released.
 */
static struct malloc_type *malloc_type_stream_find(struct malloc_type_stream *st,
						   u64 id)
{
	unsigned long seq = READ_ONCE(malloc_type_unregistered);
	struct list_head *pos;

	/*
	 * The list is in decreasing id order, as the set is: a type after the
	 * hint is found from it, while the hint is still registered.
	 */
	pos = &malloc_type_list;
	if (st->hint && st->hint_seq == seq && id < st->hint_id)
		pos = st->hint;
	for (pos = rcu_dereference(list_next_rcu(pos)); pos != &malloc_type_list;
	     pos = rcu_dereference(list_next_rcu(pos))) {
		struct malloc_type_internal *mti =
			list_entry(pos, struct malloc_type_internal, mti_list);
		u64 mid = READ_ONCE(mti->mti_id);

		if (mid < id)
			break;
		if (mid == id) {
			st->hint = pos;
			st->hint_id = id;
			st->hint_seq = seq;
			return container_of(mti, struct malloc_type, ks_mti);
		}
	}
	return NULL;
}

/* Builds the record of the type at index @i of the set into st->record. */
static void malloc_type_stream_build(struct malloc_type_stream *st,
				     unsigned int i)
{
	struct malloc_type_header *h = st->record;
	struct malloc_type_stats *out = (void *)(h + 1);
	struct malloc_type_counters __percpu *stats;
	struct malloc_type_internal *mti;
	struct malloc_type *mtp;
	unsigned int cpu;

	memset(st->record, 0, st->record_size);
	h->mth_id = st->ids[i];
	st->cur = i;

	rcu_read_lock();
	mtp = malloc_type_stream_find(st, st->ids[i]);
	/* Published with a release store; NULL once unregistered. */
	stats = mtp ? smp_load_acquire(&mtp->ks_mti.mti_stats) : NULL;
	if (!stats) {
		h->mth_flags = MALLOC_TYPE_F_GONE;
		rcu_read_unlock();
		return;
	}
	mti = &mtp->ks_mti;
	memcpy(h->mth_name, mtp->ks_shortdesc,
	       strnlen(mtp->ks_shortdesc, MALLOC_TYPE_NAME_MAX));
	h->mth_zone = READ_ONCE(mti->mti_zone);
	h->mth_flags = READ_ONCE(mti->mti_flags) &
		       (MALLOC_TYPE_F_MODULE | MALLOC_TYPE_F_UNLOADED);
	if (test_bit(MALLOC_TYPE_EV_PEAK, &mti->mti_events)) {
		h->mth_flags |= MALLOC_TYPE_F_PEAK;
		h->mth_peak = max_t(s64, atomic64_read(&mti->mti_peak), 0);
	}
	strscpy(h->mth_owner, READ_ONCE(mti->mti_owner));
	for (cpu = 0; cpu < nr_cpu_ids; cpu++) {
		const struct malloc_type_counters *s;

		if (!cpu_possible(cpu))
			continue;
		s = per_cpu_ptr(stats, cpu);
		out[cpu].mts_memalloced = READ_ONCE(s->mts_memalloced);
		out[cpu].mts_memfreed = READ_ONCE(s->mts_memfreed);
		out[cpu].mts_numallocs = READ_ONCE(s->mts_numallocs);
		out[cpu].mts_numfrees = READ_ONCE(s->mts_numfrees);
		out[cpu].mts_size = READ_ONCE(s->mts_size);
		out[cpu].mts_numfailures = READ_ONCE(s->mts_numfailures);
	}
	rcu_read_unlock();
}

/**
 * malloc_type_stream_open() - the state of a reader of the stream
 *
 * Context: process context, may sleep.
 * Return: the state, or NULL without memory for it.
 */
struct malloc_type_stream *malloc_type_stream_open(void)
{
	struct malloc_type_stream *st = kzalloc_obj(*st, GFP_KERNEL);

	if (!st)
		return NULL;
	mutex_init(&st->lock);
	st->record_size = sizeof(struct malloc_type_header) +
			  (size_t)nr_cpu_ids * sizeof(struct malloc_type_stats);
	st->record = kvmalloc(st->record_size, GFP_KERNEL);
	if (!st->record) {
		kfree(st);
		return NULL;
	}
	st->cur = -1;
	return st;
}

/**
 * malloc_type_stream_read() - read the stream
 * @st: the reader's state.
 * @to: where the bytes go.
 * @pos: the offset in the stream, advanced by what was read.
 *
 * A read from offset 0 (or the first read) takes the set of types anew.
 *
 * Context: process context, may sleep.
 * Return: the bytes read, 0 at the end of the stream; -EFAULT or -ENOMEM.
 */
ssize_t malloc_type_stream_read(struct malloc_type_stream *st,
				struct iov_iter *to, loff_t *pos)
{
	loff_t p = *pos;
	ssize_t done = 0;
	size_t total;
	int ret = 0;

	if (p < 0)
		return -EINVAL;
	mutex_lock(&st->lock);
	if (p == 0 || !st->ids)
		ret = malloc_type_stream_take(st);
	if (ret)
		goto out;
	total = sizeof(st->header) + (size_t)st->nr * st->record_size;
	while (iov_iter_count(to) && p < total) {
		const void *src;
		size_t avail, n;

		if (p < sizeof(st->header)) {
			src = (const void *)&st->header + p;
			avail = sizeof(st->header) - p;
		} else {
			size_t off = p - sizeof(st->header);
			unsigned int i = off / st->record_size;

			off %= st->record_size;
			if (st->cur != i)
				malloc_type_stream_build(st, i);
			src = st->record + off;
			avail = st->record_size - off;
		}
		n = copy_to_iter(src, avail, to);
		done += n;
		p += n;
		if (n < avail && iov_iter_count(to)) {
			ret = -EFAULT;
			break;
		}
		cond_resched();
	}
	*pos = p;
out:
	mutex_unlock(&st->lock);
	return done ? done : ret;
}

/* Frees the state of a reader. */
void malloc_type_stream_release(struct malloc_type_stream *st)
{
	kvfree(st->ids);
	kvfree(st->record);
	kfree(st);
}

static int malloc_stats_open(struct inode *inode, struct file *file)
{
	file->private_data = malloc_type_stream_open();
	return file->private_data ? 0 : -ENOMEM;
}

static ssize_t malloc_stats_read_iter(struct kiocb *iocb, struct iov_iter *to)
{
	return malloc_type_stream_read(iocb->ki_filp->private_data, to,
				       &iocb->ki_pos);
}

static int malloc_stats_release(struct inode *inode, struct file *file)
{
	malloc_type_stream_release(file->private_data);
	return 0;
}

static const struct proc_ops malloc_stats_proc_ops = {
	.proc_open	= malloc_stats_open,
	.proc_read_iter	= malloc_stats_read_iter,
	.proc_lseek	= default_llseek,
	.proc_release	= malloc_stats_release,
};

static int __init malloc_type_stream_init(void)
{
	if (!proc_create("malloc_stats", 0400, NULL, &malloc_stats_proc_ops))
		pr_warn("cannot create /proc/malloc_stats\n");
	return 0;
}
fs_initcall(malloc_type_stream_init);
