/* The CPU backend's memory: one mapping for every slot (pooled across
 * runtimes), the binding of every step's arguments to it, copies to and
 * from plain layouts, and the parameters' initial values. */
#define _GNU_SOURCE /* mremap */
#include <errno.h>
#include <math.h>
#include <string.h>
#include <sys/mman.h>

#include <sieve/rng.h>

#include "runtime/cpu/cpu-private.h"

/* ---- binding and initialisation ----------------------------------------------- */

/* Arenas of runtimes freed lately, kept for the next runtime of the
 * process: scoring or training one network after another, each would
 * otherwise fault in (and the kernel zero) a few hundred MiB of fresh pages,
 * which on a virtual machine costs as much as the passes themselves.  At
 * most ARENA_POOL arenas and ARENA_POOL_BYTES are kept. */
#define ARENA_POOL 4
#define ARENA_POOL_BYTES ((size_t)2 << 30)

typedef struct {
  void *ptr;
  size_t bytes;
} Arena;

static GMutex arena_lock;
static Arena arena_pool[ARENA_POOL + 1];
static guint arena_count;

/* An arena of at least bytes: a pooled one (*dirty: it holds what its last
 * runtime left) or a fresh mapping (zero from the kernel). */
static gboolean
arena_take(size_t bytes, void **ptr, size_t *mapped, gboolean *dirty, GError **error)
{
  g_mutex_lock(&arena_lock);
  gint best = -1;
  for (guint i = 0; i < arena_count; i++)
    if (arena_pool[i].bytes >= bytes && (best < 0 || arena_pool[i].bytes < arena_pool[best].bytes))
      best = (gint)i;
  /* None large enough: the largest grows, keeping the pages it has. */
  gboolean grow = best < 0 && arena_count > 0;
  if (grow) {
    best = 0;
    for (guint i = 1; i < arena_count; i++)
      if (arena_pool[i].bytes > arena_pool[best].bytes)
        best = (gint)i;
  }
  Arena a = {0};
  if (best >= 0) {
    a = arena_pool[best];
    arena_pool[best] = arena_pool[--arena_count];
  }
  g_mutex_unlock(&arena_lock);
  /* Whole huge pages, so that a later, slightly larger network fits. */
  size_t size = (bytes + ((size_t)2 << 20) - 1) & ~(((size_t)2 << 20) - 1);
  if (a.ptr && grow) {
    void *p = mremap(a.ptr, a.bytes, size, MREMAP_MAYMOVE);
    if (p == MAP_FAILED) {
      munmap(a.ptr, a.bytes);
      a.ptr = NULL;
    } else {
#ifdef MADV_HUGEPAGE
      madvise(p, size, MADV_HUGEPAGE);
#endif
      a = (Arena){p, size};
    }
  }
  if (a.ptr) {
    *ptr = a.ptr;
    *mapped = a.bytes;
    *dirty = TRUE;
    return TRUE;
  }
  void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_RUNTIME, "cannot map %zu bytes for the network's tensors: %s",
                size, g_strerror(errno));
    return FALSE;
  }
#ifdef MADV_HUGEPAGE
  madvise(p, size, MADV_HUGEPAGE); /* advice only: without it, 4 KiB pages */
#endif
  *ptr = p;
  *mapped = size;
  *dirty = FALSE;
  return TRUE;
}

/* Returns an arena to the pool, unmapping the smallest when it is full. */
void
sieve__cpu_arena_give(void *ptr, size_t bytes)
{
  g_mutex_lock(&arena_lock);
  arena_pool[arena_count++] = (Arena){ptr, bytes};
  size_t held = 0;
  for (guint i = 0; i < arena_count; i++)
    held += arena_pool[i].bytes;
  while (arena_count > 0 && (arena_count > ARENA_POOL || held > ARENA_POOL_BYTES)) {
    guint small = 0;
    for (guint i = 1; i < arena_count; i++)
      if (arena_pool[i].bytes < arena_pool[small].bytes)
        small = i;
    Arena out = arena_pool[small];
    arena_pool[small] = arena_pool[--arena_count];
    held -= out.bytes;
    munmap(out.ptr, out.bytes);
  }
  g_mutex_unlock(&arena_lock);
}

gboolean
sieve__cpu_bind(Cpu *c, GError **error)
{
  /* One anonymous mapping for all slots rather than an allocation each:
   * the kernel hands it over zeroed (no memset), and on a kernel that
   * offers transparent huge pages in madvise mode it is faulted in 2 MiB at
   * a time.  With a few hundred MiB of activations at batch 64, 4 KiB page
   * faults and the memset were half of a proxy's time. */
  size_t total = 0;
  for (guint i = 0; i < c->slots->len; i++)
    total += (MAX(g_array_index(c->slots, Slot, i).bytes, 64) + 63) & ~(size_t)63;
  gboolean dirty;
  if (!arena_take(MAX(total, 64), &c->arena, &c->arena_bytes, &dirty, error))
    return FALSE;
  void *arena = c->arena;
  size_t offset = 0;
  for (guint i = 0; i < c->slots->len; i++) {
    Slot *s = &g_array_index(c->slots, Slot, i);
    s->ptr = (float *)((char *)arena + offset);
    size_t bytes = (MAX(s->bytes, 64) + 63) & ~(size_t)63;
    /* Dedicated slots count on starting at zero as in a fresh mapping
     * (the padding of blocked parameters, gradients no pass reaches,
     * optimizer state, materialised zeros); shared ones are written before
     * they are read, by each of the tensors that take turns in them, so a
     * recycled arena need not be cleared under them (a tenth of a small
     * network's scoring time). */
    if (dirty && s->dedicated)
      memset(s->ptr, 0, bytes);
    offset += bytes;
    c->bytes += bytes;
  }
  for (guint i = 0; i < c->steps->len; i++) {
    Step *s = c->steps->pdata[i];
    s->nargs = (int)s->specs->len;
    s->args = g_new0(dnnl_exec_arg_t, MAX(s->nargs, 1));
    s->mems = g_new0(dnnl_memory_t, MAX(s->nargs, 1));
    const_dnnl_primitive_desc_t pd = NULL;
    if (s->prim)
      TRY(dnnl_primitive_get_primitive_desc(s->prim, &pd), "descriptor of %s", sieve__cpu_node_desc(c, s->node));
    for (int k = 0; k < s->nargs; k++) {
      ArgSpec *a = &g_array_index(s->specs, ArgSpec, k);
      /* A binding in another layout than the primitive's is a planning bug:
       * catch it here rather than as a wrong number later. */
      const dnnl_memory_desc_t *want = pd ? dnnl_primitive_desc_query_md(pd, dnnl_query_exec_arg_md, a->arg) : NULL;
      if (want && !sieve__cpu_md_equal(want, &a->md)) {
        g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_RUNTIME,
                    "internal: argument %d of the step for %s is bound in a layout its primitive does not take",
                    a->arg, sieve__cpu_node_desc(c, s->node));
        return FALSE;
      }
      char *ptr = (char *)sieve__cpu_slot_ptr(c, a->slot) + a->offset;
      TRY(dnnl_memory_create(&s->mems[k], &a->md, c->engine, ptr), "memory for %s", sieve__cpu_node_desc(c, s->node));
      s->args[k].arg = a->arg;
      s->args[k].memory = s->mems[k];
    }
    g_clear_pointer(&s->specs, g_array_unref);
  }
  return TRUE;
}

/* Copies between a plain buffer and a tensor stored in layout md. */
gboolean
sieve__cpu_transfer(Cpu *c, const dnnl_memory_desc_t *plain, float *plain_ptr, const dnnl_memory_desc_t *md,
                    float *ptr, gboolean to_plain, GError **error)
{
  if (sieve__cpu_md_equal(plain, md)) {
    if (to_plain)
      memcpy(plain_ptr, ptr, sieve__cpu_md_bytes(md));
    else
      memcpy(ptr, plain_ptr, sieve__cpu_md_bytes(md));
    return TRUE;
  }
  const dnnl_memory_desc_t *from = to_plain ? md : plain, *to = to_plain ? plain : md;
  dnnl_primitive_desc_t pd;
  TRY(dnnl_reorder_primitive_desc_create(&pd, from, c->engine, to, c->engine, NULL), "reorder to or from plain");
  dnnl_primitive_t p;
  dnnl_status_t st = dnnl_primitive_create(&p, pd);
  dnnl_primitive_desc_destroy(pd);
  TRY(st, "reorder primitive");
  dnnl_memory_t a, b;
  TRY(dnnl_memory_create(&a, from, c->engine, to_plain ? ptr : plain_ptr), "memory");
  TRY(dnnl_memory_create(&b, to, c->engine, to_plain ? plain_ptr : ptr), "memory");
  dnnl_exec_arg_t args[2] = {{DNNL_ARG_FROM, a}, {DNNL_ARG_TO, b}};
  st = dnnl_primitive_execute(p, c->stream, 2, args);
  if (st == dnnl_success)
    st = dnnl_stream_wait(c->stream);
  dnnl_memory_destroy(a);
  dnnl_memory_destroy(b);
  dnnl_primitive_destroy(p);
  TRY(st, "reorder");
  return TRUE;
}

/* The parameters' initial values (sieve__param_initial), running mean 0
 * and variance 1. */
gboolean
sieve__cpu_init_params(Cpu *c, GError **error)
{
  SieveRng rng;
  sieve_rng_seed(&rng, c->options.seed);
  for (guint i = 0; i < c->params->len; i++) {
    Param *p = &g_array_index(c->params, Param, i);
    g_autofree float *v = g_new(float, p->info.size);
    sieve__param_initial(c->graph, &p->info, &rng, v);
    if (!sieve__cpu_transfer(c, &p->plain, v, &p->md, sieve__cpu_slot_ptr(c, p->value), FALSE, error))
      return FALSE;
  }
  for (guint v = 0; v < c->n_nodes; v++)
    if (c->nodes[v].rvar >= 0)
      for (guint k = 0; k < c->nodes[v].n->shape.c; k++)
        sieve__cpu_slot_ptr(c, c->nodes[v].rvar)[k] = 1.0f;
  return TRUE;
}
