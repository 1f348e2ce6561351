/* SPDX-License-Identifier: MIT */
/* The adjudicator's per-colouring caches (games/tangled/tangled_impl.h): an open-addressing hash
 * map from kb-byte keys to vn doubles, FNV-1a hashed, linear probing, doubled at 1/2 load. */
#include "games/tangled/tangled_impl.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

void tg_map_fini(struct tg_map *m)
{
	free(m->keys);
	free(m->vals);
	free(m->used);
	memset(m, 0, sizeof(*m));
}

int tg_map_init(struct tg_map *m, uint32_t kb, uint32_t vn, size_t cap)
{
	m->keys = malloc(cap * kb);
	m->vals = malloc(cap * vn * sizeof(double));
	m->used = calloc(cap, 1);
	m->cap = cap;
	m->count = 0;
	m->kb = kb;
	m->vn = vn;
	if (!m->keys || !m->vals || !m->used) {
		tg_map_fini(m);
		return -ENOMEM;
	}
	return 0;
}

static size_t map_slot(const struct tg_map *m, const uint8_t *key)
{
	size_t i = (size_t)tg_fnv1a(TG_FNV_INIT, key, m->kb) & (m->cap - 1);

	while (m->used[i] && memcmp(m->keys + i * m->kb, key, m->kb) != 0)
		i = (i + 1) & (m->cap - 1);
	return i;
}

const double *tg_map_get(const struct tg_map *m, const uint8_t *key)
{
	size_t i = map_slot(m, key);

	return m->used[i] ? m->vals + i * m->vn : NULL;
}


static int map_grow(struct tg_map *m)
{
	struct tg_map b;
	int ret = tg_map_init(&b, m->kb, m->vn, m->cap * 2);

	if (ret)
		return ret;
	for (size_t i = 0; i < m->cap; i++)
		if (m->used[i])
			tg_map_put(&b, m->keys + i * m->kb, m->vals + i * m->vn);
	tg_map_fini(m);
	*m = b;
	return 0;
}

/* Insert (or overwrite) key. 0 or -ENOMEM. */
int tg_map_put(struct tg_map *m, const uint8_t *key, const double *val)
{
	size_t i;

	if (2 * (m->count + 1) > m->cap && map_grow(m))
		return -ENOMEM;
	i = map_slot(m, key);
	if (!m->used[i]) {
		m->used[i] = 1;
		m->count++;
		memcpy(m->keys + i * m->kb, key, m->kb);
	}
	memcpy(m->vals + i * m->vn, val, sizeof(double) * m->vn);
	return 0;
}
