// SPDX-License-Identifier: GPL-2.0
/*
 * Malloc types: memguard(9) per type (CONFIG_MALLOC_TYPE_MEMGUARD).
 *
 * FreeBSD's memguard gives the allocations of one malloc type
 * (vm.memguard.desc) pages of their own, so that a buffer overflow or a use
 * after free of that type faults at the faulty access instead of corrupting
 * a neighbour quietly. Linux has KFENCE, which samples allocations at random
 * whatever their owner; this guards every allocation of the selected types.
 *
 * The arena is one range of vmalloc address space, reserved once at boot,
 * cut into slots of MEMGUARD_DATA_PAGES pages followed by an unmapped guard
 * page. A guarded block gets a free slot and fresh pages mapped at the end
 * of its data pages, the block ending where the guard page starts (its size
 * rounded up to its alignment): reading or writing one byte past it faults.
 * A free unmaps the pages and puts the slot at the tail of a FIFO of free
 * slots, so that it is reused only after every other free slot: the freed
 * block stays unmapped for as long as the arena allows (the quarantine), and
 * a use after free faults too. The pages go back to the page allocator once
 * every CPU's TLB has forgotten them (the flush work below).
 *
 * The page fault handlers of x86 and arm64 call malloc_type_memguard_fault()
 * for a kernel fault on a not-present page, as they call KFENCE's: a fault in
 * the arena is reported ("BUG: memguard: ..."), naming the malloc type, the
 * block, and the stacks that allocated and freed it; then a scratch page is
 * mapped at the address so that the kernel can go on, and the kernel is
 * tainted (and panics with panic_on_warn).
 *
 * What is guarded: allocations of the typed API of selected types (the raw
 * API and TypedAlloc in Rust, kmalloc_mt() and friends in C) of
 * memguard.minsize to KMALLOC_MAX_CACHE_SIZE bytes with an alignment of at
 * most a page, while a slot is free. Others, and those made while the arena
 * is full, take the normal path (counted). The charge is the same as the
 * block's without memguard: its size class.
 *
 * debugfs's memguard/ holds:
 *
 *   types    the selection, as fail_malloc_type/types (one pattern per
 *            line, '!' removes; mm/malloc_type_selection.c): FreeBSD's
 *            vm.memguard.desc, for any number of types.
 *   minsize  the smallest request guarded, in bytes (vm.memguard.minsize).
 *   stats    slots, blocks in use, blocks allocated, requests not guarded
 *            for want of a slot or of pages, and reports.
 *
 * The boot parameters memguard.desc=PATTERN[,PATTERN...] and
 * memguard.minsize=BYTES set them from boot.
 *
 * The allocation paths test one static key, malloc_type_events.debug, on
 * while any type is selected (here or by fail_malloc_type), then the type's
 * MALLOC_TYPE_EV_MEMGUARD bit; the free paths test
 * malloc_type_events.guarded, on from the first selection on (guarded
 * blocks may outlive it), then whether the block is in the arena.
 *
 * Locking: memguard_lock (IRQ-safe) protects the slots' states and the
 * lists of free and pending slots; the fault handler reads a slot without
 * it (a report of a racing access may mix two owners). mg_mutex protects the
 * selection's list and every type's MALLOC_TYPE_EV_MEMGUARD bit, and nests
 * inside the registry mutex as the other selections' mutexes do.
 */

#include <linux/cacheflush.h>
#include <linux/debugfs.h>
#include <linux/init.h>
#include <linux/jump_label.h>
#include <linux/malloc_type.h>
#include <linux/mm.h>
#include <linux/mutex.h>
#include <linux/panic.h>
#include <linux/preempt.h>
#include <linux/sched.h>
#include <linux/seq_file.h>
#include <linux/spinlock.h>
#include <linux/stackdepot.h>
#include <linux/stacktrace.h>
#include <linux/string.h>
#include <linux/vmalloc.h>
#include <linux/workqueue.h>
#include <asm/tlbflush.h>

#include "malloc_type_internal.h"
#include "malloc_type_selection.h"

/* The data pages of a slot: room for the largest kmalloc size class. */
#define MEMGUARD_DATA_PAGES	DIV_ROUND_UP(KMALLOC_MAX_CACHE_SIZE, PAGE_SIZE)
#define MEMGUARD_SLOT_SIZE	((MEMGUARD_DATA_PAGES + 1) * PAGE_SIZE)
/* Slots of the arena: blocks in use and the quarantine together. */
#define MEMGUARD_SLOTS		1024
#define MEMGUARD_STACK_DEPTH	16
#define MEMGUARD_NONE		U32_MAX
/* The flags of a request that its pages keep: how hard to try. */
#define MEMGUARD_GFP_MASK	(__GFP_RECLAIM | __GFP_IO | __GFP_FS | __GFP_HIGH | \
				 __GFP_NORETRY | __GFP_RETRY_MAYFAIL | \
				 __GFP_MEMALLOC | __GFP_NOMEMALLOC)

enum memguard_state {
	MEMGUARD_UNUSED,	/* never allocated */
	MEMGUARD_LIVE,		/* a block in use */
	MEMGUARD_PENDING,	/* freed, its pages not yet given back */
	MEMGUARD_FREE,		/* freed, in the FIFO of free slots */
};

/**
 * struct memguard_slot - a slot of the arena and its last block
 * @addr: the block's address.
 * @size: the size it was requested with.
 * @charged: what its type was charged (its size class).
 * @nr_pages: the pages mapped for it, the last ones of the data pages.
 * @state: enum memguard_state.
 * @scratched: the fault handler mapped the scratch page in the slot.
 * @scrub: the slot goes through the flush work to have its scratch
 *	mappings taken out before it is used again.
 * @next: the next slot in the FIFO of free slots or the pending list.
 * @alloc_pid: the task that allocated the block.
 * @free_pid: the task that freed it, once freed.
 * @alloc_stack: the stack that allocated it.
 * @free_stack: the stack that freed it.
 * @type: the text of its malloc type's name (the type may go first).
 * @pages: the pages mapped.
 */
struct memguard_slot {
	unsigned long		addr;
	size_t			size;
	size_t			charged;
	unsigned int		nr_pages;
	enum memguard_state	state;
	bool			scratched;
	bool			scrub;
	u32			next;
	pid_t			alloc_pid;
	pid_t			free_pid;
	depot_stack_handle_t	alloc_stack;
	depot_stack_handle_t	free_stack;
	char			type[MALLOC_TYPE_TEXT_MAX + 1];
	struct page		*pages[MEMGUARD_DATA_PAGES];
};

/* Zero until the arena is set up, then never changed. */
struct malloc_type_memguard_arena malloc_type_memguard_arena __read_mostly;
EXPORT_SYMBOL_GPL(malloc_type_memguard_arena);
static struct memguard_slot *memguard_slots;
static struct page *memguard_scratch;
static DEFINE_SPINLOCK(memguard_lock);
/* The FIFO of free slots, oldest free first, and the slots to recycle. */
static u32 free_head = MEMGUARD_NONE, free_tail = MEMGUARD_NONE;
static u32 pending_head = MEMGUARD_NONE;

static unsigned long memguard_minsize;
static atomic_long_t stat_in_use, stat_allocs, stat_fail_kva, stat_fail_pgs,
	stat_reports;

/* Set by the KUnit suite while it makes faults on purpose. */
bool malloc_type_memguard_kunit_expect;
EXPORT_SYMBOL_GPL(malloc_type_memguard_kunit_expect);
/* The last report, for the KUnit suite. */
struct malloc_type_memguard_report malloc_type_memguard_last;

static DEFINE_MUTEX(mg_mutex);
static struct malloc_type_sel_patterns mg_patterns;

static void memguard_flush_workfn(struct work_struct *work);

/**
 * malloc_type_memguard_reports() - the number of reports since boot
 *
 * Return: the number.
 */
long malloc_type_memguard_reports(void)
{
	return atomic_long_read(&stat_reports);
}

static DECLARE_WORK(memguard_flush_work, memguard_flush_workfn);

static inline unsigned long slot_start(u32 i)
{
	return malloc_type_memguard_arena.start + (unsigned long)i * MEMGUARD_SLOT_SIZE;
}

/* The slot of @addr, or NULL when @addr is outside the arena. */
static struct memguard_slot *slot_of(unsigned long addr)
{
	unsigned long off = addr - READ_ONCE(malloc_type_memguard_arena.start);

	if (off >= READ_ONCE(malloc_type_memguard_arena.size))
		return NULL;
	return &memguard_slots[off / MEMGUARD_SLOT_SIZE];
}

static int pte_none_cb(pte_t *pte, unsigned long addr, void *data)
{
	return 0;
}

struct memguard_map {
	struct page	**pages;
	unsigned int	i;
};

static int pte_map_cb(pte_t *pte, unsigned long addr, void *data)
{
	struct memguard_map *m = data;

	set_pte_at(&init_mm, addr, pte, mk_pte(m->pages[m->i++], PAGE_KERNEL));
	return 0;
}

static int pte_clear_cb(pte_t *pte, unsigned long addr, void *data)
{
	ptep_get_and_clear(&init_mm, addr, pte);
	return 0;
}

static int pte_scratch_cb(pte_t *pte, unsigned long addr, void *data)
{
	if (pte_none(ptep_get(pte)))
		set_pte_at(&init_mm, addr, pte,
			   mk_pte(memguard_scratch, PAGE_KERNEL));
	return 0;
}

/*
 * Forgets the unmapped range in this CPU's TLB at once, in any context,
 * so that a use after free on this CPU faults from now on; the other CPUs
 * forget it in memguard_flush_workfn(), before the pages are reused. On
 * x86 a flush of all CPUs sends IPIs, which a free with interrupts off or
 * under a spinlock must not wait for; arm64 broadcasts the invalidation.
 */
static void memguard_flush_local(unsigned long start, unsigned long end)
{
#ifdef CONFIG_X86
	for (; start < end; start += PAGE_SIZE)
		flush_tlb_one_kernel(start);
#else
	flush_tlb_kernel_range(start, end);
#endif
}

static void stack_save(depot_stack_handle_t *handle)
{
	unsigned long entries[MEMGUARD_STACK_DEPTH];
	unsigned int n;

	n = stack_trace_save(entries, ARRAY_SIZE(entries), 2);
	*handle = stack_depot_save(entries, n, GFP_NOWAIT | __GFP_NOWARN);
}

/* Takes the oldest free slot that is fit for use. Lock held. */
static u32 slot_take(void)
{
	while (free_head != MEMGUARD_NONE) {
		u32 i = free_head;
		struct memguard_slot *s = &memguard_slots[i];

		free_head = s->next;
		if (free_head == MEMGUARD_NONE)
			free_tail = MEMGUARD_NONE;
		/*
		 * A late access mapped the scratch page there: have it taken
		 * out first. Only now, when the slot comes round again, so
		 * that the access that faulted finds the scratch page when it
		 * is retried.
		 */
		if (READ_ONCE(s->scratched)) {
			s->scrub = true;
			s->state = MEMGUARD_PENDING;
			s->nr_pages = 0;
			s->next = pending_head;
			pending_head = i;
			schedule_work(&memguard_flush_work);
			continue;
		}
		return i;
	}
	return MEMGUARD_NONE;
}

/* Puts slot @i at the tail of the free FIFO. Lock held. */
static void slot_put(u32 i)
{
	memguard_slots[i].state = MEMGUARD_FREE;
	memguard_slots[i].next = MEMGUARD_NONE;
	if (free_tail == MEMGUARD_NONE)
		free_head = i;
	else
		memguard_slots[free_tail].next = i;
	free_tail = i;
}

/**
 * malloc_type_memguard_alloc() - a guarded block for a selected type
 * @mtp: the type the allocation is charged to.
 * @size: the bytes requested, at least 1.
 * @align: the alignment required, a power of two.
 * @flags: the allocation's GFP flags.
 * @charged: what the type is charged for it (its size class).
 *
 * Called by the allocation paths while malloc_type_events.debug is on.
 *
 * Context: as for kmalloc() with @flags.
 * Return: the block, zeroed with __GFP_ZERO; or NULL when @mtp is not
 * guarded, the request is not guarded, or no slot or page is to be had:
 * the caller then allocates as usual.
 */
void *malloc_type_memguard_alloc(struct malloc_type *mtp, size_t size,
				 size_t align, gfp_t flags, size_t charged)
{
	struct memguard_slot *s;
	struct memguard_map m;
	unsigned long flags_irq, end;
	size_t rounded;
	unsigned int i, nr;
	u32 idx;

	if (!test_bit(MALLOC_TYPE_EV_MEMGUARD, &mtp->ks_mti.mti_events))
		return NULL;
	/* kmalloc aligns a power-of-two size to itself. */
	if (is_power_of_2(size))
		align = max(align, size);
	align = max_t(size_t, align, ARCH_KMALLOC_MINALIGN);
	if (!size || size < READ_ONCE(memguard_minsize) ||
	    size > KMALLOC_MAX_CACHE_SIZE || align > PAGE_SIZE ||
	    (flags & __GFP_NOFAIL))
		return NULL;
	rounded = ALIGN(size, align);
	nr = DIV_ROUND_UP(rounded, PAGE_SIZE);

	spin_lock_irqsave(&memguard_lock, flags_irq);
	idx = slot_take();
	spin_unlock_irqrestore(&memguard_lock, flags_irq);
	if (idx == MEMGUARD_NONE) {
		atomic_long_inc(&stat_fail_kva);
		return NULL;
	}
	s = &memguard_slots[idx];
	for (i = 0; i < nr; i++) {
		s->pages[i] = alloc_page((flags & MEMGUARD_GFP_MASK) |
					 __GFP_NOWARN);
		if (!s->pages[i])
			goto fail_pages;
	}
	end = slot_start(idx) + MEMGUARD_DATA_PAGES * PAGE_SIZE;
	m.pages = s->pages;
	m.i = 0;
	/* The page tables exist (memguard_init()): nothing is allocated. */
	apply_to_page_range(&init_mm, end - nr * PAGE_SIZE, nr * PAGE_SIZE,
			    pte_map_cb, &m);
	flush_cache_vmap(end - nr * PAGE_SIZE, end);

	s->addr = end - rounded;
	s->size = size;
	s->charged = charged;
	s->nr_pages = nr;
	strscpy(s->type, READ_ONCE(mtp->ks_mti.mti_nametext), sizeof(s->type));
	s->alloc_pid = task_pid_nr(current);
	s->free_pid = 0;
	s->free_stack = 0;
	stack_save(&s->alloc_stack);
	spin_lock_irqsave(&memguard_lock, flags_irq);
	s->state = MEMGUARD_LIVE;
	spin_unlock_irqrestore(&memguard_lock, flags_irq);
	atomic_long_inc(&stat_in_use);
	atomic_long_inc(&stat_allocs);
	if (flags & __GFP_ZERO)
		memset((void *)s->addr, 0, size);
	return (void *)s->addr;

fail_pages:
	while (i--)
		__free_page(s->pages[i]);
	spin_lock_irqsave(&memguard_lock, flags_irq);
	slot_put(idx);
	spin_unlock_irqrestore(&memguard_lock, flags_irq);
	atomic_long_inc(&stat_fail_pgs);
	return NULL;
}
EXPORT_SYMBOL_GPL(malloc_type_memguard_alloc);

/**
 * malloc_type_memguard_block() - the sizes of a guarded block
 * @p: any address.
 * @charged: set to what the block's type was charged, when @p is one.
 *
 * Context: any context.
 * Return: the size the block at @p was requested with; 0 when @p is not a
 * guarded block in use.
 */
size_t malloc_type_memguard_block(const void *p, size_t *charged)
{
	struct memguard_slot *s = slot_of((unsigned long)p);

	if (!s || READ_ONCE(s->state) != MEMGUARD_LIVE ||
	    READ_ONCE(s->addr) != (unsigned long)p)
		return 0;
	if (charged)
		*charged = s->charged;
	return s->size;
}
EXPORT_SYMBOL_GPL(malloc_type_memguard_block);

static void memguard_report(struct memguard_slot *s, unsigned long addr,
			    bool is_write, struct pt_regs *regs,
			    const char *what, unsigned long ip);

/**
 * malloc_type_memguard_free() - free a guarded block
 * @p: any address.
 * @charged: set to what the block's type was charged, to be uncharged.
 *
 * Called by the free paths while malloc_type_events.guarded is on. A free
 * of an address in the arena that is not a block in use (a double or an
 * invalid free) is reported and frees nothing, with *@charged 0.
 *
 * Context: any context.
 * Return: whether @p is in the arena (the caller then frees nothing).
 */
bool malloc_type_memguard_free(const void *p, size_t *charged)
{
	unsigned long a = (unsigned long)p, flags, start;
	struct memguard_slot *s = slot_of(a);
	u32 idx;

	if (!s)
		return false;
	*charged = 0;
	idx = s - memguard_slots;
	spin_lock_irqsave(&memguard_lock, flags);
	if (s->state != MEMGUARD_LIVE || s->addr != a) {
		spin_unlock_irqrestore(&memguard_lock, flags);
		memguard_report(s, a, false, NULL,
				s->state == MEMGUARD_LIVE ||
				s->state == MEMGUARD_UNUSED ? "invalid-free" :
				"double-free", _RET_IP_);
		return true;
	}
	s->state = MEMGUARD_PENDING;
	spin_unlock_irqrestore(&memguard_lock, flags);

	*charged = s->charged;
	s->free_pid = task_pid_nr(current);
	stack_save(&s->free_stack);
	start = slot_start(idx) + (MEMGUARD_DATA_PAGES - s->nr_pages) * PAGE_SIZE;
	apply_to_existing_page_range(&init_mm, start, s->nr_pages * PAGE_SIZE,
				     pte_clear_cb, NULL);
	memguard_flush_local(start, start + s->nr_pages * PAGE_SIZE);
	atomic_long_dec(&stat_in_use);

	spin_lock_irqsave(&memguard_lock, flags);
	s->next = pending_head;
	pending_head = idx;
	spin_unlock_irqrestore(&memguard_lock, flags);
	schedule_work(&memguard_flush_work);
	return true;
}
EXPORT_SYMBOL_GPL(malloc_type_memguard_free);

/*
 * Recycles the freed slots: once every CPU's TLB has forgotten them, their
 * pages go back and they join the free FIFO. A slot to scrub (slot_take()
 * found the scratch page mapped in it) is unmapped whole first.
 */
static void memguard_flush_workfn(struct work_struct *work)
{
	unsigned long flags;
	u32 i, next;

	spin_lock_irqsave(&memguard_lock, flags);
	i = pending_head;
	pending_head = MEMGUARD_NONE;
	spin_unlock_irqrestore(&memguard_lock, flags);
	if (i == MEMGUARD_NONE)
		return;

	for (next = i; next != MEMGUARD_NONE; next = memguard_slots[next].next) {
		struct memguard_slot *s = &memguard_slots[next];

		if (s->scrub) {
			s->scrub = false;
			WRITE_ONCE(s->scratched, false);
			apply_to_existing_page_range(&init_mm, slot_start(next),
						     MEMGUARD_SLOT_SIZE,
						     pte_clear_cb, NULL);
		}
	}
	flush_tlb_kernel_range(malloc_type_memguard_arena.start,
			       malloc_type_memguard_arena.start +
			       malloc_type_memguard_arena.size);

	while (i != MEMGUARD_NONE) {
		struct memguard_slot *s = &memguard_slots[i];
		unsigned int p;

		next = s->next;
		for (p = 0; p < s->nr_pages; p++)
			__free_page(s->pages[p]);
		s->nr_pages = 0;
		spin_lock_irqsave(&memguard_lock, flags);
		slot_put(i);
		spin_unlock_irqrestore(&memguard_lock, flags);
		i = next;
	}
}

static void print_stack(const char *what, pid_t pid,
			depot_stack_handle_t handle)
{
	pr_err("%s by task %d:\n", what, pid);
	if (handle)
		stack_depot_print(handle);
	else
		pr_err(" (no stack)\n");
}

static void memguard_report(struct memguard_slot *s, unsigned long addr,
			    bool is_write, struct pt_regs *regs,
			    const char *what, unsigned long ip)
{
	unsigned long entries[MEMGUARD_STACK_DEPTH];
	enum memguard_state state = READ_ONCE(s->state);
	unsigned long block = READ_ONCE(s->addr);
	size_t size = READ_ONCE(s->size);
	unsigned int n;

	malloc_type_memguard_last.addr = addr;
	strscpy(malloc_type_memguard_last.what, what,
		sizeof(malloc_type_memguard_last.what));
	strscpy(malloc_type_memguard_last.type,
		state == MEMGUARD_UNUSED ? "" : s->type,
		sizeof(malloc_type_memguard_last.type));
	atomic_long_inc(&stat_reports);
	pr_err("==================================================================\n");
	if (regs)
		pr_err("BUG: memguard: %s %s in %pS\n", what,
		       is_write ? "write" : "read",
		       (void *)instruction_pointer(regs));
	else
		pr_err("BUG: memguard: %s in %pS\n", what, (void *)ip);

	if (state == MEMGUARD_UNUSED) {
		pr_err("%s at 0x%p: no block was ever there\n",
		       regs ? "Access" : "Free", (void *)addr);
	} else {
		if (!regs)
			pr_err("Free of 0x%p\n", (void *)addr);
		else if (addr >= block + size)
			pr_err("%s at 0x%p (%luB right of the block)\n",
			       is_write ? "Write" : "Read", (void *)addr,
			       addr - (block + size) + 1);
		else if (addr < block)
			pr_err("%s at 0x%p (%luB left of the block)\n",
			       is_write ? "Write" : "Read", (void *)addr,
			       block - addr);
		else
			pr_err("%s at 0x%p (byte %lu of the block)\n",
			       is_write ? "Write" : "Read", (void *)addr,
			       addr - block);
		pr_err("The block: %zu bytes at 0x%p of malloc type \"%s\", %s\n",
		       size, (void *)block, s->type,
		       state == MEMGUARD_LIVE ? "in use" : "freed");
		print_stack("Allocated", READ_ONCE(s->alloc_pid),
			    READ_ONCE(s->alloc_stack));
		if (state != MEMGUARD_LIVE)
			print_stack("Freed", READ_ONCE(s->free_pid),
				    READ_ONCE(s->free_stack));
	}
	pr_err("The access:\n");
	if (regs) {
		n = stack_trace_save_regs(regs, entries, ARRAY_SIZE(entries), 0);
		stack_trace_print(entries, n, 1);
	} else {
		n = stack_trace_save(entries, ARRAY_SIZE(entries), 1);
		stack_trace_print(entries, n, 1);
	}
	dump_stack_print_info(KERN_ERR);
	pr_err("==================================================================\n");
	add_taint(TAINT_BAD_PAGE, LOCKDEP_STILL_OK);
	if (!READ_ONCE(malloc_type_memguard_kunit_expect))
		check_panic_on_warn("memguard");
}

/**
 * malloc_type_memguard_fault() - report a fault in the arena
 * @addr: the faulting address.
 * @is_write: whether the access wrote.
 * @regs: the registers of the access.
 *
 * Called by the page fault handlers for a kernel fault on a not-present
 * page. A fault in the arena is reported, and the scratch page is mapped at
 * the address so that the access can be retried and the kernel go on.
 *
 * Context: the page fault handler, any context.
 * Return: true when @addr is in the arena (handled).
 */
bool malloc_type_memguard_fault(unsigned long addr, bool is_write,
				struct pt_regs *regs)
{
	struct memguard_slot *s = slot_of(addr);
	const char *what;
	unsigned long block, page = addr & PAGE_MASK;

	if (!s)
		return false;
	block = READ_ONCE(s->addr);
	switch (READ_ONCE(s->state)) {
	case MEMGUARD_LIVE:
		what = addr >= block ? "out-of-bounds" : "out-of-bounds (left)";
		break;
	case MEMGUARD_UNUSED:
		what = "invalid-access";
		break;
	default:
		what = "use-after-free";
		break;
	}
	memguard_report(s, addr, is_write, regs, what, 0);
	WRITE_ONCE(s->scratched, true);
	/* The page tables exist: nothing is allocated. */
	apply_to_page_range(&init_mm, page, PAGE_SIZE, pte_scratch_cb, NULL);
	flush_cache_vmap(page, page + PAGE_SIZE);
	return true;
}

/* Selects @mtp. Mutex held. */
static void mg_select(struct malloc_type *mtp)
{
	lockdep_assert_held(&mg_mutex);
	if (test_bit(MALLOC_TYPE_EV_MEMGUARD, &mtp->ks_mti.mti_events))
		return;
	/* Frees check for guarded blocks from the first one on. */
	static_branch_enable(&malloc_type_events.guarded);
	static_branch_inc(&malloc_type_events.debug);
	set_bit(MALLOC_TYPE_EV_MEMGUARD, &mtp->ks_mti.mti_events);
}

/* Deselects @mtp. Mutex held. */
static void mg_deselect(struct malloc_type *mtp)
{
	lockdep_assert_held(&mg_mutex);
	if (test_and_clear_bit(MALLOC_TYPE_EV_MEMGUARD,
			       &mtp->ks_mti.mti_events))
		static_branch_dec(&malloc_type_events.debug);
}

/* Whether a pattern of the selection matches @mtp. Mutex held. */
static bool mg_selected(struct malloc_type *mtp)
{
	return malloc_type_sel_patterns_match(&mg_patterns, mtp);
}

/**
 * malloc_type_memguard_register() - guard a new type when a pattern names it
 * @mtp: a type being registered, its probe name set.
 *
 * Called with the registry mutex held.
 */
void malloc_type_memguard_register(struct malloc_type *mtp)
{
	mutex_lock(&mg_mutex);
	if (READ_ONCE(malloc_type_memguard_arena.size) && mg_selected(mtp))
		mg_select(mtp);
	mutex_unlock(&mg_mutex);
}

/**
 * malloc_type_memguard_unregister() - stop guarding a type that goes
 * @mtp: a type being unregistered.
 *
 * Called with the registry mutex held. Its guarded blocks are freed (and
 * their charges taken off) before it goes.
 */
void malloc_type_memguard_unregister(struct malloc_type *mtp)
{
	mutex_lock(&mg_mutex);
	mg_deselect(mtp);
	mutex_unlock(&mg_mutex);
}

static int mg_apply_cb(struct malloc_type *mtp, void *arg)
{
	mutex_lock(&mg_mutex);
	if (READ_ONCE(malloc_type_memguard_arena.size) && mg_selected(mtp))
		mg_select(mtp);
	else
		mg_deselect(mtp);
	mutex_unlock(&mg_mutex);
	return 0;
}

static void mg_apply(void)
{
	lockdep_assert_held(&malloc_type_memguard_selection.write_lock);
	malloc_type_for_each(mg_apply_cb, NULL);
}

static int mg_show(struct seq_file *m, void *v)
{
	mutex_lock(&mg_mutex);
	malloc_type_sel_patterns_show(m, &mg_patterns);
	mutex_unlock(&mg_mutex);
	return 0;
}

struct malloc_type_selection malloc_type_memguard_selection = {
	.write_lock	= __MUTEX_INITIALIZER(malloc_type_memguard_selection.write_lock),
	.list_lock	= &mg_mutex,
	.list		= &mg_patterns,
	.list_size	= sizeof(mg_patterns),
	.edit		= malloc_type_sel_patterns_edit,
	.clear		= malloc_type_sel_patterns_clear,
	.apply		= mg_apply,
	.show		= mg_show,
};

static char *memguard_desc __initdata;

static int __init setup_memguard_desc(char *str)
{
	memguard_desc = str;
	return 1;
}
__setup("memguard.desc=", setup_memguard_desc);

static int __init setup_memguard_minsize(char *str)
{
	return !kstrtoul(str, 0, &memguard_minsize);
}
__setup("memguard.minsize=", setup_memguard_minsize);

static int mg_types_open(struct inode *inode, struct file *file)
{
	return malloc_type_selection_open(&malloc_type_memguard_selection,
					  inode, file);
}

static int mg_types_release(struct inode *inode, struct file *file)
{
	return malloc_type_selection_release(&malloc_type_memguard_selection,
					     inode, file);
}

static ssize_t mg_types_write(struct file *file, const char __user *ubuf,
			      size_t count, loff_t *ppos)
{
	return malloc_type_selection_write(&malloc_type_memguard_selection,
					   file, ubuf, count, ppos);
}

static const struct file_operations mg_types_fops = {
	.owner		= THIS_MODULE,
	.open		= mg_types_open,
	.read		= seq_read,
	.write		= mg_types_write,
	.llseek		= malloc_type_selection_llseek,
	.release	= mg_types_release,
};

static int mg_stats_show(struct seq_file *m, void *v)
{
	seq_printf(m, "slots %u\n", MEMGUARD_SLOTS);
	seq_printf(m, "in_use %ld\n", atomic_long_read(&stat_in_use));
	seq_printf(m, "allocs %ld\n", atomic_long_read(&stat_allocs));
	seq_printf(m, "fail_kva %ld\n", atomic_long_read(&stat_fail_kva));
	seq_printf(m, "fail_pgs %ld\n", atomic_long_read(&stat_fail_pgs));
	seq_printf(m, "reports %ld\n", atomic_long_read(&stat_reports));
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(mg_stats);

/*
 * Reserves the arena and its page tables, so that mapping a block needs no
 * allocation (a guarded allocation may be atomic); then applies the
 * selection of the command line.
 */
static int __init memguard_init(void)
{
	unsigned long size = (unsigned long)MEMGUARD_SLOTS * MEMGUARD_SLOT_SIZE;
	struct malloc_type_words words = {};
	struct vm_struct *area;
	struct dentry *dir;
	u32 i;
	int ret;

	stack_depot_init();
	memguard_scratch = alloc_page(GFP_KERNEL | __GFP_ZERO);
	memguard_slots = vzalloc(array_size(MEMGUARD_SLOTS,
					    sizeof(*memguard_slots)));
	area = get_vm_area(size, VM_SPARSE);
	if (!memguard_scratch || !memguard_slots || !area)
		goto fail;
	ret = apply_to_page_range(&init_mm, (unsigned long)area->addr, size,
				  pte_none_cb, NULL);
	if (ret)
		goto fail;
	/* Every slot free, never used yet. */
	for (i = 0; i < MEMGUARD_SLOTS; i++)
		memguard_slots[i].next = i + 1 < MEMGUARD_SLOTS ? i + 1 : MEMGUARD_NONE;
	free_head = 0;
	free_tail = MEMGUARD_SLOTS - 1;
	/* The start first: until the size is set, no address is in the arena. */
	WRITE_ONCE(malloc_type_memguard_arena.start, (unsigned long)area->addr);
	WRITE_ONCE(malloc_type_memguard_arena.size, size);

	dir = debugfs_create_dir("memguard", NULL);
	debugfs_create_file("types", 0600, dir, NULL, &mg_types_fops);
	debugfs_create_ulong("minsize", 0600, dir, &memguard_minsize);
	debugfs_create_file("stats", 0400, dir, NULL, &mg_stats_fops);

	if (memguard_desc) {
		char *p;

		for (p = memguard_desc; *p; p++)
			if (*p == ',')
				*p = ' ';
		ret = malloc_type_selection_change(&malloc_type_memguard_selection,
						   &words, memguard_desc,
						   strlen(memguard_desc), true,
						   true);
		if (ret)
			pr_err("memguard: memguard.desc=: error %d, nothing guarded\n",
			       ret);
	}
	return 0;

fail:
	pr_err("memguard: cannot reserve the arena: nothing will be guarded\n");
	if (area)
		free_vm_area(area);
	vfree(memguard_slots);
	if (memguard_scratch)
		__free_page(memguard_scratch);
	return -ENOMEM;
}
late_initcall(memguard_init);
