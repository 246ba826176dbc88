// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit tests of the selection files (mm/malloc_type_selection.c): tracefs's
 * set_dtmalloc_probes and /proc/malloc_types_peak, through the function
 * their write(), open() and close() call.
 *
 * - A write is all or nothing: a bad word, an embedded NUL or a selection
 *   that would overflow fails it with nothing of it applied.
 * - A word split across writes is one word; the last one is applied when
 *   white space or the close finishes it.
 * - Concurrent writers of both files, truncating and appending, leave the
 *   list, the key and every type's bits in agreement.
 *
 * - fail_malloc_type/types (CONFIG_FAIL_MALLOC_TYPE) selects the types
 *   whose allocations fail, and they fail as its fault attributes say.
 *
 * The suite malloc_type_memguard (CONFIG_MALLOC_TYPE_MEMGUARD): memguard/types
 * selects the types memguard guards; a one-byte overflow, a use after free
 * and a double free of a guarded block are caught and reported with the
 * type named (the reports are expected: judge.py accepts memguard's
 * "BUG: memguard:" lines within this suite only), while the same overflow
 * and use after free of a type that is not guarded go unnoticed by it.
 *
 * Each test leaves the selections empty, as the kernel boots with them
 * (the suite's exit).
 */

#include <kunit/test.h>
#include <linux/completion.h>
#include <linux/jump_label.h>
#include <linux/kasan.h>
#include <linux/kthread.h>
#include <linux/malloc_type.h>
#include <linux/random.h>
#include <linux/string.h>

#include "malloc_type_selection.h"

static MALLOC_DEFINE(M_KUNIT_SEL_A, "kunit sel a", "KUnit: selection files");
static MALLOC_DEFINE(M_KUNIT_SEL_B, "kunit sel b", "KUnit: selection files");
static MALLOC_DEFINE(M_KUNIT_SEL_C, "kunit sel:c", "KUnit: a ':' in a probe name");

static struct dtmalloc_specs *specs(void)
{
	return dtmalloc_selection.list;
}

static struct malloc_type_peak_patterns *peaks(void)
{
	return malloc_type_peak_selection.list;
}

/* One write of string @s to @sel, continuing @w. */
static int sel_write(struct malloc_type_selection *sel,
		     struct malloc_type_words *w, const char *s)
{
	return malloc_type_selection_change(sel, w, s, strlen(s), false, false);
}

static void sel_clear(struct malloc_type_selection *sel)
{
	malloc_type_selection_change(sel, NULL, NULL, 0, true, false);
}

/* The DTMALLOC_SPEC_* bits the probe selection gives @mtp. */
static unsigned long probes_of(struct malloc_type *mtp)
{
	return READ_ONCE(mtp->ks_mti.mti_events) &
	       (DTMALLOC_SPEC_MALLOC | DTMALLOC_SPEC_FREE);
}

static bool has_spec(const char *pattern, u32 probes)
{
	unsigned int i;

	for (i = 0; i < specs()->nr; i++)
		if (!strcmp(specs()->spec[i].pat.text, pattern))
			return specs()->spec[i].probes == probes;
	return false;
}

static void all_or_nothing(struct kunit *test)
{
	struct malloc_type_words w = {};
	static const char nul[] = "kunit_sel_b\0kunit_sel_a ";
	char word[16];
	unsigned int i;

	KUNIT_ASSERT_EQ(test, sel_write(&dtmalloc_selection, &w,
					"kunit_sel_a kunit_sel_b:free\n"), 0);
	KUNIT_EXPECT_EQ(test, probes_of(M_KUNIT_SEL_A),
			DTMALLOC_SPEC_MALLOC | DTMALLOC_SPEC_FREE);
	KUNIT_EXPECT_EQ(test, probes_of(M_KUNIT_SEL_B), DTMALLOC_SPEC_FREE);
	KUNIT_EXPECT_TRUE(test, static_key_enabled(&dtmalloc_probes_selected.key));

	/* A bad word fails the write: the good word before it is not applied. */
	KUNIT_EXPECT_EQ(test, sel_write(&dtmalloc_selection, &w,
					"kunit_sel_b:malloc kunit\\9 "),
			-EINVAL);
	KUNIT_EXPECT_EQ(test, probes_of(M_KUNIT_SEL_B), DTMALLOC_SPEC_FREE);
	KUNIT_EXPECT_EQ(test, sel_write(&dtmalloc_selection, &w,
					"!kunit_sel_a kunit_sel_b:fre\n"),
			-EINVAL);
	KUNIT_EXPECT_NE(test, probes_of(M_KUNIT_SEL_A), 0);

	/* An embedded NUL fails the write, the words after it included. */
	KUNIT_EXPECT_EQ(test, malloc_type_selection_change(&dtmalloc_selection,
							   &w, nul,
							   sizeof(nul) - 1,
							   false, false),
			-EINVAL);
	KUNIT_EXPECT_EQ(test, probes_of(M_KUNIT_SEL_B), DTMALLOC_SPEC_FREE);

	/* A ':' in a probe name is written \072. */
	KUNIT_EXPECT_EQ(test, sel_write(&dtmalloc_selection, &w,
					"kunit_sel:c "), -EINVAL);
	KUNIT_EXPECT_EQ(test, sel_write(&dtmalloc_selection, &w,
					"kunit_sel\\072c:malloc "), 0);
	KUNIT_EXPECT_EQ(test, probes_of(M_KUNIT_SEL_C), DTMALLOC_SPEC_MALLOC);

	/* A selection that would overflow: nothing of the write applies. */
	sel_clear(&dtmalloc_selection);
	for (i = 0; i < DTMALLOC_SPECS_MAX - 1; i++) {
		snprintf(word, sizeof(word), "kunit_%u ", i);
		KUNIT_ASSERT_EQ(test, sel_write(&dtmalloc_selection, &w, word),
				0);
	}
	KUNIT_EXPECT_EQ(test, sel_write(&dtmalloc_selection, &w,
					"kunit_sel_a kunit_sel_b "), -ENOSPC);
	KUNIT_EXPECT_EQ(test, specs()->nr, DTMALLOC_SPECS_MAX - 1);
	KUNIT_EXPECT_EQ(test, probes_of(M_KUNIT_SEL_A), 0);
	KUNIT_EXPECT_EQ(test, sel_write(&dtmalloc_selection, &w,
					"kunit_sel_a "), 0);
	KUNIT_EXPECT_EQ(test, specs()->nr, DTMALLOC_SPECS_MAX);

	sel_clear(&dtmalloc_selection);
	KUNIT_EXPECT_EQ(test, specs()->nr, 0);
	KUNIT_EXPECT_FALSE(test, static_key_enabled(&dtmalloc_probes_selected.key));
	KUNIT_EXPECT_EQ(test, probes_of(M_KUNIT_SEL_A), 0);
}

static void words_across_writes(struct kunit *test)
{
	struct malloc_type_words w = {};

	/* "kunit_se" + "l_a kunit_sel_b:free" is two words, not three. */
	KUNIT_ASSERT_EQ(test, sel_write(&dtmalloc_selection, &w, "kunit_se"), 0);
	KUNIT_EXPECT_EQ(test, specs()->nr, 0);
	KUNIT_ASSERT_EQ(test, sel_write(&dtmalloc_selection, &w,
					"l_a kunit_sel_b:fr"), 0);
	KUNIT_EXPECT_EQ(test, specs()->nr, 1);
	KUNIT_EXPECT_TRUE(test, has_spec("kunit_sel_a",
					 DTMALLOC_SPEC_MALLOC | DTMALLOC_SPEC_FREE));
	/* The close finishes the last word. */
	KUNIT_ASSERT_EQ(test, malloc_type_selection_change(&dtmalloc_selection,
							   &w, "ee", 2, false,
							   true), 0);
	KUNIT_EXPECT_TRUE(test, has_spec("kunit_sel_b", DTMALLOC_SPEC_FREE));
	KUNIT_EXPECT_EQ(test, w.part_len, 0);

	/* A failed write drops the word it left unfinished. */
	KUNIT_ASSERT_EQ(test, sel_write(&malloc_type_peak_selection, &w,
					"kunit_sel_a kunit_s"), 0);
	KUNIT_EXPECT_EQ(test, peaks()->nr, 1);
	KUNIT_EXPECT_TRUE(test, test_bit(MALLOC_TYPE_EV_PEAK,
					 &M_KUNIT_SEL_A->ks_mti.mti_events));
	KUNIT_EXPECT_EQ(test, sel_write(&malloc_type_peak_selection, &w,
					"el_b \x01"), -EINVAL);
	KUNIT_EXPECT_EQ(test, w.part_len, 0);
	KUNIT_EXPECT_EQ(test, peaks()->nr, 1);
	KUNIT_EXPECT_FALSE(test, test_bit(MALLOC_TYPE_EV_PEAK,
					  &M_KUNIT_SEL_B->ks_mti.mti_events));

	sel_clear(&dtmalloc_selection);
	sel_clear(&malloc_type_peak_selection);
	KUNIT_EXPECT_FALSE(test, test_bit(MALLOC_TYPE_EV_PEAK,
					  &M_KUNIT_SEL_A->ks_mti.mti_events));
}

/* What the writers of the concurrent test write, at random. */
static const char *const probe_words[] = {
	"kunit_sel_a", "kunit_sel_b:malloc", "kunit_sel_?:free", "kunit_sel*",
	"!kunit_sel_a", "!kunit_sel_b:malloc", "!kunit_sel*", "kunit_sel\\072c",
	"kunit_[ab]*", "!kunit_sel_?:free",
};

static const char *const peak_words[] = {
	"kunit_sel_a", "kunit_sel_b", "kunit_sel_?", "kunit_sel*",
	"!kunit_sel_a", "!kunit_sel_b", "!kunit_sel*", "kunit_sel:c",
	"kunit_[ab]*", "!kunit_sel_?",
};

struct sel_writer {
	struct malloc_type_selection	*sel;
	const char *const		*words;
	struct completion		done;
	unsigned int			iterations;
	int				errors;
};

static int sel_writer_fn(void *arg)
{
	struct sel_writer *wr = arg;
	struct malloc_type_words w = {};
	char buf[64];
	unsigned int i;

	for (i = 0; i < wr->iterations; i++) {
		const char *a = wr->words[get_random_u32_below(10)];
		const char *b = wr->words[get_random_u32_below(10)];
		int n = snprintf(buf, sizeof(buf), "%s %s\n", a, b);
		bool trunc = get_random_u32_below(4) == 0;

		if (malloc_type_selection_change(wr->sel, &w, buf, n, trunc,
						 false))
			wr->errors++;
		cond_resched();
	}
	complete(&wr->done);
	return 0;
}

struct sel_verify {
	struct kunit	*test;
	unsigned int	tracked;
};

/* Checks one type against both lists: its probe and peak bits. */
static int sel_verify_type(struct malloc_type *mtp, void *arg)
{
	struct sel_verify *v = arg;
	struct kunit *test = v->test;
	const char *probe = mtp->ks_mti.mti_probename;
	unsigned long events = READ_ONCE(mtp->ks_mti.mti_events);
	u32 want = 0;
	bool peak = false;
	unsigned int i;

	for (i = 0; i < specs()->nr; i++)
		if (glob_match(specs()->spec[i].pat.glob, probe))
			want |= specs()->spec[i].probes;
	for (i = 0; i < peaks()->nr; i++)
		if (glob_match(peaks()->pat[i].pat.glob, probe))
			peak = true;
	KUNIT_EXPECT_EQ_MSG(test, events & (DTMALLOC_SPEC_MALLOC | DTMALLOC_SPEC_FREE),
			    (unsigned long)want, "probes of %s", probe);
	for (i = 0; i < DTMALLOC_PROBE_MAX; i++)
		KUNIT_EXPECT_EQ_MSG(test, !!READ_ONCE(mtp->ks_mti.mti_probes[i]),
				    !!(want & BIT(i)), "probe %u of %s", i,
				    probe);
	KUNIT_EXPECT_EQ_MSG(test, !!(events & BIT(MALLOC_TYPE_EV_PEAK)), peak,
			    "peak of %s", probe);
	v->tracked += !!(events & BIT(MALLOC_TYPE_EV_PEAK));
	return 0;
}

static int sel_count_tracked(struct malloc_type *mtp, void *arg)
{
	unsigned int *n = arg;

	*n += test_bit(MALLOC_TYPE_EV_PEAK, &mtp->ks_mti.mti_events);
	return 0;
}

/*
 * Writers of both files at once, truncating and appending: once they are
 * done, the probe key is on exactly when the list is not empty, and every
 * type's probe and peak bits are what the lists say; the keys of the
 * accounting count one reference per tracked type besides those they had.
 */
static void concurrent_writers(struct kunit *test)
{
	struct sel_writer wr[4] = {
		{ .sel = &dtmalloc_selection, .words = probe_words },
		{ .sel = &dtmalloc_selection, .words = probe_words },
		{ .sel = &malloc_type_peak_selection, .words = peak_words },
		{ .sel = &malloc_type_peak_selection, .words = peak_words },
	};
	struct sel_verify v = { .test = test };
	unsigned int i, started = 0, tracked0 = 0;
	int malloc0, free0;

	static_assert(ARRAY_SIZE(probe_words) == 10 &&
		      ARRAY_SIZE(peak_words) == 10);
	/* The keys' references besides the tracked types' (the tracepoints'). */
	malloc_type_for_each(sel_count_tracked, &tracked0);
	malloc0 = static_key_count(&malloc_type_events.malloc.key) - tracked0;
	free0 = static_key_count(&malloc_type_events.free.key) - tracked0;
	/* Every writer that started is waited for: they use wr[] on this stack. */
	for (i = 0; i < ARRAY_SIZE(wr); i++) {
		struct task_struct *t;

		wr[i].iterations = 150;
		init_completion(&wr[i].done);
		t = kthread_run(sel_writer_fn, &wr[i], "mt_sel_test/%u", i);
		KUNIT_EXPECT_FALSE(test, IS_ERR(t));
		if (IS_ERR(t))
			break;
		started++;
	}
	for (i = 0; i < started; i++) {
		wait_for_completion(&wr[i].done);
		KUNIT_EXPECT_EQ(test, wr[i].errors, 0);
	}
	if (started < ARRAY_SIZE(wr))
		return;

	mutex_lock(&dtmalloc_selection.write_lock);
	mutex_lock(&malloc_type_peak_selection.write_lock);
	KUNIT_EXPECT_EQ(test, static_key_enabled(&dtmalloc_probes_selected.key),
			specs()->nr > 0);
	malloc_type_for_each(sel_verify_type, &v);
	KUNIT_EXPECT_EQ(test, static_key_count(&malloc_type_events.malloc.key),
			malloc0 + (int)v.tracked);
	KUNIT_EXPECT_EQ(test, static_key_count(&malloc_type_events.free.key),
			free0 + (int)v.tracked);
	mutex_unlock(&malloc_type_peak_selection.write_lock);
	mutex_unlock(&dtmalloc_selection.write_lock);
}

#ifdef CONFIG_FAIL_MALLOC_TYPE
static MALLOC_DEFINE(M_KUNIT_INJECT, "kunit inject", "KUnit: failure injection");
static MALLOC_DEFINE(M_KUNIT_SPARED, "kunit spared", "KUnit: failure injection");

/* The type's count of failures, summed over the possible CPUs. */
static u64 failures_of(struct malloc_type *mtp)
{
	struct malloc_type_counters __percpu *pcpu = READ_ONCE(mtp->ks_mti.mti_stats);
	u64 n = 0;
	int cpu;

	for_each_possible_cpu(cpu)
		n += READ_ONCE(per_cpu_ptr(pcpu, cpu)->mts_numfailures);
	return n;
}

/*
 * fail_malloc_type: the allocations of the selected type fail as the fault
 * attributes say (here: every one, four times), counted as its failures;
 * __GFP_NOFAIL requests, resizes within the size class, the other types and
 * the allocations after the last of the three do not fail; deselecting
 * turns the key off.
 */
static void fail_injection(struct kunit *test)
{
	struct fault_attr *attr = &malloc_type_fail.attr;
	u64 failed = failures_of(M_KUNIT_INJECT);
	u64 spared = failures_of(M_KUNIT_SPARED);
	/* memguard's selection of the command line holds the key too. */
	int debug0 = static_key_count(&malloc_type_events.debug.key);
	struct malloc_type_words w = {};
	u8 *r, *p;

	r = kmalloc_mt(10, GFP_KERNEL, M_KUNIT_INJECT);
	KUNIT_ASSERT_NOT_NULL(test, r);
	memset(r, 0x5a, 10);
	attr->probability = 100;
	attr->interval = 1;
	attr->verbose = 0;
	atomic_set(&attr->space, 0);
	atomic_set(&attr->times, 4);
	KUNIT_ASSERT_EQ(test, sel_write(&malloc_type_fail_selection, &w, "kunit_inj*\n"), 0);
	KUNIT_EXPECT_EQ(test, static_key_count(&malloc_type_events.debug.key), debug0 + 1);
	KUNIT_EXPECT_TRUE(test, test_bit(MALLOC_TYPE_EV_FAIL,
					 &M_KUNIT_INJECT->ks_mti.mti_events));
	KUNIT_EXPECT_FALSE(test, test_bit(MALLOC_TYPE_EV_FAIL,
					  &M_KUNIT_SPARED->ks_mti.mti_events));

	/* The first of four failures. */
	KUNIT_EXPECT_NULL(test, kmalloc_mt(100, GFP_KERNEL, M_KUNIT_INJECT));
	p = kmalloc_mt(100, GFP_KERNEL | __GFP_NOFAIL, M_KUNIT_INJECT);
	KUNIT_EXPECT_NOT_NULL(test, p);
	kfree_mt(p, M_KUNIT_INJECT);
	p = kmalloc_mt(100, GFP_KERNEL, M_KUNIT_SPARED);
	KUNIT_EXPECT_NOT_NULL(test, p);
	kfree_mt(p, M_KUNIT_SPARED);
	/* The second: kvmalloc_mt(). */
	KUNIT_EXPECT_NULL(test, kvmalloc_mt(100000, GFP_KERNEL, M_KUNIT_INJECT));
	/* A resize within the size class keeps the block, and fails nothing. */
	KUNIT_EXPECT_PTR_EQ(test, (u8 *)krealloc_mt(r, 12, GFP_KERNEL, M_KUNIT_INJECT), r);
	/* The third: a resize to another size class, which keeps the block. */
	KUNIT_EXPECT_NULL(test, krealloc_mt(r, 200, GFP_KERNEL, M_KUNIT_INJECT));
	KUNIT_EXPECT_TRUE(test, !memchr_inv(r, 0x5a, 10));
	/* The fourth: pages. */
	KUNIT_EXPECT_NULL(test, alloc_pages_mt(GFP_KERNEL, 0, M_KUNIT_INJECT));
	KUNIT_EXPECT_EQ(test, atomic_read(&attr->times), 0);
	/* No failure left. */
	p = kmalloc_mt(100, GFP_KERNEL, M_KUNIT_INJECT);
	KUNIT_EXPECT_NOT_NULL(test, p);
	kfree_mt(p, M_KUNIT_INJECT);
	kfree_mt(r, M_KUNIT_INJECT);
	KUNIT_EXPECT_EQ(test, failures_of(M_KUNIT_INJECT) - failed, 4ULL);
	KUNIT_EXPECT_EQ(test, failures_of(M_KUNIT_SPARED) - spared, 0ULL);

	KUNIT_EXPECT_EQ(test, sel_write(&malloc_type_fail_selection, &w, "!kunit_inj*\n"), 0);
	KUNIT_EXPECT_EQ(test, static_key_count(&malloc_type_events.debug.key), debug0);
	KUNIT_EXPECT_FALSE(test, test_bit(MALLOC_TYPE_EV_FAIL,
					  &M_KUNIT_INJECT->ks_mti.mti_events));
	/* A bad pattern fails the write and changes nothing. */
	KUNIT_EXPECT_EQ(test, sel_write(&malloc_type_fail_selection, &w, "kunit_inj* kunit\\9 "),
			-EINVAL);
	KUNIT_EXPECT_EQ(test, static_key_count(&malloc_type_events.debug.key), debug0);
}
#endif

/* Each test leaves the selections empty, whether it passed or not. */
static void sel_exit(struct kunit *test)
{
	sel_clear(&dtmalloc_selection);
	sel_clear(&malloc_type_peak_selection);
	KUNIT_EXPECT_FALSE(test, static_key_enabled(&dtmalloc_probes_selected.key));
#ifdef CONFIG_FAIL_MALLOC_TYPE
	sel_clear(&malloc_type_fail_selection);
	malloc_type_fail.attr.probability = 0;
	KUNIT_EXPECT_FALSE(test, test_bit(MALLOC_TYPE_EV_FAIL,
					  &M_KUNIT_INJECT->ks_mti.mti_events));
#endif
}

static struct kunit_case malloc_type_selection_cases[] = {
	KUNIT_CASE(all_or_nothing),
	KUNIT_CASE(words_across_writes),
	KUNIT_CASE_SLOW(concurrent_writers),
#ifdef CONFIG_FAIL_MALLOC_TYPE
	KUNIT_CASE(fail_injection),
#endif
	{}
};

static struct kunit_suite malloc_type_selection_suite = {
	.name = "malloc_type_selection",
	.exit = sel_exit,
	.test_cases = malloc_type_selection_cases,
};

#ifdef CONFIG_MALLOC_TYPE_MEMGUARD
static MALLOC_DEFINE(M_KUNIT_MG, "kunit mg guarded", "KUnit: memguard guards it");
static MALLOC_DEFINE(M_KUNIT_MG_NOT, "kunit mg spared", "KUnit: memguard leaves it");

/* The type's bytes in use, summed over the possible CPUs. */
static s64 mt_mem_use(struct malloc_type *mtp)
{
	struct malloc_type_counters __percpu *pcpu = READ_ONCE(mtp->ks_mti.mti_stats);
	u64 n = 0;
	int cpu;

	for_each_possible_cpu(cpu) {
		struct malloc_type_counters *c = per_cpu_ptr(pcpu, cpu);

		n += READ_ONCE(c->mts_memalloced) - READ_ONCE(c->mts_memfreed);
	}
	return (s64)n;
}

/* memguard/types selects the types it guards; their blocks keep their charge. */
static void memguard_guards_selected_types(struct kunit *test)
{
	struct malloc_type_words w = {};
	size_t charged = 0;
	u8 *p, *q, *r;

	KUNIT_ASSERT_EQ(test, sel_write(&malloc_type_memguard_selection, &w,
					"kunit_mg_guarded\n"), 0);
	KUNIT_EXPECT_TRUE(test, static_key_enabled(&malloc_type_events.debug.key));
	KUNIT_EXPECT_TRUE(test, static_key_enabled(&malloc_type_events.guarded.key));
	KUNIT_EXPECT_TRUE(test, test_bit(MALLOC_TYPE_EV_MEMGUARD,
					 &M_KUNIT_MG->ks_mti.mti_events));
	KUNIT_EXPECT_FALSE(test, test_bit(MALLOC_TYPE_EV_MEMGUARD,
					  &M_KUNIT_MG_NOT->ks_mti.mti_events));

	p = kzalloc_mt(100, GFP_KERNEL, M_KUNIT_MG);
	KUNIT_ASSERT_NOT_NULL(test, p);
	KUNIT_EXPECT_TRUE(test, is_vmalloc_addr(p));
	/* It ends where the guard page starts. */
	KUNIT_EXPECT_EQ(test, offset_in_page(p + 104), 0UL);
	KUNIT_EXPECT_EQ(test, malloc_type_memguard_block(p, &charged), 100UL);
	KUNIT_EXPECT_EQ(test, charged, kmalloc_size_roundup(100));
	KUNIT_EXPECT_EQ(test, malloc_type_block_size(p), kmalloc_size_roundup(100));
	KUNIT_EXPECT_EQ(test, malloc_usable_size(p), 100UL);
	KUNIT_EXPECT_TRUE(test, mem_is_zero(p, 100));
	memset(p, 0x5a, 100);
	/* A resize moves the block, to another guarded one. */
	q = krealloc_mt(p, 200, GFP_KERNEL, M_KUNIT_MG);
	KUNIT_ASSERT_NOT_NULL(test, q);
	KUNIT_EXPECT_PTR_NE(test, q, p);
	KUNIT_EXPECT_TRUE(test, is_vmalloc_addr(q));
	KUNIT_EXPECT_TRUE(test, !memchr_inv(q, 0x5a, 100));
	/* A power of two is aligned to itself, as kmalloc aligns it. */
	r = kmalloc_mt(64, GFP_KERNEL, M_KUNIT_MG);
	KUNIT_ASSERT_NOT_NULL(test, r);
	KUNIT_EXPECT_TRUE(test, IS_ALIGNED((unsigned long)r, 64));
	kfree_mt(r, M_KUNIT_MG);
	kfree_sensitive_mt(q, M_KUNIT_MG);

	/* The other types, and sizes above the largest size class, are not guarded. */
	p = kmalloc_mt(100, GFP_KERNEL, M_KUNIT_MG_NOT);
	KUNIT_ASSERT_NOT_NULL(test, p);
	KUNIT_EXPECT_FALSE(test, is_vmalloc_addr(p));
	kfree_mt(p, M_KUNIT_MG_NOT);
	p = kmalloc_mt(KMALLOC_MAX_CACHE_SIZE + 1, GFP_KERNEL, M_KUNIT_MG);
	KUNIT_ASSERT_NOT_NULL(test, p);
	KUNIT_EXPECT_FALSE(test, is_vmalloc_addr(p));
	kfree_mt(p, M_KUNIT_MG);

	KUNIT_EXPECT_EQ(test, mt_mem_use(M_KUNIT_MG), 0);
	/* Guarded blocks are in the arena, which frees test inline. */
	r = kmalloc_mt(100, GFP_KERNEL, M_KUNIT_MG);
	KUNIT_ASSERT_NOT_NULL(test, r);
	KUNIT_EXPECT_LT(test, (unsigned long)r - malloc_type_memguard_arena.start,
			malloc_type_memguard_arena.size);
	KUNIT_EXPECT_EQ(test, sel_write(&malloc_type_memguard_selection, &w,
					"!kunit_mg_guarded\n"), 0);
	KUNIT_EXPECT_FALSE(test, test_bit(MALLOC_TYPE_EV_MEMGUARD,
					  &M_KUNIT_MG->ks_mti.mti_events));
	/* Deselected: a new block is not guarded. */
	p = kmalloc_mt(100, GFP_KERNEL, M_KUNIT_MG);
	KUNIT_ASSERT_NOT_NULL(test, p);
	KUNIT_EXPECT_FALSE(test, is_vmalloc_addr(p));
	KUNIT_EXPECT_GE(test, (unsigned long)p - malloc_type_memguard_arena.start,
			malloc_type_memguard_arena.size);
	kfree_mt(p, M_KUNIT_MG);
	/* A block guarded before goes back to memguard, uncharged as charged. */
	KUNIT_EXPECT_EQ(test, malloc_type_memguard_block(r, NULL), 100UL);
	kfree_mt(r, M_KUNIT_MG);
	KUNIT_EXPECT_EQ(test, mt_mem_use(M_KUNIT_MG), 0);
}

/* The last report was of @what at @addr, in type "kunit mg guarded". */
static void expect_report(struct kunit *test, long before, const char *what,
			  const void *addr)
{
	KUNIT_EXPECT_EQ(test, malloc_type_memguard_reports(), before + 1);
	KUNIT_EXPECT_STREQ(test, malloc_type_memguard_last.what, what);
	KUNIT_EXPECT_STREQ(test, malloc_type_memguard_last.type, "kunit mg guarded");
	KUNIT_EXPECT_EQ(test, malloc_type_memguard_last.addr, (unsigned long)addr);
}

/*
 * A one-byte overflow, a use after free and a double free of a guarded
 * block fault at once and are reported, the type named; the kernel goes on.
 * On one CPU: the free forgets the block in this CPU's TLB at once, the
 * others' in a work item.
 */
static void memguard_catches_bugs(struct kunit *test)
{
	struct malloc_type_words w = {};
	size_t i = 64;
	long n;
	u8 *p;

	KUNIT_ASSERT_EQ(test, sel_write(&malloc_type_memguard_selection, &w,
					"kunit_mg_guarded\n"), 0);
	p = kmalloc_mt(64, GFP_KERNEL, M_KUNIT_MG);
	KUNIT_ASSERT_NOT_NULL(test, p);
	KUNIT_ASSERT_TRUE(test, is_vmalloc_addr(p));
	OPTIMIZER_HIDE_VAR(i);

	migrate_disable();
	WRITE_ONCE(malloc_type_memguard_kunit_expect, true);
	n = malloc_type_memguard_reports();
	WRITE_ONCE(p[i], 1);
	expect_report(test, n, "out-of-bounds", p + 64);

	kfree_mt(p, M_KUNIT_MG);
	n = malloc_type_memguard_reports();
	(void)READ_ONCE(p[0]);
	expect_report(test, n, "use-after-free", p);

	n = malloc_type_memguard_reports();
	kfree_mt(p, M_KUNIT_MG);
	expect_report(test, n, "double-free", p);
	WRITE_ONCE(malloc_type_memguard_kunit_expect, false);
	migrate_enable();
	/* The double free uncharged nothing. */
	KUNIT_EXPECT_EQ(test, mt_mem_use(M_KUNIT_MG), 0);
}

/*
 * The same bugs in a type that is not guarded go unnoticed by memguard:
 * an overflow into the slack of the size class, and a read of a freed slab
 * object (KASAN, which would report them, looks away).
 */
static void memguard_leaves_other_types(struct kunit *test)
{
	struct malloc_type_words w = {};
	size_t i = 60;
	long n;
	u8 *p;

	KUNIT_ASSERT_EQ(test, sel_write(&malloc_type_memguard_selection, &w,
					"kunit_mg_guarded\n"), 0);
	p = kmalloc_mt(60, GFP_KERNEL, M_KUNIT_MG_NOT);
	KUNIT_ASSERT_NOT_NULL(test, p);
	KUNIT_ASSERT_FALSE(test, is_vmalloc_addr(p));
	OPTIMIZER_HIDE_VAR(i);
	n = malloc_type_memguard_reports();
	kasan_disable_current();
	WRITE_ONCE(p[i], 1);
	kfree_mt(p, M_KUNIT_MG_NOT);
	(void)READ_ONCE(p[0]);
	kasan_enable_current();
	KUNIT_EXPECT_EQ(test, malloc_type_memguard_reports(), n);
}

/*
 * Each test takes its pattern out again, whether it passed or not; the
 * selection of the command line (memguard.desc=) stays.
 */
static void memguard_exit(struct kunit *test)
{
	struct malloc_type_words w = {};

	WRITE_ONCE(malloc_type_memguard_kunit_expect, false);
	sel_write(&malloc_type_memguard_selection, &w, "!kunit_mg_guarded\n");
	KUNIT_EXPECT_FALSE(test, test_bit(MALLOC_TYPE_EV_MEMGUARD,
					  &M_KUNIT_MG->ks_mti.mti_events));
}

static struct kunit_case malloc_type_memguard_cases[] = {
	KUNIT_CASE(memguard_guards_selected_types),
	KUNIT_CASE(memguard_catches_bugs),
	KUNIT_CASE(memguard_leaves_other_types),
	{}
};

static struct kunit_suite malloc_type_memguard_suite = {
	.name = "malloc_type_memguard",
	.exit = memguard_exit,
	.test_cases = malloc_type_memguard_cases,
};

kunit_test_suites(&malloc_type_selection_suite, &malloc_type_memguard_suite);
#else
kunit_test_suite(malloc_type_selection_suite);
#endif

MODULE_DESCRIPTION("KUnit tests of the malloc types selection files");
MODULE_LICENSE("GPL");
