/* SPDX-License-Identifier: GPL-2.0 */
/* The C library's errno.h includes <linux/errno.h>: the numbers come from <asm/errno.h>. */
#include <asm/errno.h>
