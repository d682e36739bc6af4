/*
 * list.h - intrusive circular doubly linked list (the kernel's shape).
 */
#ifndef RIFT_UTIL_LIST_H
#define RIFT_UTIL_LIST_H

#include <stdbool.h>
#include <stddef.h>

struct rift__list {
	struct rift__list *next, *prev;
};

static inline void rift__list_init(struct rift__list *l)
{
	l->next = l->prev = l;
}

static inline bool rift__list_empty(const struct rift__list *l)
{
	return l->next == l;
}

/* An unlinked node points at itself, so removing it twice is harmless. */
static inline bool rift__list_linked(const struct rift__list *n)
{
	return n->next != n;
}

static inline void rift__list_add_tail(struct rift__list *head,
				       struct rift__list *n)
{
	n->prev = head->prev;
	n->next = head;
	head->prev->next = n;
	head->prev = n;
}

static inline void rift__list_del(struct rift__list *n)
{
	n->prev->next = n->next;
	n->next->prev = n->prev;
	n->next = n->prev = n;
}

/* Entries on the list (walks it: not for a per-message path). */
static inline size_t rift__list_len(const struct rift__list *l)
{
	size_t n = 0;

	for (const struct rift__list *it = l->next; it != l; it = it->next)
		n++;
	return n;
}

#define rift__list_entry(ptr, type, member)                                   \
	((type *)(void *)((char *)(ptr)-offsetof(type, member)))

#endif
