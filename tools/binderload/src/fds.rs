// SPDX-License-Identifier: Apache-2.0
//! The file descriptors `sendFd` passes through the driver (`BINDER_TYPE_FD`
//! objects): a client makes one with known content (a pipe it fills and
//! closes its end of, or an unlinked temporary file), the service reads the
//! content back through the fd the driver installed in it.
//!
//! rsbinder owns a received fd: the parcel of the transaction adopts the fd
//! the driver installed and closes it when it drops, and the
//! `ParcelFileDescriptor` the service is handed is a duplicate it closes
//! too. The service counts its open fds to check that none is left behind
//! ([`open_fds`]).

use std::fs::{File, OpenOptions};
use std::io::{ErrorKind, Read, Write};
use std::os::fd::AsFd;
use std::os::unix::fs::{FileExt, FileTypeExt};

use rsbinder::ParcelFileDescriptor;

use crate::payload::FdKind;
use crate::Res;

/// A new file descriptor of `kind` holding `data`, to send; `tag` makes the
/// name of a temporary file unique within the process.
pub fn make(kind: FdKind, data: &[u8], tag: u64) -> Res<ParcelFileDescriptor> {
    match kind {
        FdKind::Pipe => {
            let (read, write) =
                ParcelFileDescriptor::pipe().map_err(|e| format!("creating a pipe: {e}"))?;
            // Nobody reads the pipe yet: `data` must fit its buffer.
            (&write)
                .write_all(data)
                .map_err(|e| format!("writing {} bytes into a pipe: {e}", data.len()))?;
            // The only writer closes here: the service reads up to the end.
            drop(write);
            Ok(read)
        }
        FdKind::File => {
            let path =
                std::env::temp_dir().join(format!("binderload-{}-{tag}.tmp", std::process::id()));
            let mut file = OpenOptions::new()
                .read(true)
                .write(true)
                .create_new(true)
                .open(&path)
                .map_err(|e| format!("creating {}: {e}", path.display()))?;
            // Unlinked at once: the open fds keep it, nothing is left behind.
            std::fs::remove_file(&path).map_err(|e| format!("removing {}: {e}", path.display()))?;
            file.write_all(data).map_err(|e| {
                format!("writing {} bytes into {}: {e}", data.len(), path.display())
            })?;
            Ok(ParcelFileDescriptor::from(file))
        }
    }
}

/// The content of a received fd, which must be `length` bytes: a pipe is
/// read up to its end, a regular file from offset 0 with `pread` (the file
/// offset is shared with the sender's fd, so it is neither used nor moved).
pub fn read(fd: &ParcelFileDescriptor, length: usize) -> Res<Vec<u8>> {
    // A duplicate of the fd, closed when it drops (the received fd itself
    // is closed by rsbinder after the call).
    let file = File::from(
        fd.as_fd()
            .try_clone_to_owned()
            .map_err(|e| format!("duplicating the received fd: {e}"))?,
    );
    let kind = file
        .metadata()
        .map_err(|e| format!("fstat of the received fd: {e}"))?
        .file_type();
    // One byte more than expected is asked for, to tell a longer content.
    let mut data = Vec::with_capacity(length + 1);
    if kind.is_fifo() {
        (&file)
            .take(length as u64 + 1)
            .read_to_end(&mut data)
            .map_err(|e| format!("reading the received pipe: {e}"))?;
    } else if kind.is_file() {
        data.resize(length + 1, 0);
        let mut got = 0;
        while got < data.len() {
            match file.read_at(&mut data[got..], got as u64) {
                Ok(0) => break,
                Ok(n) => got += n,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => return Err(format!("pread of the received file at {got}: {e}")),
            }
        }
        data.truncate(got);
    } else {
        return Err(format!(
            "the received fd is neither a pipe nor a regular file ({kind:?})"
        ));
    }
    if data.len() != length {
        let what = if kind.is_fifo() { "pipe" } else { "file" };
        return Err(format!(
            "the received {what} holds {}{} bytes, expected {length}",
            if data.len() > length {
                "more than "
            } else {
                ""
            },
            data.len().min(length)
        ));
    }
    Ok(data)
}

/// The number of file descriptors open in this process, `None` without
/// `/proc`.
pub fn open_fds() -> Option<usize> {
    Some(std::fs::read_dir("/proc/self/fd").ok()?.count())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::payload::payload;

    #[test]
    fn pipes_and_files_round_trip() {
        let before = open_fds();
        for (tag, kind) in [FdKind::Pipe, FdKind::File].into_iter().enumerate() {
            for len in [0, 1, 4096, 8192] {
                let data = payload(7, tag as u64, len);
                let fd = make(kind, &data, tag as u64).unwrap();
                assert_eq!(read(&fd, len).unwrap(), data, "{kind:?} of {len} bytes");
            }
        }
        // A file is read with pread, from offset 0, whatever its offset.
        let fd = make(FdKind::File, b"abc", 99).unwrap();
        assert_eq!(read(&fd, 3).unwrap(), b"abc");
        assert_eq!(read(&fd, 3).unwrap(), b"abc");
        drop(fd);
        // Every fd made or duplicated is closed again (other tests' threads
        // may open fds meanwhile, so only a leak of them all is certain).
        if let (Some(before), Some(after)) = (before, open_fds()) {
            assert!(after < before + 10, "{before} fds before, {after} after");
        }
    }

    #[test]
    fn wrong_lengths_and_kinds_are_errors() {
        let fd = make(FdKind::Pipe, b"hello", 100).unwrap();
        let err = read(&fd, 4).unwrap_err();
        assert_eq!(err, "the received pipe holds more than 4 bytes, expected 4");
        let fd = make(FdKind::File, b"hello", 101).unwrap();
        let err = read(&fd, 6).unwrap_err();
        assert_eq!(err, "the received file holds 5 bytes, expected 6");
        let null = ParcelFileDescriptor::from(File::open("/dev/null").unwrap());
        let err = read(&null, 0).unwrap_err();
        assert!(err.contains("neither a pipe nor a regular file"), "{err}");
    }
}
