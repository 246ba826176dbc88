// SPDX-License-Identifier: Apache-2.0
package binderload;

/**
 * A binder object that a client creates and hands to the service, so that
 * the service holds a reference to a node of the client and calls it back.
 */
interface ICallback {
    /** Answers `value` plus one, and the payload's length. */
    long ping(long value, in byte[] payload);
}
