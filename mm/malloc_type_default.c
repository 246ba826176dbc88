// SPDX-License-Identifier: GPL-2.0
/*
 * Malloc types: the default types of kmalloc.
 *
 * A kmalloc() block that no explicit type is given for is charged to a
 * default type of the code that allocates it: for built-in code one type
 * per KBUILD_MODNAME ("pipe", "ext4", "slub", ...), owned by vmlinux; for a
 * module one type named after the module. The types are found through
 * allocation profiling's tags (<linux/alloc_tag.h>): every kmalloc() call
 * site has one, which alloc_hooks() makes current while the allocation
 * runs (also with profiling off, while default types are on), and each tag
 * carries the KBUILD_MODNAME of its code. At boot this file gives every tag
 * of vmlinux the type of its name, and a module's tags the module's type
 * while the module is coming (mm/malloc_type.c's notifier); the slab allocator's
 * kmalloc paths then record the tag's type with the block and charge it
 * (mm/slub.c), and every free of the block charges it back
 * (mm/malloc_type_slab.c).
 *
 * An explicit type and a default type of the same name and owner are one
 * type: a default type whose name a type defined with MALLOC_DEFINE() or
 * malloc_define!() in vmlinux (for built-in code) or in the module has is
 * that type. A call site whose caller charges the block to a type itself
 * (the Rust allocators, the C API's zones) uses alloc_hooks_typed(): its
 * tag names no type.
 *
 * The types are registered in mm_core_init(), right after the slab, per-CPU
 * and vmalloc allocators are up (malloc_type_init()). Blocks allocated before
 * carry no record and are never charged, except the sheaves and barns of the
 * kmalloc caches, which the slab allocator keeps for good: they are charged
 * to "slub" then.
 */

#define pr_fmt(fmt) "malloc_types: " fmt

#include <linux/alloc_tag.h>
#include <linux/hashtable.h>
#include <linux/jhash.h>
#include <linux/malloc_type.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/slab.h>
#include <linux/string.h>

#include "malloc_type_internal.h"
#include "slab.h"

DEFINE_STATIC_KEY_FALSE(malloc_type_default_key);
EXPORT_SYMBOL_GPL(malloc_type_default_key);

/**
 * struct malloc_type_default - a default type the registry allocated
 * @mtd_type: the type.
 * @mtd_node: a module's type: link in malloc_type_default_modules while the
 *	module is loaded.
 * @mtd_mod: the module, while it is loaded; NULL for vmlinux.
 * @mtd_names: the name, @mtd_type's ks_shortdesc, and after it the owner's
 *	name, its mti_owner: "vmlinux", or the module's, which outlives the
 *	module with the type. Sized to them: there is one for each
 *	KBUILD_MODNAME of vmlinux.
 */
struct malloc_type_default {
	struct malloc_type	mtd_type;
	struct hlist_node	mtd_node;
	struct module		*mtd_mod;
	char			mtd_names[];
};

/* The default types of the loaded modules, under malloc_type_mutex. */
static HLIST_HEAD(malloc_type_default_modules);

static struct malloc_type_default *to_default(struct malloc_type *mtp)
{
	return container_of(mtp, struct malloc_type_default, mtd_type);
}

/*
 * Allocates and registers a default type named @name (cut to
 * MALLOC_TYPE_NAME_MAX bytes) for @owner. Under malloc_type_mutex.
 */
static struct malloc_type_default *
malloc_type_default_create(const char *name, const char *owner, bool module)
{
	size_t name_len = strnlen(name, MALLOC_TYPE_NAME_MAX) + 1;
	size_t owner_len = strnlen(owner, MODULE_NAME_LEN - 1) + 1;
	struct malloc_type_default *mtd;
	char *mtd_owner;

	lockdep_assert_held(&malloc_type_mutex);

	mtd = kzalloc(struct_size(mtd, mtd_names, name_len + owner_len),
		      GFP_KERNEL);
	if (!mtd)
		return NULL;
	mtd_owner = mtd->mtd_names + name_len;
	strscpy(mtd->mtd_names, name, name_len);
	strscpy(mtd_owner, owner, owner_len);
	mtd->mtd_type.ks_shortdesc = mtd->mtd_names;
	mtd->mtd_type.ks_longdesc = "default type";
	if (malloc_type_register_default(&mtd->mtd_type, mtd_owner, module)) {
		kfree(mtd);
		return NULL;
	}
	return mtd;
}

/**
 * malloc_type_default_free() - free a default type the registry allocated
 * @mtp: the type, unregistered and destroyed.
 */
void malloc_type_default_free(struct malloc_type *mtp)
{
	kfree(to_default(mtp));
}

/*
 * Whether @tag is of code whose KBUILD_MODNAME is @name. A module's own
 * tags are those named after the module: its section may also hold the tags
 * of C helpers that LTO inlined into its Rust code
 * (CONFIG_RUST_INLINE_HELPERS), named after rust/helpers, whose callers
 * charge what they allocate themselves.
 */
static bool malloc_type_tag_named(const struct alloc_tag *tag,
				  const char *name)
{
	return tag->malloc_type_name && !strcmp(tag->malloc_type_name, name);
}

#ifdef CONFIG_MODULES
/* The registered type of module @mod named @name, or NULL. Under the mutex. */
static struct malloc_type *malloc_type_module_find(struct module *mod,
						   const char *name)
{
	unsigned int i;

	lockdep_assert_held(&malloc_type_mutex);

	for (i = 0; i < mod->num_malloc_types; i++) {
		struct malloc_type *mtp = mod->malloc_types_ptrs[i];

		if (READ_ONCE(mtp->ks_mti.mti_stats) &&
		    !strncmp(mtp->ks_shortdesc, name, MALLOC_TYPE_NAME_MAX))
			return mtp;
	}
	return NULL;
}
#endif

/*
 * vmlinux's types by name, while the boot walk runs: its explicit types,
 * then the default types the walk creates.
 */
struct malloc_type_name_entry {
	struct hlist_node	node;
	struct malloc_type	*mtp;
};

static struct hlist_head * __init
malloc_type_name_head(struct hlist_head *names, unsigned int bits,
		      const char *name)
{
	u32 hash = jhash(name, strnlen(name, MALLOC_TYPE_NAME_MAX), 0);

	return &names[hash_min(hash, bits)];
}

static int __init malloc_type_name_add(struct hlist_head *names,
				       unsigned int bits,
				       struct malloc_type *mtp)
{
	struct malloc_type_name_entry *e = kmalloc(sizeof(*e), GFP_KERNEL);

	if (!e)
		return -ENOMEM;
	e->mtp = mtp;
	hlist_add_head(&e->node,
		       malloc_type_name_head(names, bits, mtp->ks_shortdesc));
	return 0;
}

/* The type of vmlinux named @name, created if there is none. */
static struct malloc_type * __init
malloc_type_default_lookup(struct hlist_head *names, unsigned int bits,
			   const char *name)
{
	struct malloc_type_name_entry *e;
	struct malloc_type_default *mtd;

	hlist_for_each_entry(e, malloc_type_name_head(names, bits, name), node)
		if (!strncmp(e->mtp->ks_shortdesc, name, MALLOC_TYPE_NAME_MAX))
			return e->mtp;

	mtd = malloc_type_default_create(name, "vmlinux", false);
	if (!mtd)
		return NULL;
	if (malloc_type_name_add(names, bits, &mtd->mtd_type))
		return NULL;
	return &mtd->mtd_type;
}

extern struct alloc_tag __start_alloc_tags[];
extern struct alloc_tag __stop_alloc_tags[];

/*
 * Charges a sheaf or a barn of the slab allocator to @arg, the type of
 * mm/slub.c, as the kmalloc hook charges those allocated since the default
 * types exist; one allocated since (it has a record) is left as it is.
 */
static void __init malloc_type_charge_early(void *block, void *arg)
{
	struct slab *slab = virt_to_slab(block);
	struct malloc_type *old;

	if (!slab || !(slab->slab_cache->flags & SLAB_KMALLOC))
		return;
	old = malloc_type_obj_take(block, NULL);
	if (old) {
		malloc_type_obj_set(block, old, GFP_NOWAIT);
		return;
	}
	malloc_type_kmalloc_charge(slab->slab_cache, block, arg, GFP_NOWAIT,
				   false);
}

/**
 * malloc_type_default_init() - give vmlinux's allocation tags their types
 *
 * Registers one default type per KBUILD_MODNAME that vmlinux's tags name
 * (an explicit type of vmlinux with the name stands for it) and sets each
 * tag's type, unless malloc_types.default_types=0; this file's tags first,
 * with the charging on, so that the types it allocates are charged. Then
 * charges the sheaves and barns the slab allocator allocated before (those
 * of the kmalloc caches, from kmem_cache_init() on) to the type of
 * mm/slub.c, "slub", as the blocks it allocates from then on are.
 *
 * Context: malloc_type_init(), after vmlinux's explicit types are
 * registered.
 */
void __init malloc_type_default_init(void)
{
	const unsigned int bits = 10;
	struct malloc_type_name_entry *e;
	struct hlist_node *tmp;
	struct hlist_head *names;
	struct malloc_type *mtp = NULL, *slub;
	const char *last = NULL;
	struct alloc_tag *tag;
	unsigned int i, failed = 0, before = malloc_type_count();

	if (static_branch_unlikely(&malloc_type_default_types.off))
		return;
	names = kcalloc(1U << bits, sizeof(*names), GFP_KERNEL);
	if (!names) {
		pr_warn("no memory for the default types\n");
		return;
	}

	/* Charging on: a tag charges its blocks once it has its type. */
	static_branch_enable(&malloc_type_default_key);
	mutex_lock(&malloc_type_mutex);
	/* Only vmlinux's types are registered yet. */
	list_for_each_entry(mtp, &malloc_type_list, ks_mti.mti_list)
		if (malloc_type_name_add(names, bits, mtp))
			break;
	/*
	 * This file's tags first, so that the default types allocated below
	 * are charged to this file's type.
	 */
	mtp = malloc_type_default_lookup(names, bits, KBUILD_MODNAME);
	for (tag = __start_alloc_tags; tag < __stop_alloc_tags; tag++)
		if (malloc_type_tag_named(tag, KBUILD_MODNAME))
			WRITE_ONCE(tag->malloc_type, mtp);
	mtp = NULL;
	for (tag = __start_alloc_tags; tag < __stop_alloc_tags; tag++) {
		const char *name = tag->malloc_type_name;

		if (!name || !*name)
			continue;
		/* The tags of one file are next to each other. */
		if (name != last) {
			mtp = malloc_type_default_lookup(names, bits, name);
			last = name;
			if (!mtp)
				failed++;
		}
		WRITE_ONCE(tag->malloc_type, mtp);
	}
	slub = malloc_type_default_lookup(names, bits, "slub");
	mutex_unlock(&malloc_type_mutex);
	if (slub)
		kmem_cache_walk_sheaf_blocks(malloc_type_charge_early, slub);

	for (i = 0; i < 1U << bits; i++)
		hlist_for_each_entry_safe(e, tmp, &names[i], node)
			kfree(e);
	kfree(names);

	if (failed)
		pr_warn("%u default types could not be registered\n", failed);
	pr_info("%u default types for %zu kmalloc call sites of vmlinux\n",
		malloc_type_count() - before,
		(size_t)(__stop_alloc_tags - __start_alloc_tags));
}

#ifdef CONFIG_MODULES
/**
 * malloc_type_default_module_coming() - give a module's allocation tags a type
 * @mod: the module, coming, its own types registered.
 *
 * The module's tags are its section "alloc_tags", which the symbols
 * __start_alloc_tags and __stop_alloc_tags delimit (lib/codetag.c finds them
 * so too). The module's default type is named after it: its explicit type of
 * that name if it defines one, else a type the registry allocates, which
 * stays while blocks charged to it live, as the module's own types do.
 * Without memory for it, the module's kmalloc blocks are not charged.
 *
 * Context: the module notifier, before the module's init function runs.
 */
void malloc_type_default_module_coming(struct module *mod)
{
	struct malloc_type_default *mtd;
	struct alloc_tag *start, *stop, *tag;
	struct malloc_type *mtp;

	if (static_branch_unlikely(&malloc_type_default_types.off))
		return;
	preempt_disable();
	start = (void *)find_kallsyms_symbol_value(mod, "__start_alloc_tags");
	stop = (void *)find_kallsyms_symbol_value(mod, "__stop_alloc_tags");
	preempt_enable();
	if (!start || !stop)
		return;
	/* Only the tags of the module's code that names no type need one. */
	for (tag = start; tag < stop; tag++)
		if (malloc_type_tag_named(tag, mod->name))
			break;
	if (tag == stop)
		return;

	mutex_lock(&malloc_type_mutex);
	mtp = malloc_type_module_find(mod, mod->name);
	if (mtp) {
		u32 flags = READ_ONCE(mtp->ks_mti.mti_flags);

		/* Every block charged to a default type carries a record. */
		if (flags & MALLOC_TYPE_F_RECORDS)
			WRITE_ONCE(mtp->ks_mti.mti_flags,
				   flags | MALLOC_TYPE_F_RECORDED);
		else
			mtp = NULL;
	} else {
		mtd = malloc_type_default_create(mod->name, mod->name, true);
		if (mtd) {
			mtd->mtd_mod = mod;
			hlist_add_head(&mtd->mtd_node,
				       &malloc_type_default_modules);
			mtp = &mtd->mtd_type;
		}
	}
	mutex_unlock(&malloc_type_mutex);
	if (!mtp)
		pr_warn("module %s: no default type: its kmalloc blocks are not charged\n",
			mod->name);

	for (tag = start; tag < stop; tag++)
		WRITE_ONCE(tag->malloc_type,
			   malloc_type_tag_named(tag, mod->name) ? mtp : NULL);
}

/**
 * malloc_type_default_module_take() - the default type the registry made for a module
 * @mod: the module, being freed.
 *
 * Return: the type, no longer linked to @mod, for the caller to unregister;
 * NULL if the module has none (its explicit type stands for it, or it made
 * no allocation tag).
 */
struct malloc_type *malloc_type_default_module_take(struct module *mod)
{
	struct malloc_type_default *mtd;

	lockdep_assert_held(&malloc_type_mutex);

	hlist_for_each_entry(mtd, &malloc_type_default_modules, mtd_node) {
		if (mtd->mtd_mod == mod) {
			hlist_del_init(&mtd->mtd_node);
			mtd->mtd_mod = NULL;
			return &mtd->mtd_type;
		}
	}
	return NULL;
}
#endif /* CONFIG_MODULES */
