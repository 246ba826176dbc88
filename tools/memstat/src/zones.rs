//! The kmalloc size classes a `zindx` names: `vm.malloc_zone_count` and
//! `vm.malloc_zone_sizes`, the analogue of libmemstat's
//! `memstat_malloc_zone_get_count(3)` / `_get_size` / `_used`.

use std::fs;
use std::path::Path;

use crate::error::{path_text, Error, Result};
use crate::types::MemoryType;

/// `MALLOC_TYPE_ZONE_COUNT_MAX`: a size mask has 64 bits.
pub const ZONE_COUNT_MAX: usize = 64;

/// The x86_64 kmalloc size classes, used when the sysctls are missing.
pub const DEFAULT_ZONE_SIZES: [u64; 13] = [
    8, 16, 32, 64, 96, 128, 192, 256, 512, 1024, 2048, 4096, 8192,
];

/// Default root of the sysctl tree.
pub const DEFAULT_SYSCTL_DIR: &str = "/proc/sys";

/// The table of zone sizes: bit `i` of a size mask is zone `i`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ZoneSizes {
    sizes: Vec<u64>,
    from_kernel: bool,
}

impl Default for ZoneSizes {
    fn default() -> Self {
        ZoneSizes {
            sizes: DEFAULT_ZONE_SIZES.to_vec(),
            from_kernel: false,
        }
    }
}

impl ZoneSizes {
    /// A table from explicit sizes (at most [`ZONE_COUNT_MAX`]).
    pub fn new(sizes: Vec<u64>) -> Result<ZoneSizes> {
        if sizes.len() > ZONE_COUNT_MAX {
            return Err(Error::data(format!(
                "{} zone sizes, more than {ZONE_COUNT_MAX}",
                sizes.len()
            )));
        }
        Ok(ZoneSizes {
            sizes,
            from_kernel: false,
        })
    }

    /// A table of the kernel's own sizes (read from a core, [`crate::kvm`]):
    /// [`ZoneSizes::from_kernel`] is true.
    pub fn new_from_kernel(sizes: Vec<u64>) -> Result<ZoneSizes> {
        let mut z = ZoneSizes::new(sizes)?;
        z.from_kernel = true;
        Ok(z)
    }

    /// Parse the text of `vm.malloc_zone_sizes` (integers separated by
    /// white space, as `proc_dointvec` prints them).
    pub fn parse(text: &str) -> Result<ZoneSizes> {
        let mut sizes = Vec::new();
        for tok in text.split_whitespace() {
            let v: u64 = tok
                .parse()
                .map_err(|_| Error::data(format!("zone size {tok:?} is not a number")))?;
            sizes.push(v);
        }
        ZoneSizes::new(sizes)
    }

    /// Read `vm/malloc_zone_sizes` (and check `vm/malloc_zone_count`, if
    /// present) under `sysctl_dir`; fall back to [`DEFAULT_ZONE_SIZES`] when
    /// the sysctls are missing or unreadable.
    pub fn from_sysctl(sysctl_dir: &Path) -> ZoneSizes {
        Self::try_from_sysctl(sysctl_dir).unwrap_or_default()
    }

    /// Like [`ZoneSizes::from_sysctl`], without the fallback.
    pub fn try_from_sysctl(sysctl_dir: &Path) -> Result<ZoneSizes> {
        let p = sysctl_dir.join("vm/malloc_zone_sizes");
        let text = read_sysctl(&p)?;
        let mut z = ZoneSizes::parse(&text)?;
        let cp = sysctl_dir.join("vm/malloc_zone_count");
        if let Ok(c) = read_sysctl(&cp) {
            let n: usize = c
                .trim()
                .parse()
                .map_err(|_| Error::data(format!("{}: not a number", path_text(&cp))))?;
            if n < z.sizes.len() {
                z.sizes.truncate(n);
            }
        }
        z.from_kernel = true;
        Ok(z)
    }

    /// `memstat_malloc_zone_get_count()`.
    pub fn count(&self) -> usize {
        self.sizes.len()
    }

    /// `memstat_malloc_zone_get_size(n)`; `None` past the table.
    pub fn size(&self, n: usize) -> Option<u64> {
        self.sizes.get(n).copied()
    }

    /// All sizes.
    pub fn sizes(&self) -> &[u64] {
        &self.sizes
    }

    /// Whether the table came from the kernel's sysctls.
    pub fn from_kernel(&self) -> bool {
        self.from_kernel
    }

    /// `memstat_malloc_zone_used(mtp, n)`: whether `mt` used zone `n`.
    pub fn used(&self, mt: &MemoryType, n: usize) -> bool {
        n < ZONE_COUNT_MAX && mt.sizemask() & (1u64 << n) != 0
    }

    /// The sizes of the zones set in `mask`, in zone order (bits beyond the
    /// table are ignored).
    pub fn sizes_in_mask(&self, mask: u64) -> Vec<u64> {
        self.sizes
            .iter()
            .enumerate()
            .filter(|(i, _)| *i < ZONE_COUNT_MAX && mask & (1u64 << i) != 0)
            .map(|(_, s)| *s)
            .collect()
    }
}

/// Reads a sysctl file with a single `read()` at offset 0.
///
/// The kernel's sysctl handlers (`proc_dointvec()` and friends) return end-of-file for a read
/// at a non-zero offset, so a file must be read in one call with a buffer large enough for all
/// of it; `fs::read_to_string` starts with a short probe read and would see only its first 32
/// bytes. The first read asks for [`SYSCTL_READ_FIRST`] bytes; a file that fills them is read
/// again from offset 0 (`pread()`) with four times as many, up to [`SYSCTL_READ_MAX`] (a pipe,
/// which cannot be read at an offset, is read once with room for that many): the
/// kernel allocates and zeroes a buffer of the size asked for on every read, so a 64 KiB read of
/// a 60-byte value cost more than the rest of a `memstat` update at 100 types.
///
/// Errors: the file's I/O error, or [`Error::DataError`] for a value of
/// [`SYSCTL_READ_MAX`] bytes or more, or one that is not UTF-8.
pub fn read_sysctl(path: &Path) -> Result<String> {
    use std::io::Read;
    use std::os::unix::fs::FileExt;
    let mut f = fs::File::open(path).map_err(|e| Error::from_io(path, e))?;
    let mut len = SYSCTL_READ_FIRST;
    let mut seekable = true;
    let mut buf = Vec::new();
    loop {
        buf.resize(len, 0);
        let r = if seekable {
            f.read_at(&mut buf, 0)
        } else {
            f.read(&mut buf)
        };
        let n = match r {
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            // Not a file that can be read at an offset (a pipe): one read of all there is room
            // for, since it cannot be read again.
            Err(e) if seekable && e.raw_os_error() == Some(libc::ESPIPE) => {
                seekable = false;
                len = SYSCTL_READ_MAX;
                continue;
            }
            Err(e) => return Err(Error::from_io(path, e)),
        };
        if n < len {
            buf.truncate(n);
            break;
        }
        if len >= SYSCTL_READ_MAX {
            return Err(Error::data(format!(
                "{}: larger than {} bytes",
                path_text(path),
                SYSCTL_READ_MAX
            )));
        }
        len = (len * 4).min(SYSCTL_READ_MAX);
    }
    String::from_utf8(buf).map_err(|_| Error::data(format!("{}: not text", path_text(path))))
}

/// The bytes [`read_sysctl`] asks for first: more than a zone table takes (13 sizes in 60 bytes on
/// x86_64 with 4 KiB pages; 64 sizes of up to 6 digits would fit).
pub const SYSCTL_READ_FIRST: usize = 512;
/// The most bytes [`read_sysctl`] reads: a value this long or longer is refused.
pub const SYSCTL_READ_MAX: usize = 64 * 1024;
