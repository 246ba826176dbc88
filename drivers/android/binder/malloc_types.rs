// SPDX-License-Identifier: GPL-2.0

//! The malloc types Rust Binder charges its allocations to.
//!
//! With `CONFIG_MALLOC_TYPES`, each kind of object the driver allocates through an allocator
//! parameter is charged to its own malloc type (FreeBSD's `MALLOC_DEFINE`), listed by
//! `/proc/malloc_types`, `memstat -m` and traced by the `dtmalloc` events:
//!
//! | allocator        | malloc type      | what                                                  |
//! |------------------|------------------|-------------------------------------------------------|
//! | [`ProcAlloc`]    | `binder proc`    | one [`Process`] per process that opened a device      |
//! | [`ContextAlloc`] | `binder context` | one [`Context`] per binder device                     |
//! | [`RangeAlloc`]   | `binder range`   | a process's buffer-space bookkeeping (range arrays)   |
//! | [`PagesAlloc`]   | `binder pages`   | a process's array of the pages of its buffer space    |
//! | [`TxnAlloc`]     | `binder txn`     | per-transaction scatter-gather, fixup and fd arrays   |
//!
//! Objects that live in a [`kernel::list::List`] (threads, nodes, references, transactions
//! and the other work items) stay with the default type `rust kmalloc`: a [`ListArc`] holds an
//! `Arc<T>` with the default allocator, and the work lists hold several kinds of object behind
//! one `dyn DeliverToRead`.
//!
//! Without `CONFIG_MALLOC_TYPES` [`PagesAlloc`] is [`KVmalloc`] and the others [`Kmalloc`].
//!
//! [`Process`]: crate::process::Process
//! [`Context`]: crate::context::Context
//! [`ListArc`]: kernel::list::ListArc
//! [`Kmalloc`]: kernel::alloc::allocator::Kmalloc
//! [`KVmalloc`]: kernel::alloc::allocator::KVmalloc

#[cfg(CONFIG_MALLOC_TYPES)]
mod types {
    use kernel::malloc_type::{TypedAlloc, TypedKVAlloc};

    kernel::malloc_define!(
        pub(crate) M_BINDER_PROC,
        "binder proc",
        "Rust Binder: per-process state"
    );
    kernel::malloc_define!(
        pub(crate) M_BINDER_CONTEXT,
        "binder context",
        "Rust Binder: per-device context"
    );
    kernel::malloc_define!(
        pub(crate) M_BINDER_RANGE,
        "binder range",
        "Rust Binder: buffer space bookkeeping"
    );
    kernel::malloc_define!(
        pub(crate) M_BINDER_PAGES,
        "binder pages",
        "Rust Binder: buffer space page arrays"
    );
    kernel::malloc_define!(
        pub(crate) M_BINDER_TXN,
        "binder txn",
        "Rust Binder: per-transaction arrays"
    );

    /// Allocator of [`Process`](crate::process::Process) objects.
    pub(crate) type ProcAlloc = TypedAlloc<M_BINDER_PROC>;
    /// Allocator of [`Context`](crate::context::Context) objects.
    pub(crate) type ContextAlloc = TypedAlloc<M_BINDER_CONTEXT>;
    /// Allocator of the range allocator's arrays.
    pub(crate) type RangeAlloc = TypedAlloc<M_BINDER_RANGE>;
    /// Allocator of the page arrays (kmalloc, or vmalloc for large buffer spaces).
    pub(crate) type PagesAlloc = TypedKVAlloc<M_BINDER_PAGES>;
    /// Allocator of the arrays a transaction needs while it is built and delivered.
    pub(crate) type TxnAlloc = TypedAlloc<M_BINDER_TXN>;
}

#[cfg(not(CONFIG_MALLOC_TYPES))]
mod types {
    use kernel::alloc::allocator::{KVmalloc, Kmalloc};

    /// Allocator of [`Process`](crate::process::Process) objects.
    pub(crate) type ProcAlloc = Kmalloc;
    /// Allocator of [`Context`](crate::context::Context) objects.
    pub(crate) type ContextAlloc = Kmalloc;
    /// Allocator of the range allocator's arrays.
    pub(crate) type RangeAlloc = Kmalloc;
    /// Allocator of the page arrays (kmalloc, or vmalloc for large buffer spaces).
    pub(crate) type PagesAlloc = KVmalloc;
    /// Allocator of the arrays a transaction needs while it is built and delivered.
    pub(crate) type TxnAlloc = Kmalloc;
}

pub(crate) use types::*;
