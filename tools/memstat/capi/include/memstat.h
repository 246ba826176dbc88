/* SPDX-License-Identifier: GPL-2.0 */
/*
 * <memstat.h>: libmemstat(3), kernel memory allocator statistics, for the
 * malloc types and the slab caches of Linux.
 *
 * The declarations of FreeBSD's lib/libmemstat/memstat.h, with the same
 * names, argument and return types, constants and error codes, so that
 * programs written against it build here. ALLOCATOR_MALLOC lists the
 * kernel's malloc types (/proc/malloc_stats), ALLOCATOR_UMA its slab caches
 * (/sys/kernel/slab or /proc/slabinfo), the Linux counterpart of UMA zones.
 * Additions of this library are marked "Linux:" and are not in FreeBSD's.
 *
 * Differences from FreeBSD's library, on purpose:
 *  - An update removes the entries that the kernel no longer presents (an
 *    unloaded module's types, a destroyed cache), which FreeBSD's BUGS
 *    section says linger until the list is freed: a pointer to an entry,
 *    and a string an accessor returned for it, are valid until an update
 *    removes that entry or the list is freed. Entries that stay keep their
 *    address, their strings and their caller-owned fields.
 *  - Names are any bytes in the kernel; memstat_get_name() returns the
 *    name's text form: printable ASCII as it is, other bytes and the
 *    backslash as \NNN (octal). It can be longer than MEMTYPE_MAXNAME.
 *  - There is no MEMSTAT_MAXCPU: memstat_get_maxcpus() gives the number of
 *    per-CPU records of an entry.
 *  - Arguments are checked: a NULL pointer, an index or CPU out of range or
 *    non-zero flags get 0, NULL or -1 and MEMSTAT_ERROR_INVALID in the list,
 *    never a crash. A negative in-use count from racy per-CPU sums reads as
 *    0, and sums saturate rather than wrap.
 *  - memstat_kvm_*() take a handle of memstat_kvm_open() instead of a
 *    libkvm kvm_t; slab caches are not read from cores.
 *
 * The memstat_sysctl_*() functions read the running kernel's files. The
 * environment can point them elsewhere (ignored in set-user-ID programs):
 * MEMSTAT_MALLOC_STATS (the stream, default /proc/malloc_stats),
 * MEMSTAT_SYSCTL_DIR (default /proc/sys), and MEMSTAT_SLAB_DIR and
 * MEMSTAT_SLABINFO (default /sys/kernel/slab, then /proc/slabinfo; when
 * either is set, only what is set is read).
 *
 * A list and its entries are used by one thread at a time.
 */

#ifndef _MEMSTAT_H_
#define	_MEMSTAT_H_

#include <stddef.h>
#include <stdint.h>

#ifndef __BEGIN_DECLS
#ifdef __cplusplus
#define	__BEGIN_DECLS	extern "C" {
#define	__END_DECLS	}
#else
#define	__BEGIN_DECLS
#define	__END_DECLS
#endif
#endif

/*
 * Amount of caller data to maintain for each caller data slot.  An index
 * outside 0 .. MEMSTAT_MAXCALLER - 1 is refused with MEMSTAT_ERROR_INVALID.
 */
#define	MEMSTAT_MAXCALLER	16

/*
 * The allocator an entry's data comes from.
 */
#define	ALLOCATOR_UNKNOWN	0
#define	ALLOCATOR_MALLOC	1	/* malloc types */
#define	ALLOCATOR_UMA		2	/* slab caches */
#define	ALLOCATOR_ANY		255

/*
 * Library maximum type name, as FreeBSD's; a malloc type's name has at most
 * 31 bytes, but a slab cache's and any name's text form may be longer.
 */
#define	MEMTYPE_MAXNAME		32

/*
 * Library error conditions.  On failure, functions return -1 or NULL; the
 * error is stored in the list, read with memstat_mtl_geterror(), and errno
 * is set.
 */
#define	MEMSTAT_ERROR_UNDEFINED		0	/* Initialization value. */
#define	MEMSTAT_ERROR_NOMEMORY		1	/* Out of memory. */
#define	MEMSTAT_ERROR_VERSION		2	/* Unsupported version. */
#define	MEMSTAT_ERROR_PERMISSION	3	/* Permission denied. */
#define	MEMSTAT_ERROR_DATAERROR		5	/* Error in stat data. */
#define	MEMSTAT_ERROR_KVM		6	/* See memstat_mtl_geterrmsg(). */
#define	MEMSTAT_ERROR_KVM_NOSYMBOL	7	/* Symbol not available. */
#define	MEMSTAT_ERROR_KVM_SHORTREAD	8	/* Short read of a core. */
/* Linux: a source that is missing or cannot be read (no malloc types). */
#define	MEMSTAT_ERROR_IO		9
/* Linux: a NULL argument, an index or CPU out of range, unknown flags. */
#define	MEMSTAT_ERROR_INVALID		10

/*
 * Linux: a buffer for the errors of memstat_kvm_open(); a message that names
 * a very long path is cut to fit (always NUL-terminated).
 */
#define	MEMSTAT_KVM_ERRBUF_SIZE		256

/*
 * Opaque types: a memory type, a list of them, and (Linux) an open core.
 */
struct memory_type;
struct memory_type_list;
struct memstat_kvm;

__BEGIN_DECLS
/*
 * Functions that operate without memory type or memory type list context.
 */
const char	*memstat_strerror(int error);

/*
 * Functions for managing memory type and statistics data.
 */
struct memory_type_list	*memstat_mtl_alloc(void);
struct memory_type	*memstat_mtl_first(struct memory_type_list *list);
struct memory_type	*memstat_mtl_next(struct memory_type *mtp);
struct memory_type	*memstat_mtl_find(struct memory_type_list *list,
			    int allocator, const char *name);
void	memstat_mtl_free(struct memory_type_list *list);
int	memstat_mtl_geterror(struct memory_type_list *list);
/* Linux: the text of the last error: what failed and where. */
const char	*memstat_mtl_geterrmsg(struct memory_type_list *list);

/*
 * Functions to retrieve data from a live kernel (flags must be 0).
 */
int	memstat_sysctl_all(struct memory_type_list *list, int flags);
int	memstat_sysctl_malloc(struct memory_type_list *list, int flags);
int	memstat_sysctl_uma(struct memory_type_list *list, int flags);

/*
 * Linux: functions to retrieve data from saved files: a malloc type stream
 * (memstat --save, a copy of /proc/malloc_stats), a SLUB sysfs directory or
 * a slabinfo file.
 */
int	memstat_file_malloc(struct memory_type_list *list, const char *path);
int	memstat_file_uma(struct memory_type_list *list, const char *path);

/*
 * Functions to retrieve data from a kernel core (a vmcore or /proc/kcore):
 * kvm_handle is a handle of memstat_kvm_open().
 */
int	memstat_kvm_all(struct memory_type_list *list, void *kvm_handle);
int	memstat_kvm_malloc(struct memory_type_list *list, void *kvm_handle);
int	memstat_kvm_uma(struct memory_type_list *list, void *kvm_handle);
/*
 * Linux: open a core (corefile) with, optionally, its kernel image
 * (execfile, NULL for none); NULL on failure, with the reason in errbuf.
 */
struct memstat_kvm	*memstat_kvm_open(const char *execfile,
			    const char *corefile, char *errbuf,
			    size_t errbuflen);
void	memstat_kvm_close(struct memstat_kvm *kd);

/*
 * General malloc routines: the zones (kmalloc size classes) of the last
 * malloc query of the kernel or of a core.
 */
size_t	memstat_malloc_zone_get_count(void);
size_t	memstat_malloc_zone_get_size(size_t n);
int	memstat_malloc_zone_used(const struct memory_type *mtp, size_t n);

/*
 * Accessor methods for struct memory_type.
 */
const char	*memstat_get_name(const struct memory_type *mtp);
int		 memstat_get_allocator(const struct memory_type *mtp);
uint64_t	 memstat_get_countlimit(const struct memory_type *mtp);
uint64_t	 memstat_get_byteslimit(const struct memory_type *mtp);
uint64_t	 memstat_get_sizemask(const struct memory_type *mtp);
uint64_t	 memstat_get_size(const struct memory_type *mtp);
uint64_t	 memstat_get_rsize(const struct memory_type *mtp);
uint64_t	 memstat_get_memalloced(const struct memory_type *mtp);
uint64_t	 memstat_get_memfreed(const struct memory_type *mtp);
uint64_t	 memstat_get_numallocs(const struct memory_type *mtp);
uint64_t	 memstat_get_numfrees(const struct memory_type *mtp);
uint64_t	 memstat_get_bytes(const struct memory_type *mtp);
uint64_t	 memstat_get_count(const struct memory_type *mtp);
uint64_t	 memstat_get_free(const struct memory_type *mtp);
uint64_t	 memstat_get_failures(const struct memory_type *mtp);
uint64_t	 memstat_get_sleeps(const struct memory_type *mtp);
uint64_t	 memstat_get_xdomain(const struct memory_type *mtp);
void		*memstat_get_caller_pointer(const struct memory_type *mtp,
		    int index);
void		 memstat_set_caller_pointer(struct memory_type *mtp,
		    int index, void *value);
uint64_t	 memstat_get_caller_uint64(const struct memory_type *mtp,
		    int index);
void		 memstat_set_caller_uint64(struct memory_type *mtp, int index,
		    uint64_t value);
uint64_t	 memstat_get_zonefree(const struct memory_type *mtp);
uint64_t	 memstat_get_kegfree(const struct memory_type *mtp);
uint64_t	 memstat_get_percpu_memalloced(const struct memory_type *mtp,
		    int cpu);
uint64_t	 memstat_get_percpu_memfreed(const struct memory_type *mtp,
		    int cpu);
uint64_t	 memstat_get_percpu_numallocs(const struct memory_type *mtp,
		    int cpu);
uint64_t	 memstat_get_percpu_numfrees(const struct memory_type *mtp,
		    int cpu);
uint64_t	 memstat_get_percpu_sizemask(const struct memory_type *mtp,
		    int cpu);
void		*memstat_get_percpu_caller_pointer(
		    const struct memory_type *mtp, int cpu, int index);
void		 memstat_set_percpu_caller_pointer(struct memory_type *mtp,
		    int cpu, int index, void *value);
uint64_t	 memstat_get_percpu_caller_uint64(
		    const struct memory_type *mtp, int cpu, int index);
void		 memstat_set_percpu_caller_uint64(struct memory_type *mtp,
		    int cpu, int index, uint64_t value);
uint64_t	 memstat_get_percpu_free(const struct memory_type *mtp,
		    int cpu);

/*
 * Linux: accessors of what Linux malloc types have beyond FreeBSD's.
 */
/* The owner: "vmlinux" or the module's name ("" for a slab cache). */
const char	*memstat_get_owner(const struct memory_type *mtp);
/* The name the per-type probes use (set_dtmalloc_probes). */
const char	*memstat_get_probename(const struct memory_type *mtp);
/* The registration id (0 for a slab cache). */
uint64_t	 memstat_get_id(const struct memory_type *mtp);
/* The highest bytes in use, when the peak is tracked; else 0. */
uint64_t	 memstat_get_peak(const struct memory_type *mtp);
/* The number of per-CPU records: the bound of the cpu arguments. */
int		 memstat_get_maxcpus(const struct memory_type *mtp);
/* Allocations on the CPU that returned no memory. */
uint64_t	 memstat_get_percpu_failures(const struct memory_type *mtp,
		    int cpu);
__END_DECLS

#endif /* !_MEMSTAT_H_ */
