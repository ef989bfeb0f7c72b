// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include "pattern.h"

/* splitmix64's finaliser: every input bit moves every output bit. */
static uint64_t vt_mix64(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ULL;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

/*
 * Byte @i of pattern @seed: byte i % 8 of a 64-bit hash of the seed and i / 8. No
 * period shorter than the buffer, and two seeds share no run of bytes, so a page
 * that lands at another offset, or holds another transfer's data, never matches.
 */
uint64_t vt_pattern_word(uint64_t seed_key, size_t word)
{
	return vt_mix64(seed_key + word * 0x9e3779b97f4a7c15ULL);
}

uint64_t vt_pattern_key(unsigned int seed)
{
	return vt_mix64(0x6a09e667f3bcc909ULL ^ seed);
}

void vt_fill(void *buf, size_t len, unsigned int seed)
{
	uint64_t key = vt_pattern_key(seed), w = 0;
	unsigned char *p = buf;
	size_t i;

	for (i = 0; i < len; i++) {
		if (!(i & 7))
			w = vt_pattern_word(key, i / 8);
		p[i] = (unsigned char)(w >> (8 * (i & 7)));
	}
}

long vt_check(const void *buf, size_t len, unsigned int seed)
{
	uint64_t key = vt_pattern_key(seed), w = 0;
	const unsigned char *p = buf;
	size_t i;

	for (i = 0; i < len; i++) {
		if (!(i & 7))
			w = vt_pattern_word(key, i / 8);
		if (p[i] != (unsigned char)(w >> (8 * (i & 7))))
			return (long)i;
	}
	return -1;
}
