/* SPDX-License-Identifier: GPL-2.0 */
/* The kernel headers the selection files' parser includes, for user space. */
#ifndef _FUZZ_LINUX_TYPES_H
#define _FUZZ_LINUX_TYPES_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
typedef uint32_t u32;
typedef uint64_t u64;
#endif
