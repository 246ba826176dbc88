// SPDX-License-Identifier: Apache-2.0
package binderload;

import binderload.ICallback;
import binderload.IToken;

/** The service of the workload, registered with the service manager. */
interface ILoad {
    /** Returns the payload unchanged (a buffer of the same size each way). */
    byte[] echo(in byte[] data);

    /** Returns the FNV-1a hash of the payload (a large request, a small reply). */
    long digest(in byte[] data);

    /** Returns a new binder object of the service that answers `id`. */
    IToken newToken(int id);

    /**
     * Calls `cb.ping(value, payload)` back (a nested transaction into the
     * client) and returns its answer.
     */
    long callBack(ICallback cb, long value, in byte[] payload);

    /**
     * Reads the content of `fd` (a file descriptor object the driver
     * installs in the service: a pipe read to its end, or a file read from
     * offset 0 with pread) and returns its FNV-1a hash; it must be exactly
     * `length` bytes long, or the call fails with IllegalArgument.
     */
    long sendFd(in ParcelFileDescriptor fd, int length);
}
