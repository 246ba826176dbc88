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
//! | [`RangeAlloc`]   | `binder range`   | a process's buffer-space bookkeeping (arrays, trees)  |
//! | [`PagesAlloc`]   | `binder pages`   | a process's array of the pages of its buffer space    |
//! | [`BinderPage`]   | `binder pages`   | the pages of a process's buffer space, once used      |
//! | [`TxnAlloc`]     | `binder txn`     | per-transaction scatter-gather, fixup and fd arrays   |
//! | [`ThreadAlloc`]  | `binder thread`  | one [`Thread`] per thread that talks to the driver    |
//! | [`RefAlloc`]     | `binder ref`     | one [`NodeRefInfo`] per handle a process holds        |
//! | [`WorkAlloc`]    | `binder work`    | nodes, transactions, notifications, return codes      |
//!
//! The nodes of a process's [`RBTree`]s are charged with what they index: the threads tree to
//! `binder thread`, the nodes tree to `binder work`, the handle, node-to-handle and freeze
//! listener trees to `binder ref`, the range allocator's trees to `binder range`. So are the
//! arrays that hold references to these objects: the per-device list of processes (kvmalloc,
//! [`ProcKVAlloc`]), the list of devices ([`ContextKVAlloc`]), a node's and a process's freeze
//! listener arrays ([`RefKVAlloc`]), and the arrays the driver collects threads, nodes or
//! processes into while it prints its state or freezes a process. The closers of the fds a
//! transaction's buffer closes when it is freed are charged to `binder txn`.
//!
//! `binder work` is what C Binder calls `struct binder_work`: everything that is queued on a
//! process's or a thread's todo list, wrapped in a [`DTRWrap`] ([`Node`], [`Transaction`], death
//! and freeze notifications, return codes). The todo lists hold these kinds behind one
//! `dyn DeliverToRead`, as `ListArc<DTRWrap<dyn DeliverToRead>, 0, WorkAlloc>`: an allocator is a
//! type parameter of the [`ListArc`], so every kind on one list has the same one, and the kinds
//! share one malloc type.
//!
//! A [`BinderPage`] is charged from its allocation, when the buffer space first uses it, until it
//! is freed: by the shrinker once unused, or with the process's buffer space.
//!
//! Without `CONFIG_MALLOC_TYPES` [`PagesAlloc`] and the `KVAlloc`s are [`KVmalloc`] and the others
//! [`Kmalloc`], and [`BinderPage`] is [`Page`].
//!
//! [`Process`]: crate::process::Process
//! [`Context`]: crate::context::Context
//! [`Thread`]: crate::thread::Thread
//! [`NodeRefInfo`]: crate::process::NodeRefInfo
//! [`DTRWrap`]: crate::DTRWrap
//! [`Node`]: crate::node::Node
//! [`Transaction`]: crate::transaction::Transaction
//! [`ListArc`]: kernel::list::ListArc
//! [`RBTree`]: kernel::rbtree::RBTree
//! [`Kmalloc`]: kernel::alloc::allocator::Kmalloc
//! [`KVmalloc`]: kernel::alloc::allocator::KVmalloc
//! [`Page`]: kernel::page::Page

#[cfg(CONFIG_MALLOC_TYPES)]
mod types {
    use kernel::malloc_type::{TypedAlloc, TypedKVAlloc, TypedPage};

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
        "Rust Binder: buffer space pages and their arrays"
    );
    kernel::malloc_define!(
        pub(crate) M_BINDER_TXN,
        "binder txn",
        "Rust Binder: per-transaction arrays"
    );
    kernel::malloc_define!(
        pub(crate) M_BINDER_THREAD,
        "binder thread",
        "Rust Binder: per-thread state"
    );
    kernel::malloc_define!(
        pub(crate) M_BINDER_REF,
        "binder ref",
        "Rust Binder: a process's references to nodes"
    );
    kernel::malloc_define!(
        pub(crate) M_BINDER_WORK,
        "binder work",
        "Rust Binder: nodes, transactions and other todo-list items"
    );

    /// Allocator of [`Process`](crate::process::Process) objects.
    pub(crate) type ProcAlloc = TypedAlloc<M_BINDER_PROC>;
    /// Allocator of [`Context`](crate::context::Context) objects.
    pub(crate) type ContextAlloc = TypedAlloc<M_BINDER_CONTEXT>;
    /// Allocator of the range allocator's arrays.
    pub(crate) type RangeAlloc = TypedAlloc<M_BINDER_RANGE>;
    /// Allocator of the page arrays (kmalloc, or vmalloc for large buffer spaces).
    pub(crate) type PagesAlloc = TypedKVAlloc<M_BINDER_PAGES>;
    /// A page of a process's buffer space, allocated when first used, freed by the shrinker.
    pub(crate) type BinderPage = TypedPage<M_BINDER_PAGES>;
    /// Allocator of the arrays a transaction needs while it is built and delivered.
    pub(crate) type TxnAlloc = TypedAlloc<M_BINDER_TXN>;
    /// Allocator of [`Thread`](crate::thread::Thread) objects.
    pub(crate) type ThreadAlloc = TypedAlloc<M_BINDER_THREAD>;
    /// Allocator of [`NodeRefInfo`](crate::process::NodeRefInfo) objects.
    pub(crate) type RefAlloc = TypedAlloc<M_BINDER_REF>;
    /// Allocator of the [`DTRWrap`](crate::DTRWrap) objects of the todo lists.
    pub(crate) type WorkAlloc = TypedAlloc<M_BINDER_WORK>;
    /// Allocator of arrays of processes (kmalloc, or vmalloc when large).
    pub(crate) type ProcKVAlloc = TypedKVAlloc<M_BINDER_PROC>;
    /// Allocator of the array of devices (kmalloc, or vmalloc when large).
    pub(crate) type ContextKVAlloc = TypedKVAlloc<M_BINDER_CONTEXT>;
    /// Allocator of freeze listener arrays (kmalloc, or vmalloc when large).
    pub(crate) type RefKVAlloc = TypedKVAlloc<M_BINDER_REF>;
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
    /// A page of a process's buffer space, allocated when first used, freed by the shrinker.
    pub(crate) type BinderPage = kernel::page::Page;
    /// Allocator of the arrays a transaction needs while it is built and delivered.
    pub(crate) type TxnAlloc = Kmalloc;
    /// Allocator of [`Thread`](crate::thread::Thread) objects.
    pub(crate) type ThreadAlloc = Kmalloc;
    /// Allocator of [`NodeRefInfo`](crate::process::NodeRefInfo) objects.
    pub(crate) type RefAlloc = Kmalloc;
    /// Allocator of the [`DTRWrap`](crate::DTRWrap) objects of the todo lists.
    pub(crate) type WorkAlloc = Kmalloc;
    /// Allocator of arrays of processes (kmalloc, or vmalloc when large).
    pub(crate) type ProcKVAlloc = KVmalloc;
    /// Allocator of the array of devices (kmalloc, or vmalloc when large).
    pub(crate) type ContextKVAlloc = KVmalloc;
    /// Allocator of freeze listener arrays (kmalloc, or vmalloc when large).
    pub(crate) type RefKVAlloc = KVmalloc;
}

pub(crate) use types::*;
