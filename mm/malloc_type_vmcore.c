// SPDX-License-Identifier: GPL-2.0
/*
 * Malloc types: the registry's description in the vmcoreinfo note, for the
 * readers of crash dumps and /proc/kcore.
 */

#define pr_fmt(fmt) "malloc_types: " fmt

#include <linux/cpumask.h>
#include <linux/init.h>
#include <linux/malloc_type.h>
#include <linux/percpu.h>
#include <linux/vmcore_info.h>

#include "malloc_type_internal.h"

/*
 * The version of the description, for its readers (memstat -M): bumped when a
 * reader of the previous one would misread a dump.
 */
#define MALLOC_TYPE_VMCOREINFO_VERSION	1

/*
 * The malloc types' part of the vmcoreinfo: the same KEY=VALUE lines, kept
 * in kernel memory, which the note points to. The note is one page that
 * every subsystem and architecture shares (a full one is truncated with a
 * warning): the registry's description, about 1100 bytes, would take a
 * quarter of it on x86_64, so it adds two lines only.
 */
static char malloc_type_vmcoreinfo[2048] __ro_after_init;
static size_t malloc_type_vmcoreinfo_len __initdata;

static __printf(1, 2) void __init mt_vmcoreinfo(const char *fmt, ...)
{
	size_t room = sizeof(malloc_type_vmcoreinfo) - malloc_type_vmcoreinfo_len;
	va_list args;

	va_start(args, fmt);
	malloc_type_vmcoreinfo_len +=
		vscnprintf(malloc_type_vmcoreinfo + malloc_type_vmcoreinfo_len,
			   room, fmt, args);
	va_end(args);
}

#define MT_VMCOREINFO_OFFSET(name, field)				\
	mt_vmcoreinfo("OFFSET(%s.%s)=%zu\n", #name, #field,		\
		      offsetof(struct name, field))

/**
 * malloc_type_vmcoreinfo_setup() - describe the registry in the vmcoreinfo
 *
 * Writes what a reader of a crash dump or of /proc/kcore needs to list the
 * malloc types without the kernel's debugging information, as makedumpfile
 * and crash find the page structures: the registry's list head, the layout
 * of struct malloc_type and of its per-CPU counters (struct
 * malloc_type_counters: its size and the offset of each field, so that the
 * record may change), where the per-CPU offsets and the possible CPUs are,
 * the number of CPU ids, the peak bit of mti_events, the number of zones
 * and the kmalloc size classes a zindx names (bytes, by zindx). Two
 * versions: the stream's, for the meaning of the fields a reader rebuilds
 * the stream with, and MALLOC_TYPE_VMCOREINFO_VERSION, the description's
 * own, bumped when a reader of the previous one would misread a dump (a
 * new counter that a reader must know, say); without it, a dump is of the
 * kernels whose per-CPU record was the stream's struct malloc_type_stats
 * (SIZE(malloc_type_stats)). The lines go to
 * malloc_type_vmcoreinfo[], and the note gets its address and length
 * (SYMBOL(malloc_type_vmcoreinfo), LENGTH(malloc_type_vmcoreinfo)). The
 * reader is memstat -M (tools/memstat, libmemstat's kvm side).
 *
 * Context: called once by crash_save_vmcoreinfo_init() (a subsys initcall),
 * after malloc_type_init(), before the note is finished.
 */
void __init malloc_type_vmcoreinfo_setup(void)
{
	unsigned int zindx;
	size_t size;

	mt_vmcoreinfo("NUMBER(MALLOC_TYPE_STREAM_VERSION)=%d\n",
		      MALLOC_TYPE_STREAM_VERSION);
	mt_vmcoreinfo("SYMBOL(malloc_type_list)=%lx\n",
		      (unsigned long)&malloc_type_list);
	mt_vmcoreinfo("SIZE(malloc_type)=%zu\n", sizeof(struct malloc_type));
	MT_VMCOREINFO_OFFSET(malloc_type, ks_shortdesc);
	MT_VMCOREINFO_OFFSET(malloc_type, ks_mti);
	MT_VMCOREINFO_OFFSET(malloc_type_internal, mti_zone);
	MT_VMCOREINFO_OFFSET(malloc_type_internal, mti_flags);
	MT_VMCOREINFO_OFFSET(malloc_type_internal, mti_stats);
	MT_VMCOREINFO_OFFSET(malloc_type_internal, mti_id);
	MT_VMCOREINFO_OFFSET(malloc_type_internal, mti_list);
	MT_VMCOREINFO_OFFSET(malloc_type_internal, mti_events);
	MT_VMCOREINFO_OFFSET(malloc_type_internal, mti_owner);
	MT_VMCOREINFO_OFFSET(malloc_type_internal, mti_peak);
	mt_vmcoreinfo("NUMBER(MALLOC_TYPE_VMCOREINFO_VERSION)=%d\n",
		      MALLOC_TYPE_VMCOREINFO_VERSION);
	mt_vmcoreinfo("SIZE(malloc_type_counters)=%zu\n",
		      sizeof(struct malloc_type_counters));
	MT_VMCOREINFO_OFFSET(malloc_type_counters, mts_memalloced);
	MT_VMCOREINFO_OFFSET(malloc_type_counters, mts_memfreed);
	MT_VMCOREINFO_OFFSET(malloc_type_counters, mts_numallocs);
	MT_VMCOREINFO_OFFSET(malloc_type_counters, mts_numfrees);
	MT_VMCOREINFO_OFFSET(malloc_type_counters, mts_size);
	MT_VMCOREINFO_OFFSET(malloc_type_counters, mts_numfailures);
	mt_vmcoreinfo("NUMBER(MALLOC_TYPE_EV_PEAK)=%d\n", MALLOC_TYPE_EV_PEAK);
#ifdef CONFIG_SMP
	mt_vmcoreinfo("SYMBOL(__per_cpu_offset)=%lx\n",
		      (unsigned long)__per_cpu_offset);
#endif
	mt_vmcoreinfo("SYMBOL(__cpu_possible_mask)=%lx\n",
		      (unsigned long)&__cpu_possible_mask);
	mt_vmcoreinfo("NUMBER(MALLOC_TYPE_NR_CPU_IDS)=%u\n", nr_cpu_ids);
	mt_vmcoreinfo("NUMBER(MALLOC_TYPE_NUMZONES)=%u\n",
		      malloc_type_numzones());
	mt_vmcoreinfo("MALLOC_TYPE_ZONE_SIZES=");
	for (zindx = 0; zindx < MALLOC_TYPE_ZONE_COUNT_MAX; zindx++) {
		size = malloc_type_zone_size(zindx);
		if (!size)
			break;
		mt_vmcoreinfo("%s%zu", zindx ? "," : "", size);
	}
	mt_vmcoreinfo("\n");
	/* vscnprintf() stops one short of a full buffer: the text is cut. */
	if (malloc_type_vmcoreinfo_len >= sizeof(malloc_type_vmcoreinfo) - 1) {
		pr_warn("vmcoreinfo: the description does not fit in %zu bytes\n",
			sizeof(malloc_type_vmcoreinfo));
		return;
	}
	VMCOREINFO_SYMBOL_ARRAY(malloc_type_vmcoreinfo);
	VMCOREINFO_LENGTH(malloc_type_vmcoreinfo, malloc_type_vmcoreinfo_len);
}
