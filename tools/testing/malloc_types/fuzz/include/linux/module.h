/* SPDX-License-Identifier: GPL-2.0 */
#define MODULE_DESCRIPTION(s)
#define MODULE_LICENSE(s)
