/* fakecuda resource registry: what each context owns (memory, streams, events, modules),
 * so destroying a context frees them, stale handles are recognised, and tests can
 * count what is alive (fakecuda_live).
 *
 * One doubly linked list per kind; contexts themselves are only counted (fk_context.c
 * keeps them).  Everything here runs under the driver lock.
 */
#include "fk_internal.h"

#include <string.h>

static const char *const fk_kind_names[FK__KINDS] = {
#define FK_KIND_NAME(kind, name) name,
    FK_KIND_LIST(FK_KIND_NAME)
#undef FK_KIND_NAME
};

static long fk_live[FK__KINDS];
static fk_resource *fk_registered[FK__KINDS]; /* the head of each kind's list */

void
fk_live_add(fk_kind kind, long delta)
{
    fk_live[kind] += delta;
}

void
fk_resource_add(fk_resource *res, fk_kind kind, fk_context *ctx, void (*destroy)(fk_resource *))
{
    res->kind = kind;
    res->ctx = ctx;
    res->destroy = destroy;
    res->prev = NULL;
    res->next = fk_registered[kind];
    if (res->next != NULL) {
        res->next->prev = res;
    }
    fk_registered[kind] = res;
    fk_live[kind]++;
}

void
fk_resource_remove(fk_resource *res)
{
    if (res->prev != NULL) {
        res->prev->next = res->next;
    }
    else {
        fk_registered[res->kind] = res->next;
    }
    if (res->next != NULL) {
        res->next->prev = res->prev;
    }
    res->prev = res->next = NULL;
    fk_live[res->kind]--;
}

fk_resource *
fk_resource_find(const void *handle, fk_kind kind)
{
    for (fk_resource *res = fk_registered[kind]; res != NULL; res = res->next) {
        if ((const void *)res == handle) {
            return res;
        }
    }
    return NULL;
}

fk_resource *
fk_resource_first(fk_kind kind)
{
    return fk_registered[kind];
}

/* The first registered `kind` owned by `ctx`, or NULL. */
static fk_resource *
first_owned(fk_kind kind, const fk_context *ctx)
{
    for (fk_resource *res = fk_registered[kind]; res != NULL; res = res->next) {
        if (res->ctx == ctx) {
            return res;
        }
    }
    return NULL;
}

void
fk_resource_destroy_all(fk_context *ctx)
{
    /* From the head again after each one: a destroy may unregister others (a module's). */
    for (int kind = 0; kind < FK__KINDS; kind++) {
        fk_resource *res;
        while ((res = first_owned((fk_kind)kind, ctx)) != NULL) {
            fk_resource_remove(res);
            if (res->destroy != NULL) {
                res->destroy(res);
            }
        }
    }
}

int
fk_kind_lookup(const char *name)
{
    for (int i = 0; name != NULL && i < FK__KINDS; i++) {
        if (strcmp(fk_kind_names[i], name) == 0) {
            return i;
        }
    }
    return -1;
}

long
fakecuda_live(const char *kind)
{
    int index = fk_kind_lookup(kind);
    long live;

    if (index < 0) {
        return -1;
    }
    fk_lock();
    live = fk_live[index];
    fk_unlock();
    return live;
}
