// SPDX-License-Identifier: GPL-2.0

//! Typed pages: pages of the page allocator charged to a malloc type while they live.
//!
//! FreeBSD charges `contigmalloc()` to a malloc type; [`TypedPage`] does the same for a [`Page`]
//! of the page allocator, so that the buffers a driver keeps in pages show in its type's row. A
//! page is one allocation of [`PAGE_SIZE`] bytes with no size class (zindx -1), as
//! [`MallocType::allocated`] charges memory of other allocators, and the `dtmalloc` events fire.
//!
//! C header: [`include/linux/malloc_type.h`](srctree/include/linux/malloc_type.h)
//! (`alloc_pages_mt()` and friends).

use super::{
    alloc::MallocTypeTag,
    MallocType, //
};
use crate::{
    alloc::{
        AllocError,
        Flags, //
    },
    page::{
        Page,
        PAGE_SIZE, //
    },
};
use core::{
    borrow::Borrow,
    marker::PhantomData,
    ops::Deref, //
};

/// A [`Page`] charged to the malloc type named by `M` until it is dropped.
///
/// It dereferences to the [`Page`], and borrows as one ([`Borrow<Page>`]), so that code generic
/// over "a page" can hold either.
///
/// # Invariants
///
/// `M::get()` was charged [`PAGE_SIZE`] bytes for `page`, as one allocation, and nothing took
/// them off.
///
/// # Examples
///
/// ```
/// use kernel::malloc_type::TypedPage;
/// use kernel::page::PAGE_SIZE;
///
/// kernel::malloc_define!(M_PAGE_DOC, "page doc", "TypedPage example");
///
/// let page = TypedPage::<M_PAGE_DOC>::alloc_page(GFP_KERNEL | __GFP_ZERO)?;
/// let s = M_PAGE_DOC.stats();
/// assert_eq!((s.numallocs, s.memalloced, s.size), (1, PAGE_SIZE as u64, 0));
/// // A `TypedPage` is a `Page`.
/// assert!(page.nid() >= 0);
/// drop(page);
/// let s = M_PAGE_DOC.stats();
/// assert_eq!((s.numfrees, s.mem_use()), (1, 0));
/// # Ok::<(), Error>(())
/// ```
pub struct TypedPage<M: MallocTypeTag> {
    page: Page,
    _type: PhantomData<M>,
}

impl<M: MallocTypeTag> TypedPage<M> {
    /// Allocates a page with [`Page::alloc_page`] and charges it to the type.
    ///
    /// A failure (of the page allocator, or one injected with `fail_malloc_type`) counts one
    /// failure of the type and changes no other counter.
    ///
    /// # Context
    ///
    /// Any context that `flags` allow, as [`Page::alloc_page`].
    pub fn alloc_page(flags: Flags) -> Result<Self, AllocError> {
        let t: &MallocType = M::get();
        if t.fail_injected(PAGE_SIZE, flags) {
            return Err(t.account_failure());
        }
        let page = Page::alloc_page(flags).map_err(|_| t.account_failure())?;
        t.allocated(PAGE_SIZE);
        // INVARIANT: The type was charged `PAGE_SIZE` bytes for `page` just above.
        Ok(Self {
            page,
            _type: PhantomData,
        })
    }
}

impl<M: MallocTypeTag> Deref for TypedPage<M> {
    type Target = Page;

    fn deref(&self) -> &Page {
        &self.page
    }
}

impl<M: MallocTypeTag> Borrow<Page> for TypedPage<M> {
    fn borrow(&self) -> &Page {
        &self.page
    }
}

impl<M: MallocTypeTag> Drop for TypedPage<M> {
    fn drop(&mut self) {
        // By the type invariants, the type holds `PAGE_SIZE` bytes for the page, which `page`'s
        // own drop frees right after.
        M::get().freed(PAGE_SIZE);
    }
}
