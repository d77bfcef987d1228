/* SPDX-License-Identifier: MIT */
/* tests/engine/t_hugepool.h - the kernel's 2 MiB huge page pool, read from sysfs independently
 * of the library, and raised for a suite's huge-page tests (as root) then restored. Suites that
 * raise the pool call t_pool_raise() from Criterion's PRE_ALL report hook and t_pool_restore()
 * from POST_ALL - both run in the runner process, so a crashing test cannot skip the restore -
 * and take the CTest resource lock vidmm_hugepages. */
#ifndef VIDMM_TESTS_T_HUGEPOOL_H
#define VIDMM_TESTS_T_HUGEPOOL_H

#include <stdbool.h>
#include <stddef.h>

#define T_POOL_DIR "/sys/kernel/mm/hugepages/hugepages-2048kB/"

long t_read_long(const char *path);
bool t_write_long(const char *path, long v);
/* Free pages of the pool of 'size'-byte pages nobody has reserved yet, or -1. */
long t_pool_avail(size_t size);
/* Make at least 'pages' 2 MiB pages free (root only; otherwise nothing happens), saying so on
 * stderr under the name 'who'. */
void t_pool_raise(const char *who, long pages);
void t_pool_restore(const char *who);

#endif /* VIDMM_TESTS_T_HUGEPOOL_H */
