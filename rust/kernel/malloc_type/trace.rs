// SPDX-License-Identifier: GPL-2.0

//! The `dtmalloc` tracepoints, FreeBSD's dtmalloc(4) probes.
//!
//! `dtmalloc:malloc` fires after every successful typed allocation and `dtmalloc:free` after
//! every typed free, once the counters are updated, with dtmalloc(4)'s five arguments: the type,
//! its internal part, the current CPU's statistics record, the accounted size and the `zindx`.
//!
//! The accounting paths test [`malloc_events`] or [`free_events`], a branch patched in when the
//! tracepoint has a probe (its reg function) or some type's peak is tracked, then the type's
//! `mti_events` word ([`has_work`]), and call the out-of-line [`on_event`] only when there is
//! something to do for the type, so that with neither tracing nor peaks a typed allocation pays
//! one no-op instruction, and a type neither traced nor tracked pays one test of its word while
//! another type is.
//!
//! C header: [`include/trace/events/dtmalloc.h`](srctree/include/trace/events/dtmalloc.h)

use super::MallocType;
use crate::{
    bindings,
    ffi::{
        c_int,
        c_ulong, //
    }, //
    sync::atomic::{
        atomic_load,
        Relaxed, //
    },
};
use core::ptr;

crate::declare_trace! {
    /// Fires `dtmalloc:malloc`.
    ///
    /// # Safety
    ///
    /// `mtp` is a registered type, `mtip` its internal part and `mtsp` the current CPU's
    /// record of its statistics.
    pub(super) unsafe fn malloc(
        mtp: *mut bindings::malloc_type,
        mtip: *mut bindings::malloc_type_internal,
        mtsp: *mut bindings::malloc_type_counters,
        size: c_ulong,
        zindx: c_int,
    );

    /// Fires `dtmalloc:free`.
    ///
    /// # Safety
    ///
    /// As for [`malloc`].
    pub(super) unsafe fn free(
        mtp: *mut bindings::malloc_type,
        mtip: *mut bindings::malloc_type_internal,
        mtsp: *mut bindings::malloc_type_counters,
        size: c_ulong,
        zindx: c_int,
    );
}

/// The signature of [`malloc`] and [`free`].
pub(super) type Event = unsafe fn(
    *mut bindings::malloc_type,
    *mut bindings::malloc_type_internal,
    *mut bindings::malloc_type_counters,
    c_ulong,
    c_int,
);

/// Defines `$fn() -> bool`: whether tracepoint `$tp` is enabled, a branch patched in and out
/// with the tracepoint (a jump label), so that its arguments are computed only when it is.
macro_rules! enabled {
    ($(#[$meta:meta])* $fn:ident, $tp:ident) => {
        $(#[$meta])*
        #[inline(always)]
        pub(super) fn $fn() -> bool {
            #[cfg(CONFIG_TRACEPOINTS)]
            {
                // SAFETY: It is always okay to query the static key of a tracepoint.
                unsafe {
                    crate::jump_label::static_branch_unlikely!(
                        bindings::$tp,
                        bindings::tracepoint,
                        key
                    )
                }
            }
            #[cfg(not(CONFIG_TRACEPOINTS))]
            {
                false
            }
        }
    };
}

enabled!(
    /// Returns whether `dtmalloc:malloc` is enabled.
    malloc_enabled,
    __tracepoint_malloc
);
enabled!(
    /// Returns whether `dtmalloc:free` is enabled.
    free_enabled,
    __tracepoint_free
);

/// Defines `$fn() -> bool`: whether field `$key` of `malloc_type_events` is on, a branch patched
/// in and out (a jump label): the accounting has more to do than count, a tracepoint to fire or
/// a peak to track.
macro_rules! events {
    ($(#[$meta:meta])* $fn:ident, $key:ident) => {
        $(#[$meta])*
        #[inline(always)]
        pub(super) fn $fn() -> bool {
            // SAFETY: `malloc_type_events` is a static defined by C (`mm/malloc_type_trace.c`);
            // it is always okay to query its keys.
            unsafe {
                crate::jump_label::static_branch_unlikely!(
                    bindings::malloc_type_events,
                    bindings::malloc_type_events,
                    $key
                )
            }
        }
    };
}

events!(
    /// Returns whether an allocation has more to do than count: `dtmalloc:malloc` has a probe,
    /// or some type's peak is tracked.
    malloc_events,
    malloc
);
events!(
    /// Returns whether a free has more to do than count: `dtmalloc:free` has a probe, or some
    /// type's peak is tracked.
    free_events,
    free
);

events!(
    /// Returns whether some type's allocations may be made to fail (`CONFIG_FAIL_MALLOC_TYPE`,
    /// `mm/malloc_type_fail.c`) or are guarded (`CONFIG_MALLOC_TYPE_MEMGUARD`,
    /// `mm/malloc_type_memguard.c`): allocations then test their type's bits
    /// ([`debug_selected`]).
    debug_events,
    debug
);
events!(
    /// Returns whether memguard may hold blocks (on from its first selection on): frees then
    /// ask whether theirs is one.
    #[cfg(CONFIG_MALLOC_TYPE_MEMGUARD)]
    guarded_blocks,
    guarded
);

/// Bit of `mti_events`: the type's peak bytes in use are tracked (`mm/malloc_type_peak.c`).
const EV_PEAK: c_ulong = 1 << bindings::MALLOC_TYPE_EV_PEAK;

/// Returns the `mti_events` word of `t`: bit `probe` while probe `probe` (`DTMALLOC_PROBE_*`)
/// is selected on its own (tracefs's `set_dtmalloc_probes`, `mm/malloc_type_probes.c`), and
/// [`EV_PEAK`] while the type's peak is tracked.
///
/// # Context
///
/// Any context.
#[inline(always)]
pub(super) fn events_word(t: &MallocType) -> c_ulong {
    // SAFETY: `mti_events` is a valid, aligned word of a live type, changed only with atomic
    // bit operations.
    // ORDERING: Relaxed, `READ_ONCE()`: a selection or a start of tracking is seen by later
    // allocations, which is all tracing asks; the peak's start orders its counters before the
    // bit, and the full barrier of the peak's `atomic64_add_return()` comes after this load.
    unsafe { atomic_load(ptr::addr_of_mut!((*t.as_raw()).ks_mti.mti_events), Relaxed) }
}

/// Bits of `mti_events` of a type selected for failures (`CONFIG_FAIL_MALLOC_TYPE`) or guarded
/// (`CONFIG_MALLOC_TYPE_MEMGUARD`).
const EV_FAIL: c_ulong = 1 << bindings::MALLOC_TYPE_EV_FAIL;
const EV_MEMGUARD: c_ulong = 1 << bindings::MALLOC_TYPE_EV_MEMGUARD;

/// Returns whether `t` is selected for failure injection (`mm/malloc_type_fail.c`).
///
/// # Context
///
/// Any context.
#[inline(always)]
pub(super) fn fail_selected(t: &MallocType) -> bool {
    events_word(t) & EV_FAIL != 0
}

/// Returns whether memguard guards the allocations of `t` (`mm/malloc_type_memguard.c`).
///
/// # Context
///
/// Any context.
#[cfg(CONFIG_MALLOC_TYPE_MEMGUARD)]
#[inline(always)]
pub(super) fn memguard_selected(t: &MallocType) -> bool {
    events_word(t) & EV_MEMGUARD != 0
}

/// Returns whether `t` is selected by a debugging option (failure injection or memguard): its
/// allocations then take the general path, which asks.
///
/// # Context
///
/// Any context.
#[inline(always)]
pub(super) fn debug_selected(t: &MallocType) -> bool {
    events_word(t) & (EV_FAIL | EV_MEMGUARD) != 0
}

/// Returns whether the peak of `t` is tracked.
///
/// # Context
///
/// Any context.
#[inline]
pub(super) fn peak_tracked(t: &MallocType) -> bool {
    events_word(t) & EV_PEAK != 0
}

/// Returns whether a per-type probe selection is in force (a jump label,
/// `dtmalloc_probes_selected`): the events then fire only for the selected types.
#[inline(always)]
fn selective() -> bool {
    // SAFETY: `dtmalloc_probes_selected` is a static key defined by C
    // (`mm/malloc_type_probes.c`); it is always okay to query it.
    unsafe {
        crate::jump_label::static_branch_unlikely!(
            bindings::dtmalloc_probes_selected,
            bindings::dtmalloc_selection,
            key
        )
    }
}

/// Returns whether an allocation (`probe` `DTMALLOC_PROBE_MALLOC`) or a free
/// (`DTMALLOC_PROBE_FREE`) of a type whose `mti_events` word is `w` has more to do than count,
/// once [`malloc_events`] or [`free_events`] said that some type may: a tracked peak, a probe
/// selected on its own, or, without a selection, the tracepoint (`enabled`) enabled.
///
/// A type that is neither tracked nor selected while a selection is in force costs the load
/// of its word, one test and the selection's jump label.
///
/// # Context
///
/// Any context.
#[inline(always)]
pub(super) fn has_work(w: c_ulong, probe: u32, enabled: impl Fn() -> bool) -> bool {
    w & ((1 << probe) | EV_PEAK) != 0 || (!selective() && enabled())
}

/// What an allocation (`probe` `DTMALLOC_PROBE_MALLOC`) or a free (`DTMALLOC_PROBE_FREE`) of
/// `size` accounted bytes from size class `zindx` of type `t` has to do beyond counting, once
/// [`has_work`] said there is something: the peak of a tracked type, then the tracepoint, when
/// it is enabled and fires for the type (no selection, or the type's probe selected).
///
/// Out of line and cold.
///
/// # Safety
///
/// As for [`fire`].
///
/// # Context
///
/// Any context, with preemption disabled.
#[cold]
#[inline(never)]
pub(super) unsafe fn on_event(
    t: &MallocType,
    w: c_ulong,
    probe: u32,
    mtsp: *mut bindings::malloc_type_counters,
    size: usize,
    zindx: i32,
) {
    let is_malloc = probe == bindings::DTMALLOC_PROBE_MALLOC;
    if w & EV_PEAK != 0 {
        // CAST: `usize` and `c_ulong` have the same width on 64-bit kernels.
        let bytes = size as c_ulong;
        // SAFETY: `t` is registered (safety requirements) and its peak is tracked.
        unsafe {
            if is_malloc {
                bindings::malloc_type_peak_alloc(t.as_raw(), bytes)
            } else {
                bindings::malloc_type_peak_free(t.as_raw(), bytes)
            }
        }
    }
    let (enabled, event) = if is_malloc {
        (malloc_enabled(), malloc as Event)
    } else {
        (free_enabled(), free as Event)
    };
    if enabled && (!selective() || w & (1 << probe) != 0) {
        // SAFETY: By the safety requirements.
        unsafe { fire(t, event, mtsp, size, zindx) };
    }
}

/// Fires `event` ([`malloc`] or [`free`]) for a block of `size` accounted bytes from size class
/// `zindx` of type `t`, just accounted in `mtsp`, the current CPU's record of its statistics.
///
/// Out of line and cold: the accounting paths call it only when the tracepoint is enabled.
///
/// # Safety
///
/// `t` is registered and `mtsp` is the current CPU's record of its statistics, updated for this
/// event: preemption has stayed disabled since the counters of `mtsp` were updated (the
/// accounting's guard), which keeps the statistics allocated and `mtsp` this CPU's.
///
/// # Context
///
/// Any context, with preemption disabled.
#[cold]
#[inline(never)]
pub(super) unsafe fn fire(
    t: &MallocType,
    event: Event,
    mtsp: *mut bindings::malloc_type_counters,
    size: usize,
    zindx: i32,
) {
    let mtp = t.as_raw();
    // SAFETY: `mtp` is a registered type, the second pointer its internal part and `mtsp` this
    // CPU's record of its statistics, which stays allocated and this CPU's for the call (safety
    // requirements); all are valid while `t` is.
    // CAST: `usize` and `c_ulong` have the same width on 64-bit kernels.
    unsafe {
        event(
            mtp,
            ptr::addr_of_mut!((*mtp).ks_mti),
            mtsp,
            size as c_ulong,
            zindx,
        )
    };
}

#[cfg(CONFIG_RUST_MALLOC_TYPE_KUNIT_TEST)]
#[macros::kunit_tests(rust_malloc_type_trace)]
mod tests {
    use super::*;
    use crate::str::{
        CStr,
        CStrExt as _, //
    };

    include!("probe_names.rs");
    include!("name_text.rs");
    include!("patterns.rs");

    /// The probe name the `dtmalloc` events record for a type called `name`.
    fn probe_name(name: &[u8], buf: &mut [u8; 64]) -> usize {
        let n = name.len().min(buf.len() - 1);
        buf[..n].copy_from_slice(&name[..n]);
        buf[n] = 0;
        // SAFETY: `buf` holds a NUL-terminated string, which the function changes in place.
        unsafe { bindings::malloc_type_probe_name(buf.as_mut_ptr().cast()) };
        n
    }

    /// The longest text form of a name: each of its bytes as `\NNN`.
    const TEXT_MAX: usize = 4 * crate::malloc_type::NAME_MAX;

    /// The text form of `name`, as every text output of the kernel writes it.
    fn name_text(name: &[u8], buf: &mut [u8; TEXT_MAX + 1]) -> usize {
        // SAFETY: `buf` is valid for writes of its length, `name` for reads of its length.
        unsafe {
            bindings::malloc_type_name_text(
                buf.as_mut_ptr().cast(),
                buf.len(),
                name.as_ptr().cast(),
                name.len(),
            )
        }
    }

    #[test]
    fn name_texts() {
        // The shared vector: the same names and texts as memstat's tests.
        for &(name, text) in NAME_TEXTS {
            let mut buf = [0u8; TEXT_MAX + 1];
            let n = name_text(name, &mut buf);
            assert_eq!(&buf[..n], text);
            assert_eq!(buf[n], 0);
        }
        // Every byte on its own: printable ASCII but the backslash stays, the rest is escaped.
        for b in 0..=255u8 {
            let mut buf = [0u8; TEXT_MAX + 1];
            let n = name_text(&[b], &mut buf);
            let plain = (0x20..0x7f).contains(&b) && b != b'\\';
            assert_eq!(n, if plain { 1 } else { 4 });
        }
        // The longest name: 31 bytes that all need escaping fill the text's maximum exactly.
        let name = [0xffu8; crate::malloc_type::NAME_MAX];
        let mut buf = [0u8; TEXT_MAX + 1];
        assert_eq!(name_text(&name, &mut buf), TEXT_MAX);
    }

    /// A registered type's texts, those the events record: escaped where the name needs it,
    /// the name itself where it does not.
    #[test]
    fn registered_texts() {
        crate::malloc_define!(M_T_TEXTS, "tab\there \x1b", "Texts of a registered type");
        crate::malloc_define!(M_T_PLAIN, "plain name", "A name with nothing to escape");
        let probe_text = |t: &MallocType| {
            // SAFETY: The type is registered (vmlinux types are, from boot), so its probe text
            // is a valid C string for the duration of the test.
            unsafe { CStr::from_char_ptr((*t.as_raw()).ks_mti.mti_probetext) }
        };
        assert_eq!(M_T_TEXTS.name_text().to_bytes(), b"tab\\011here \\033");
        assert_eq!(probe_text(&M_T_TEXTS).to_bytes(), b"tab_here_\\033");
        assert_eq!(M_T_PLAIN.name_text().to_bytes(), b"plain name");
        assert_eq!(probe_text(&M_T_PLAIN).to_bytes(), b"plain_name");
        assert_eq!(
            M_T_PLAIN.name_text().as_char_ptr(),
            M_T_PLAIN.name().as_char_ptr()
        );
    }

    /// The glob_match() pattern of selection pattern `pat`, or `None` when it is refused.
    fn glob_of(pat: &[u8]) -> Option<[u8; bindings::MALLOC_TYPE_GLOB_MAX as usize + 1]> {
        let mut glob = [0u8; bindings::MALLOC_TYPE_GLOB_MAX as usize + 1];
        // SAFETY: `pat` is valid for reads of its length and `glob` for writes of its length.
        let r = unsafe {
            bindings::malloc_type_pattern_glob(
                pat.as_ptr().cast(),
                pat.len(),
                glob.as_mut_ptr().cast(),
                glob.len(),
            )
        };
        (r >= 0).then_some(glob)
    }

    /// Whether selection pattern `pat` selects the probe named `probe`.
    fn selects(pat: &[u8], probe: &[u8]) -> Option<bool> {
        let glob = glob_of(pat)?;
        let mut name = [0u8; 256];
        if probe.len() >= name.len() {
            return None;
        }
        name[..probe.len()].copy_from_slice(probe);
        // SAFETY: Both are NUL-terminated: `glob` by `malloc_type_pattern_glob()`, `name` by
        // the zeros after the probe name's bytes, which are fewer than its length.
        Some(unsafe { bindings::glob_match(glob.as_ptr().cast(), name.as_ptr().cast()) })
    }

    /// The patterns of the selection files: the shared vector, as memstat's tests read it.
    #[test]
    fn patterns() {
        for &(pat, probe, want) in PATTERN_MATCHES {
            assert_eq!(selects(pat, probe), Some(want));
        }
        for &pat in BAD_PATTERNS {
            assert!(glob_of(pat).is_none());
        }
        for &(probe, exact) in EXACT_PATTERNS {
            assert_eq!(selects(exact, probe), Some(true));
        }
    }

    #[test]
    fn probe_names() {
        // The shared vector: the same names and probe names as memstat's tests.
        for &(name, probe) in PROBE_NAMES {
            let mut buf = [0u8; 64];
            let n = probe_name(name, &mut buf);
            assert_eq!(&buf[..n], probe);
        }
    }
}
