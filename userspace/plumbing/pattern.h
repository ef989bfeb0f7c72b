/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The data pattern every test checks bytes against (the verbs tests, the MPI program of
 * the two-host suite): no short period, another sequence for every seed.
 */
#ifndef VT_PATTERN_H
#define VT_PATTERN_H

#include <stddef.h>
#include <stdint.h>

/*
 * Fill len bytes with pattern seed: a 64-bit hash of the seed and the offset, with no
 * short period, so a page linked at the wrong offset or a THP mapped at the wrong step
 * cannot match, and every seed gives other bytes.
 */
void vt_fill(void *buf, size_t len, unsigned int seed);
/* Offset of the first byte that differs from vt_fill(seed), or -1 when all match. */
long vt_check(const void *buf, size_t len, unsigned int seed);
/* Word @word of pattern @seed_key (vt_pattern_key()): bytes 8 * word .. 8 * word + 7. */
uint64_t vt_pattern_word(uint64_t seed_key, size_t word);
uint64_t vt_pattern_key(unsigned int seed);

#endif
