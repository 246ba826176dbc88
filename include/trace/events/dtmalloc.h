/* SPDX-License-Identifier: GPL-2.0 */
/*
 * dtmalloc: a tracepoint on every typed allocation and free, as FreeBSD's
 * dtmalloc(4) DTrace provider fires dtmalloc::<type>:malloc and
 * dtmalloc::<type>:free.
 *
 * The prototype carries the five arguments of dtmalloc(4), in order:
 *   mtp	the malloc type (args[0]->ks_shortdesc is its name);
 *   mtip	its internal part (zone, per-CPU statistics);
 *   mtsp	the statistics record of the CPU the event fired on, as it
 *		is after this event was counted;
 *   size	the accounted size in bytes (the kmalloc bucket size, or the
 *		page-rounded size of a large allocation);
 *   zindx	the kmalloc size class that served the allocation, -1 when
 *		none did; always 0 on free.
 *
 * The recorded event holds the type's name, its probe name (the name with
 * every ASCII white-space character replaced by '_', as dtmalloc(4) names
 * its probes: "foo bar" fires as probe "foo_bar"; see
 * malloc_type_probe_name()), the size and zindx. The name and the probe
 * name are recorded in their text forms (malloc_type_name_text(): each byte
 * that is not printable ASCII, and each backslash, as \NNN), computed once
 * when the type registers (mtip->mti_nametext, mtip->mti_probetext), so
 * that an event is always one line of printable text. Filters can use all
 * four fields: echo 'probe == "foo_bar"' > .../filter
 *
 * Per-type probes, as dtmalloc(4) has them: while tracefs's
 * set_dtmalloc_probes names probes, the events fire only for those (see
 * mm/malloc_type_probes.c), and the other types pay nothing for tracing.
 */
#undef TRACE_SYSTEM
#define TRACE_SYSTEM dtmalloc

#if !defined(_TRACE_DTMALLOC_H) || defined(TRACE_HEADER_MULTI_READ)
#define _TRACE_DTMALLOC_H

#include <linux/malloc_type.h>
#include <linux/tracepoint.h>

DECLARE_EVENT_CLASS(dtmalloc,

	TP_PROTO(struct malloc_type *mtp, struct malloc_type_internal *mtip,
		 struct malloc_type_counters *mtsp, unsigned long size, int zindx),

	TP_ARGS(mtp, mtip, mtsp, size, zindx),

	TP_STRUCT__entry(
		__string(name, mtip->mti_nametext)
		__string(probe, mtip->mti_probetext)
		__field(unsigned long, size)
		__field(int, zindx)
	),

	TP_fast_assign(
		__assign_str(name);
		__assign_str(probe);
		__entry->size = size;
		__entry->zindx = zindx;
	),

	TP_printk("probe=%s size=%lu zindx=%d name='%s'",
		  __get_str(probe), __entry->size, __entry->zindx,
		  __get_str(name))
);

/*
 * After every successful typed allocation, once its counters are updated.
 * The reg and unreg functions switch the accounting's test of the event on
 * and off (struct malloc_type_events, mm/malloc_type_trace.c).
 */
DEFINE_EVENT_FN(dtmalloc, malloc,

	TP_PROTO(struct malloc_type *mtp, struct malloc_type_internal *mtip,
		 struct malloc_type_counters *mtsp, unsigned long size, int zindx),

	TP_ARGS(mtp, mtip, mtsp, size, zindx),

	dtmalloc_malloc_reg, dtmalloc_malloc_unreg
);

/* On every typed free, once its counters are updated; zindx is 0. */
DEFINE_EVENT_FN(dtmalloc, free,

	TP_PROTO(struct malloc_type *mtp, struct malloc_type_internal *mtip,
		 struct malloc_type_counters *mtsp, unsigned long size, int zindx),

	TP_ARGS(mtp, mtip, mtsp, size, zindx),

	dtmalloc_free_reg, dtmalloc_free_unreg
);

#endif /* _TRACE_DTMALLOC_H */

/* This part must be outside protection */
#include <trace/define_trace.h>
