/* SPDX-License-Identifier: GPL-2.0 */
#include <linux/types.h>
#define __pure __attribute__((pure))
#define fallthrough __attribute__((fallthrough))
bool __pure glob_match(char const *pat, char const *str);
bool __pure glob_match_len(char const *pat, char const *str, size_t len);
