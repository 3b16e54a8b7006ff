/* The CPU backend's planning helpers, shared by both passes: buffers
 * ("slots") and their pool, steps and the primitives they run, memory
 * descriptors; pass 1 (resolve); and what both plans ask of a node. */
#include "runtime/cpu/cpu-private.h"

const char *
sieve__cpu_node_desc(Cpu *c, guint v)
{
  return sieve__node_desc(c->graph, v);
}

/* ---- slots --------------------------------------------------------------- */

int
sieve__cpu_slot_new(Cpu *c, size_t bytes, gboolean dedicated)
{
  if (!dedicated) {
    for (guint i = 0; i < c->free->len; i++) {
      int id = g_array_index(c->free, int, i);
      if (g_array_index(c->slots, Slot, id).bytes == bytes) {
        g_array_remove_index_fast(c->free, i);
        return id;
      }
    }
  }
  Slot s = {.bytes = bytes, .dedicated = dedicated};
  g_array_append_val(c->slots, s);
  return c->slots->len - 1;
}

void
sieve__cpu_slot_release(Cpu *c, int id)
{
  if (id >= 0 && !g_array_index(c->slots, Slot, id).dedicated)
    g_array_append_val(c->free, id);
}

float *
sieve__cpu_slot_ptr(Cpu *c, int id)
{
  return g_array_index(c->slots, Slot, id).ptr;
}

/* ---- steps --------------------------------------------------------------- */

Step *
sieve__cpu_step_push(Cpu *c, StepKind kind, guint node, GArray *list, GArray *list2)
{
  Step *s = g_new0(Step, 1);
  s->kind = kind;
  s->node = node;
  s->specs = g_array_new(FALSE, FALSE, sizeof(ArgSpec));
  g_ptr_array_add(c->steps, s);
  guint idx = c->steps->len - 1;
  g_array_append_val(list, idx);
  if (list2)
    g_array_append_val(list2, idx);
  return s;
}

void
sieve__cpu_step_arg(Step *s, int arg, const dnnl_memory_desc_t *md, int slot)
{
  ArgSpec a = {.arg = arg, .md = *md, .slot = slot};
  g_array_append_val(s->specs, a);
}

void
sieve__cpu_step_free(gpointer p)
{
  Step *s = p;
  for (int i = 0; i < s->nargs; i++)
    dnnl_memory_destroy(s->mems[i]);
  g_free(s->mems);
  g_free(s->args);
  if (s->prim)
    dnnl_primitive_destroy(s->prim);
  if (s->specs)
    g_array_unref(s->specs);
  g_free(s);
}

gboolean
sieve__cpu_pd_create(Cpu *c, guint v, dnnl_primitive_desc_t *pd, const_dnnl_op_desc_t desc,
                     const_dnnl_primitive_desc_t hint, const char *what, GError **error)
{
  TRY(dnnl_primitive_desc_create(pd, desc, NULL, c->engine, hint), "%s for %s", what, sieve__cpu_node_desc(c, v));
  return TRUE;
}

/* Whether oneDNN found an optimised implementation (not its reference one). */
static gboolean
pd_fast(const_dnnl_primitive_desc_t pd)
{
  const char *impl = NULL;
  if (dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl) != dnnl_success || impl == NULL)
    return FALSE;
  return !g_str_has_prefix(impl, "ref");
}

/* Creates pd from desc when that gives an optimised implementation;
 * FALSE (and no pd) otherwise, so the caller can try freer layouts. */
gboolean
sieve__cpu_pd_try(Cpu *c, dnnl_primitive_desc_t *pd, const_dnnl_op_desc_t desc, const_dnnl_primitive_desc_t hint)
{
  if (dnnl_primitive_desc_create(pd, desc, NULL, c->engine, hint) != dnnl_success)
    return FALSE;
  if (pd_fast(*pd))
    return TRUE;
  dnnl_primitive_desc_destroy(*pd);
  *pd = NULL;
  return FALSE;
}

gboolean
sieve__cpu_prim_from_pd(Cpu *c, Step *s, dnnl_primitive_desc_t pd, const char *what, GError **error)
{
  TRY(dnnl_primitive_create(&s->prim, pd), "%s primitive for %s", what, sieve__cpu_node_desc(c, s->node));
  return TRUE;
}

/* A reorder step src(md_a, slot a) -> dst(md_b, slot b); accumulate adds into dst. */
gboolean
sieve__cpu_push_reorder(Cpu *c, guint v, GArray *list, GArray *list2, const dnnl_memory_desc_t *from, int a,
                        const dnnl_memory_desc_t *to, int b, gboolean accumulate, GError **error)
{
  Step *s = sieve__cpu_step_push(c, STEP_PRIM, v, list, list2);
  dnnl_primitive_attr_t attr = NULL;
  dnnl_post_ops_t ops = NULL;
  if (accumulate) {
    TRY(dnnl_primitive_attr_create(&attr), "attributes");
    TRY(dnnl_post_ops_create(&ops), "post-ops");
    TRY(dnnl_post_ops_append_sum(ops, 1.0f), "sum post-op");
    TRY(dnnl_primitive_attr_set_post_ops(attr, ops), "post-ops");
  }
  dnnl_primitive_desc_t pd;
  dnnl_status_t st = dnnl_reorder_primitive_desc_create(&pd, from, c->engine, to, c->engine, attr);
  if (ops)
    dnnl_post_ops_destroy(ops);
  if (attr)
    dnnl_primitive_attr_destroy(attr);
  TRY(st, "reorder for %s", sieve__cpu_node_desc(c, v));
  st = dnnl_primitive_create(&s->prim, pd);
  dnnl_primitive_desc_destroy(pd);
  TRY(st, "reorder primitive for %s", sieve__cpu_node_desc(c, v));
  sieve__cpu_step_arg(s, DNNL_ARG_FROM, from, a);
  sieve__cpu_step_arg(s, DNNL_ARG_TO, to, b);
  return TRUE;
}

/* ---- memory descriptors -------------------------------------------------- */

size_t
sieve__cpu_md_bytes(const dnnl_memory_desc_t *md)
{
  return dnnl_memory_desc_get_size(md);
}

gboolean
sieve__cpu_md_equal(const dnnl_memory_desc_t *a, const dnnl_memory_desc_t *b)
{
  return dnnl_memory_desc_equal(a, b);
}

void
sieve__cpu_md_plain(dnnl_memory_desc_t *md, guint batch, SieveShape s)
{
  dnnl_dims_t d = {batch, s.c, s.h, s.w};
  dnnl_memory_desc_init_by_tag(md, 4, d, dnnl_f32, dnnl_nchw);
}

void
sieve__cpu_md_1d(dnnl_memory_desc_t *md, guint n)
{
  dnnl_dims_t d = {n};
  dnnl_memory_desc_init_by_tag(md, 1, d, dnnl_f32, dnnl_x);
}

/* A node's output as a 4-D descriptor (inner products produce 2-D ones). */
gboolean
sieve__cpu_md_as4(Cpu *c, guint u, dnnl_memory_desc_t *out, GError **error)
{
  const dnnl_memory_desc_t *md = &c->nodes[u].md;
  if (md->ndims == 4) {
    *out = *md;
    return TRUE;
  }
  dnnl_dims_t d = {md->dims[0], md->dims[1], 1, 1};
  TRY(dnnl_memory_desc_reshape(out, md, 4, d), "reshape of %s", sieve__cpu_node_desc(c, u));
  return TRUE;
}

gboolean
sieve__cpu_md_window(Cpu *c, guint v, const dnnl_memory_desc_t *md, dnnl_memory_desc_t *out, GError **error)
{
  const SieveGraphNode *n = c->nodes[v].n;
  dnnl_dims_t dims = {c->options.batch, n->shape.c, n->attrs.kernel[0], n->attrs.kernel[1]};
  dnnl_dims_t offs = {0, 0, n->attrs.pad[0], n->attrs.pad[1]};
  TRY(dnnl_memory_desc_init_submemory(out, md, dims, offs), "window of %s", sieve__cpu_node_desc(c, v));
  return TRUE;
}

/* ---- pass 1: resolve ------------------------------------------------------ */

guint
sieve__cpu_root(Cpu *c, guint u)
{
  return c->nodes[u].root;
}

void
sieve__cpu_resolve(Cpu *c)
{
  const SieveGraph *g = c->graph;
  for (guint v = 0; v < c->n_nodes; v++) {
    CNode *x = &c->nodes[v];
    x->id = v;
    x->n = sieve_graph_node(g, v);
    x->root = v;
    x->out = x->diff = x->ws = x->prob = x->mean = x->var = x->rmean = x->rvar = -1;
    x->src_slot = x->gate_slot = x->kept_slot = x->fused = -1;
    if (!sieve_graph_node_live(g, v)) {
      x->role = ROLE_DEAD;
      continue;
    }
    const SieveGraphNode *n = x->n;
    x->in = g_new0(guint, MAX(n->n_inputs, 1));
    switch (n->kind) {
    case SIEVE_OP_IDENTITY:
      x->role = ROLE_ALIAS;
      x->root = sieve__cpu_root(c, n->inputs[0]);
      if (c->nodes[x->root].role == ROLE_ZERO)
        x->role = ROLE_ZERO;
      continue;
    case SIEVE_OP_ZERO:
      x->role = ROLE_ZERO;
      continue;
    case SIEVE_OP_ADD:
      for (guint k = 0; k < n->n_inputs; k++) {
        guint r = sieve__cpu_root(c, n->inputs[k]);
        if (c->nodes[r].role != ROLE_ZERO)
          x->in[x->n_in++] = r;
      }
      if (x->n_in == 0) {
        x->role = ROLE_ZERO;
      } else if (x->n_in == 1) {
        x->role = ROLE_ALIAS;
        x->root = x->in[0];
      } else {
        x->role = ROLE_REAL;
      }
      continue;
    case SIEVE_OP_ACTIVATION: {
      guint r = sieve__cpu_root(c, n->inputs[0]);
      if (c->nodes[r].role == ROLE_ZERO && sieve__node_keeps_zero(n)) {
        x->role = ROLE_ZERO;
        continue;
      }
      /* One activation per tensor: later ones alias the first. */
      for (guint w = r + 1; w < v; w++) {
        CNode *y = &c->nodes[w];
        if (y->role == ROLE_REAL && y->n->kind == SIEVE_OP_ACTIVATION && y->in[0] == r &&
            y->n->attrs.activation == n->attrs.activation && y->n->attrs.alpha == n->attrs.alpha) {
          x->role = ROLE_ALIAS;
          x->root = w;
          break;
        }
      }
      if (x->role == ROLE_ALIAS)
        continue;
    }
      G_GNUC_FALLTHROUGH;
    default:
      if (n->n_inputs == 1 && sieve__node_keeps_zero(n) &&
          c->nodes[sieve__cpu_root(c, n->inputs[0])].role == ROLE_ZERO) {
        x->role = ROLE_ZERO;
        continue;
      }
      x->role = ROLE_REAL;
      for (guint k = 0; k < n->n_inputs; k++)
        x->in[x->n_in++] = sieve__cpu_root(c, n->inputs[k]);
    }
  }
  /* Zeros that something other than a sum reads become real zero tensors. */
  for (guint v = 0; v < c->n_nodes; v++) {
    CNode *x = &c->nodes[v];
    if (x->role != ROLE_REAL)
      continue;
    for (guint k = 0; k < x->n_in; k++)
      if (c->nodes[x->in[k]].role == ROLE_ZERO)
        c->nodes[x->in[k]].role = ROLE_ZERO_BUF;
  }
  guint out = sieve__cpu_root(c, c->output);
  if (c->nodes[out].role == ROLE_ZERO)
    c->nodes[out].role = ROLE_ZERO_BUF;
  /* Uses and what backward will read. */
  for (guint v = 0; v < c->n_nodes; v++) {
    CNode *x = &c->nodes[v];
    if (x->role != ROLE_REAL)
      continue;
    SieveOpKind k = x->n->kind;
    for (guint i = 0; i < x->n_in; i++) {
      CNode *u = &c->nodes[x->in[i]];
      u->uses++;
      if (k == SIEVE_OP_CONV2D || k == SIEVE_OP_BATCH_NORM || k == SIEVE_OP_LINEAR || k == SIEVE_OP_MUL ||
          (k == SIEVE_OP_ACTIVATION && x->n->attrs.activation != SIEVE_ACT_RELU &&
           x->n->attrs.activation != SIEVE_ACT_LEAKY_RELU))
        u->needed_bwd = TRUE;
    }
    if (k == SIEVE_OP_ACTIVATION &&
        (x->n->attrs.activation == SIEVE_ACT_RELU || x->n->attrs.activation == SIEVE_ACT_LEAKY_RELU))
      x->needed_bwd = TRUE;
  }
}

/* ---- what both passes ask of a node ----------------------------------------- */

Param *
sieve__cpu_param_of(Cpu *c, guint v, guint k)
{
  return &g_array_index(c->params, Param, c->nodes[v].first_param + k);
}

dnnl_alg_kind_t
sieve__cpu_eltwise_alg(const SieveOpAttrs *a, float *alpha, float *beta, gboolean *use_dst)
{
  *alpha = (float)a->alpha;
  *beta = 0;
  *use_dst = FALSE;
  switch (a->activation) {
  case SIEVE_ACT_RELU:
    *alpha = 0;
    *use_dst = TRUE;
    return dnnl_eltwise_relu_use_dst_for_bwd;
  case SIEVE_ACT_LEAKY_RELU:
    *use_dst = TRUE;
    return dnnl_eltwise_relu_use_dst_for_bwd;
  case SIEVE_ACT_ELU:
    return dnnl_eltwise_elu;
  case SIEVE_ACT_TANH:
    return dnnl_eltwise_tanh;
  case SIEVE_ACT_SIGMOID:
    return dnnl_eltwise_logistic;
  case SIEVE_ACT_GELU:
    return dnnl_eltwise_gelu_erf;
  case SIEVE_ACT_SWISH:
    *alpha = 1;
    return dnnl_eltwise_swish;
  case SIEVE_ACT_HARD_SWISH:
    return dnnl_eltwise_hardswish; /* x relu6(x + 3) / 6, alpha and beta unused (oneDNN 2.6) */
  default:
    return dnnl_alg_kind_undef;
  }
}

gboolean
sieve__cpu_is_relu(const SieveGraphNode *n)
{
  return n->kind == SIEVE_OP_ACTIVATION &&
         (n->attrs.activation == SIEVE_ACT_RELU || n->attrs.activation == SIEVE_ACT_LEAKY_RELU);
}

/* Whether the caller asked to read u (its output, and its gradient). */
gboolean
sieve__cpu_kept(Cpu *c, guint u)
{
  return c->options.keep_all || c->keep[u];
}
