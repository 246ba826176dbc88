// SPDX-License-Identifier: GPL-2.0
/*
 * Malloc types: the memory of a module's types.
 *
 * A module's types are in its section "malloc_types", a codetag section
 * (<asm-generic/codetag.lds.h>, lib/codetag.c): the module loader places it
 * in memory this file allocates, apart from the module's own, as allocation
 * profiling does with a module's allocation tags (mm/alloc_tag.c). A block
 * of a module's type that carries a record (kmalloc_mt()) may be freed with
 * kfree() by other code after the module has unloaded, and that free
 * charges the type back: the registry keeps such a type registered
 * (mm/malloc_type.c), and this memory stays allocated until no type in it
 * is registered.
 *
 * The memory is module data memory (EXECMEM_MODULE_DATA), within reach of
 * the module's relocations. The areas are listed under the registry mutex.
 */

#define pr_fmt(fmt) "malloc_types: " fmt

#include <linux/codetag.h>
#include <linux/execmem.h>
#include <linux/malloc_type.h>
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/string.h>

#include "malloc_type_internal.h"

/**
 * struct malloc_type_area - the section "malloc_types" of one module
 * @list: link in malloc_type_areas.
 * @mod: the module, until the module loader releases the section (it
 *	unloaded, or its load failed); NULL after.
 * @base: the allocation (execmem_alloc_rw()).
 * @start: the section: the module's types, from @start up to @end.
 * @end: the end of the section.
 * @nr_registered: the number of the area's types in the registry.
 * @owner: the module's name, for the types kept after it unloaded.
 */
struct malloc_type_area {
	struct list_head	list;
	struct module		*mod;
	void			*base;
	void			*start;
	void			*end;
	unsigned int		nr_registered;
	char			owner[MODULE_NAME_LEN];
};

/* Under malloc_type_mutex. */
static LIST_HEAD(malloc_type_areas);

static struct malloc_type_area *malloc_type_area_of(const struct malloc_type *mtp)
{
	struct malloc_type_area *area;

	lockdep_assert_held(&malloc_type_mutex);

	list_for_each_entry(area, &malloc_type_areas, list) {
		if ((void *)mtp >= area->start && (void *)mtp < area->end)
			return area;
	}
	return NULL;
}

/* Frees @area once the loader has released it and no type in it is registered. */
static void malloc_type_area_put(struct malloc_type_area *area)
{
	lockdep_assert_held(&malloc_type_mutex);

	if (area->mod || area->nr_registered)
		return;
	list_del(&area->list);
	execmem_free(area->base);
	kfree(area);
}

/**
 * malloc_type_area_register() - make a module's type able to outlive it
 * @mtp: the type, being registered, before anything reads its name.
 *
 * A type in its module's area gets copies of its name and description,
 * which are in the module's memory, and is counted in the area.
 *
 * Context: registry mutex held; may sleep.
 * Return: the module's name, valid for as long as @mtp is registered; or
 * NULL if @mtp is not in an area (its module was not linked with the
 * kernel's module linker script) or there was no memory for the copies:
 * @mtp then goes with its module.
 */
const char *malloc_type_area_register(struct malloc_type *mtp)
{
	struct malloc_type_area *area = malloc_type_area_of(mtp);
	const char *name, *desc;

	if (!area)
		return NULL;
	name = kstrdup(mtp->ks_shortdesc, GFP_KERNEL);
	desc = kstrdup(mtp->ks_longdesc, GFP_KERNEL);
	if (!name || !desc) {
		kfree(name);
		kfree(desc);
		return NULL;
	}
	mtp->ks_shortdesc = name;
	mtp->ks_longdesc = desc;
	area->nr_registered++;
	return area->owner;
}

/**
 * malloc_type_area_unregister() - a module's type has been unregistered
 * @mtp: the type, for which malloc_type_area_register() returned its
 *	module's name, now unregistered and destroyed (no reader or free can
 *	reach it any more), or whose registration failed.
 *
 * Frees the copies of its name and description, and the area when it was
 * the last registered type of an area the loader has released.
 *
 * Context: registry mutex held.
 */
void malloc_type_area_unregister(struct malloc_type *mtp)
{
	struct malloc_type_area *area = malloc_type_area_of(mtp);

	if (WARN_ON_ONCE(!area || !area->nr_registered))
		return;
	kfree(mtp->ks_shortdesc);
	kfree(mtp->ks_longdesc);
	area->nr_registered--;
	malloc_type_area_put(area);
}

static bool malloc_type_needs_section_mem(struct module *mod,
					  unsigned long size)
{
	return size >= sizeof(struct malloc_type);
}

static void *malloc_type_alloc_section_mem(struct module *mod,
					   unsigned long size,
					   unsigned int prepend,
					   unsigned long align)
{
	struct malloc_type_area *area;
	unsigned long offset;

	/* A power of two; 0 and 1 mean none. */
	offset = ALIGN(prepend, max(align, 1UL));
	area = kzalloc_obj(*area);
	if (!area)
		return ERR_PTR(-ENOMEM);
	area->base = execmem_alloc_rw(EXECMEM_MODULE_DATA, offset + size);
	if (!area->base) {
		kfree(area);
		return ERR_PTR(-ENOMEM);
	}
	memset(area->base, 0, offset + size);
	area->mod = mod;
	area->start = area->base + offset;
	area->end = area->start + size;
	strscpy(area->owner, mod->name);

	mutex_lock(&malloc_type_mutex);
	list_add(&area->list, &malloc_type_areas);
	mutex_unlock(&malloc_type_mutex);
	return area->start;
}

/*
 * The loader is done with the area of @mod: the module unloaded (@used), or
 * its load failed. The types registered in it go later, from
 * malloc_type_module_unload(), or once freed if they are kept.
 */
static void malloc_type_free_section_mem(struct module *mod, bool used)
{
	struct malloc_type_area *area;

	mutex_lock(&malloc_type_mutex);
	list_for_each_entry(area, &malloc_type_areas, list) {
		if (area->mod == mod) {
			area->mod = NULL;
			malloc_type_area_put(area);
			break;
		}
	}
	mutex_unlock(&malloc_type_mutex);
}

/* The loader moved the module's struct module from @mod to @new_mod. */
static void malloc_type_module_replaced(struct module *mod,
					struct module *new_mod)
{
	struct malloc_type_area *area;

	mutex_lock(&malloc_type_mutex);
	list_for_each_entry(area, &malloc_type_areas, list) {
		if (area->mod == mod)
			area->mod = new_mod;
	}
	mutex_unlock(&malloc_type_mutex);
}

/**
 * malloc_type_areas_init() - have the module loader place types in areas
 *
 * Registers the codetag type of the section "malloc_types". Without it
 * (the registration failed), a module's types are in the module's own
 * memory and are never kept after the unload.
 *
 * Context: boot, before the first module loads.
 */
void __init malloc_type_areas_init(void)
{
	static const struct codetag_type_desc desc = {
		.section		= MALLOC_TYPE_SECTION_NAME,
		.tag_size		= sizeof(struct malloc_type),
		.needs_section_mem	= malloc_type_needs_section_mem,
		.alloc_section_mem	= malloc_type_alloc_section_mem,
		.free_section_mem	= malloc_type_free_section_mem,
		.module_replaced	= malloc_type_module_replaced,
	};
	struct codetag_type *cttype = codetag_register_type(&desc);

	if (IS_ERR(cttype))
		pr_warn("cannot keep the types of modules after unload: %ld\n",
			PTR_ERR(cttype));
}
