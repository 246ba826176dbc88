// SPDX-License-Identifier: Apache-2.0
package binderload;

/**
 * A binder object that the service creates for one client: a new node in the
 * service, a new reference in the client, both freed when the client drops it.
 */
interface IToken {
    /** The id the token was made with. */
    int id();
}
