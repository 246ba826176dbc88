/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * Malloc types: the binary statistics stream read from /proc/malloc_stats.
 *
 * Modelled on FreeBSD's kern.malloc_stats sysctl (sys/sys/malloc.h):
 * a stream header, then for each registered malloc type one
 * struct malloc_type_header followed by mtsh_maxcpus struct
 * malloc_type_stats records, one per possible CPU id (records of CPU ids
 * that are not possible are zero). All fields are in native byte order and
 * there is no padding between records, so the total length of a stream is
 *
 *	sizeof(struct malloc_type_stream_header) +
 *	mtsh_count * (sizeof(struct malloc_type_header) +
 *		      mtsh_maxcpus * sizeof(struct malloc_type_stats))
 *
 * The set of types is the one registered when the stream is read from
 * offset 0, and mtsh_count counts it; each type's records are read when the
 * reading reaches them, from its per-CPU counters. A type unregistered in
 * between (its module unloaded) keeps its place, as a record with only
 * mth_id and MALLOC_TYPE_F_GONE set and all else zero, which readers skip.
 *
 * A type of a module that has unloaded while blocks charged to it were
 * still allocated stays registered, with MALLOC_TYPE_F_UNLOADED, until
 * whoever holds them has freed them all (a kfree() of a kmalloc_mt() block
 * charges back the block's type); it is then unregistered at the next load
 * or unload of a module.
 *
 * Differences from FreeBSD: the per-type header is 128 bytes, not 32; it
 * carries the type's zone, a registration id that tells two types of the
 * same name apart, the module that owns the type and its peak bytes in use;
 * each CPU's record also counts the allocations that failed.
 *
 * Version 1 had a 64-byte struct malloc_type_header: the first 64 bytes of
 * today's, with mth_peak zero and MALLOC_TYPE_F_PEAK never set, and no
 * mth_owner; its stats records are today's, with mts_numfailures zero.
 * Readers tell the layouts apart by mtsh_version.
 */
#ifndef _UAPI_LINUX_MALLOC_TYPE_H
#define _UAPI_LINUX_MALLOC_TYPE_H

#include <linux/types.h>

/* Version of the stream layout; bumped on any incompatible change. */
#define MALLOC_TYPE_STREAM_VERSION	0x00000002

/* Bytes of a type name in the stream, including the terminating NUL. */
#define MALLOC_MAX_NAME			32

/* The number of kmalloc size classes a zindx can name (x86_64). */
#define MALLOC_TYPE_ZONE_COUNT_MAX	64

/* Bytes of the owner's name in the stream, including the terminating NUL. */
#define MALLOC_MAX_OWNER		64

/**
 * struct malloc_type_stream_header - first 16 bytes of the stream
 * @mtsh_version: %MALLOC_TYPE_STREAM_VERSION.
 * @mtsh_maxcpus: stats records per type: nr_cpu_ids of the running kernel.
 * @mtsh_count: number of types that follow.
 * @_mtsh_pad: zero.
 */
struct malloc_type_stream_header {
	__u32	mtsh_version;
	__u32	mtsh_maxcpus;
	__u32	mtsh_count;
	__u32	_mtsh_pad;
};

/* Bits of malloc_type_header.mth_flags. */
#define MALLOC_TYPE_F_MODULE		0x00000001	/* defined in a loadable module */
#define MALLOC_TYPE_F_PEAK		0x00000002	/* mth_peak is tracked */
#define MALLOC_TYPE_F_GONE		0x00000004	/* unregistered while read */
#define MALLOC_TYPE_F_UNLOADED		0x00000008	/* module unloaded, memory charged */

/**
 * struct malloc_type_header - 128 bytes that open each type's records
 * @mth_name: the type's short description, NUL-terminated, truncated
 *	to MALLOC_MAX_NAME - 1 bytes, zero-filled.
 * @mth_id: registration id: unique for the life of the kernel, never
 *	reused, increasing in registration order.
 * @mth_zone: the type's zone (mti_zone): 0 for the shared kmalloc caches,
 *	1..numzones-1 for a dedicated set of kmalloc buckets.
 * @mth_flags: MALLOC_TYPE_F_* bits.
 * @mth_peak: with MALLOC_TYPE_F_PEAK, the highest bytes in use (accounted
 *	sizes) since its tracking started or was last reset
 *	(/proc/malloc_types_peak); zero without.
 * @_mth_reserved: zero.
 * @mth_owner: the name of the module that defines the type, or "vmlinux",
 *	NUL-terminated, zero-filled.
 */
struct malloc_type_header {
	char	mth_name[MALLOC_MAX_NAME];
	__u64	mth_id;
	__u32	mth_zone;
	__u32	mth_flags;
	__u64	mth_peak;
	__u64	_mth_reserved;
	char	mth_owner[MALLOC_MAX_OWNER];
};

/**
 * struct malloc_type_stats - one CPU's counters for one type (64 bytes)
 * @mts_memalloced: bytes allocated on this CPU (accounted sizes).
 * @mts_memfreed: bytes freed on this CPU.
 * @mts_numallocs: number of allocations on this CPU.
 * @mts_numfrees: number of frees on this CPU.
 * @mts_size: bitmask of the zindx values (kmalloc size classes) used.
 * @mts_numfailures: number of typed allocations on this CPU that returned
 *	no memory (the allocator failed, or the request was too large or its
 *	size overflowed); they change no other counter.
 * @_mts_reserved2: zero.
 * @_mts_reserved3: zero.
 *
 * An allocation may be freed on another CPU, so a single CPU's
 * mts_memfreed can exceed its mts_memalloced; only sums over all CPUs are
 * meaningful as balances.
 */
struct malloc_type_stats {
	__u64	mts_memalloced;
	__u64	mts_memfreed;
	__u64	mts_numallocs;
	__u64	mts_numfrees;
	__u64	mts_size;
	__u64	mts_numfailures;
	__u64	_mts_reserved2;
	__u64	_mts_reserved3;
};

#endif /* _UAPI_LINUX_MALLOC_TYPE_H */
