/* The canonical form of a graph and its structural hash (sieve/hash.h).
 *
 * After Gillard et al., "Unified Functional Hashing in Automatic Machine
 * Learning" (2023), whose cheapest hash is of a canonicalised program: two
 * encodings that differ only in how they are written must get one
 * evaluation.  The rules, each of which keeps the network's function:
 *
 * - Nodes that cannot reach the output are dropped (never run).
 * - `zero` is removal: a zero term of a sum is dropped, and an operation
 *   whose input is zero is zero when f(0) = 0 for every value of its
 *   parameters (keeps_zero below): pooling, global pooling and cropping (of
 *   zeros), the activations with f(0) = 0 (all but sigmoid and hard_sigmoid,
 *   both 1/2 at 0), conv and linear without bias (W 0 = 0), x * gate when
 *   either is zero, a sum of zeros, an identity.  Any other operation of a
 *   zero (a batch norm: its shift beta, learnt; a conv or linear with bias:
 *   the bias; sigmoid: 1/2; the loss) is a constant, which stays in the
 *   expression, reading a zero of its input's shape: it changes the output.
 *   (The NAS-Bench-201 authors' canonical string drops it too, where their
 *   `none` feeds a ReLU-conv-BN edge: the edge's batch norm adds its beta
 *   there, which sieve keeps.)  The runtime folds a subset of these
 *   (sieve__node_keeps_zero; bias-free conv and linear it computes, to 0).
 *   A graph whose output is zero, or a constant (built from zeros only),
 *   does not depend on its input at all: it is degenerate and hashes to
 *   sieve_hash_degenerate().
 * - Identities are flattened: an identity is its input.
 * - Sums are associative and commutative: nested sums are flattened into one
 *   multiset of terms, a sum of one term is that term, and the terms are
 *   ordered by their own hashes.  Concatenation is associative but not
 *   commutative: nested concats are flattened, parts keep their order.
 * - Merkle hashing: a node's hash covers its kind, attributes, output shape
 *   and its inputs' hashes (XXH3, 128 bits), never its position or label,
 *   so equal sub-expressions hash equal wherever they were written and are
 *   kept once (hash-consing).
 *
 * What the hash deliberately does not see: parameter sharing.  A conv whose
 * output is used twice and two equal convs on the same input are one
 * expression here, as in the NAS-Bench-201 authors' canonical string, and as
 * the functional hash must see them (equal sub-computations get equal
 * weights there).
 */
#include <string.h>

#include <xxhash.h>

#include "hash/hash-private.h"
#include "runtime/runtime-private.h"

/* The structural hash's domain seed, apart from the functional one's.  A
 * rule change keeps it, so that the networks the change does not touch
 * keep their stored hashes (the store keeps no hash version): README.md,
 * "Functional hashing", says what an older store's cache then answers. */
#define STRUCT_SEED G_GUINT64_CONSTANT(0x73696576652d7331) /* "sieve-s1" */

SieveHash
sieve__hash_bytes(const void *data, gsize len, guint64 seed)
{
  XXH128_hash_t h = XXH3_128bits_withSeed(data, len, seed);
  return (SieveHash){.hi = h.high64, .lo = h.low64};
}

/* ---- serialising what a hash covers ---------------------------------------- */

static void
put_double(guint32 *w, double v)
{
  if (v == 0)
    v = 0; /* -0.0 and 0.0 are one value */
  guint64 bits;
  memcpy(&bits, &v, sizeof bits);
  w[0] = GUINT32_TO_LE((guint32)bits);
  w[1] = GUINT32_TO_LE((guint32)(bits >> 32));
}

/* Kind, shape and every attribute in a fixed order (the ones an operation
 * does not use are zero), little-endian so that hashes agree everywhere. */
guint
sieve__canon_words(guint32 *w, SieveOpKind kind, const SieveOpAttrs *a, SieveShape shape)
{
  guint32 u[] = {kind, shape.c, shape.h, shape.w, a->out_channels, a->kernel[0], a->kernel[1], a->stride[0],
                 a->stride[1], a->pad[0], a->pad[1], a->dilation[0], a->dilation[1], a->groups, a->bias != 0,
                 a->affine != 0, a->activation, a->pool};
  guint n = 0;
  for (; n < G_N_ELEMENTS(u); n++)
    w[n] = GUINT32_TO_LE(u[n]);
  put_double(w + n, a->eps);
  put_double(w + n + 2, a->momentum);
  put_double(w + n + 4, a->alpha);
  put_double(w + n + 6, a->label_smoothing);
  n += 8;
  g_assert(n == SIEVE_CANON_WORDS);
  return n;
}

static int
hash_cmp(const SieveHash *a, const SieveHash *b)
{
  if (a->hi != b->hi)
    return a->hi < b->hi ? -1 : 1;
  if (a->lo != b->lo)
    return a->lo < b->lo ? -1 : 1;
  return 0;
}

/* ---- building the canonical DAG -------------------------------------------- */

typedef struct {
  guint cid;         /* canonical node, or NONE when the value is zero */
  guint witness;     /* zero values: a canonical node of the same shape, or NONE */
  gboolean constant; /* non-zero values built from zeros only: they do not depend on the input */
} Value;

typedef struct {
  GArray *nodes;     /* SieveCanonNode */
  GHashTable *index; /* SieveHash* (owned) -> cid + 1 */
} Builder;

static guint
hash_key(gconstpointer p)
{
  return (guint)((const SieveHash *)p)->lo;
}

static gboolean
hash_key_equal(gconstpointer a, gconstpointer b)
{
  return sieve_hash_equal(a, b);
}

static SieveCanonNode *
cnode(Builder *b, guint cid)
{
  return &g_array_index(b->nodes, SieveCanonNode, cid);
}

/* The canonical node for (kind, attrs, shape, inputs): an existing one with
 * the same hash, or a new one. */
static guint
intern(Builder *b, SieveOpKind kind, const SieveOpAttrs *attrs, SieveShape shape, const guint *inputs, guint n,
       guint witness)
{
  guint32 small[SIEVE_CANON_WORDS + 1 + 4 * 8];
  gsize n_words = SIEVE_CANON_WORDS + 1 + 4 * (gsize)n;
  g_autofree guint32 *big = n_words > G_N_ELEMENTS(small) ? g_new(guint32, n_words) : NULL;
  guint32 *w = big ? big : small;
  guint k = sieve__canon_words(w, kind, attrs, shape);
  w[k++] = GUINT32_TO_LE(n);
  for (guint i = 0; i < n; i++) {
    const SieveHash *h = &cnode(b, inputs[i])->hash;
    guint32 q[4] = {(guint32)(h->hi >> 32), (guint32)h->hi, (guint32)(h->lo >> 32), (guint32)h->lo};
    for (guint j = 0; j < 4; j++)
      w[k++] = GUINT32_TO_LE(q[j]);
  }
  SieveHash hash = sieve__hash_bytes(w, k * sizeof(guint32), STRUCT_SEED);
  gpointer found = g_hash_table_lookup(b->index, &hash);
  if (found != NULL) {
    guint cid = GPOINTER_TO_UINT(found) - 1;
    SieveCanonNode *x = cnode(b, cid);
    if (x->kind == SIEVE_OP_ZERO && x->witness == SIEVE_CANON_NONE)
      x->witness = witness;
    return cid;
  }
  SieveCanonNode x = {.kind = kind, .attrs = *attrs, .shape = shape, .n_inputs = n, .hash = hash,
                      .witness = witness};
  x.inputs = g_memdup2(inputs, n * sizeof(guint));
  g_array_append_val(b->nodes, x);
  guint cid = b->nodes->len - 1;
  g_hash_table_insert(b->index, g_memdup2(&hash, sizeof hash), GUINT_TO_POINTER(cid + 1));
  return cid;
}

static const SieveOpAttrs no_attrs;

static Value
zero_value(guint witness)
{
  return (Value){SIEVE_CANON_NONE, witness, FALSE};
}

/* Whether an operation of one input maps a zero input to zero for every
 * value of its parameters (see the top of the file): what the runtime folds
 * (pooling, cropping, activations with f(0) = 0), and conv and linear
 * without bias, which it computes. */
static gboolean
keeps_zero(const SieveGraphNode *n)
{
  if (n->kind == SIEVE_OP_CONV2D || n->kind == SIEVE_OP_LINEAR)
    return !n->attrs.bias;
  return sieve__node_keeps_zero(n);
}

static gint
cmp_by_hash(gconstpointer a, gconstpointer b, gpointer user_data)
{
  Builder *bd = user_data;
  return hash_cmp(&cnode(bd, *(const guint *)a)->hash, &cnode(bd, *(const guint *)b)->hash);
}

static Value
canon_add(Builder *b, const SieveGraphNode *n, const Value *vals)
{
  g_autoptr(GArray) terms = g_array_new(FALSE, FALSE, sizeof(guint));
  guint witness = SIEVE_CANON_NONE;
  gboolean constant = TRUE;
  for (guint k = 0; k < n->n_inputs; k++) {
    Value v = vals[n->inputs[k]];
    if (v.cid == SIEVE_CANON_NONE) {
      if (witness == SIEVE_CANON_NONE)
        witness = v.witness;
      continue;
    }
    constant = constant && v.constant;
    SieveCanonNode *x = cnode(b, v.cid);
    if (x->kind == SIEVE_OP_ADD)
      g_array_append_vals(terms, x->inputs, x->n_inputs); /* already flat */
    else
      g_array_append_val(terms, v.cid);
  }
  if (terms->len == 0)
    return zero_value(witness);
  if (terms->len == 1)
    return (Value){g_array_index(terms, guint, 0), SIEVE_CANON_NONE, constant};
  g_array_sort_with_data(terms, cmp_by_hash, b);
  return (Value){intern(b, SIEVE_OP_ADD, &no_attrs, n->shape, (guint *)terms->data, terms->len, SIEVE_CANON_NONE),
                 SIEVE_CANON_NONE, constant};
}

static Value
canon_concat(Builder *b, const SieveGraph *g, const SieveGraphNode *n, const Value *vals)
{
  g_autoptr(GArray) parts = g_array_new(FALSE, FALSE, sizeof(guint));
  g_autoptr(GArray) witnesses = g_array_new(FALSE, FALSE, sizeof(guint)); /* of an all-zero concat */
  gboolean any = FALSE, constant = TRUE;
  for (guint k = 0; k < n->n_inputs; k++) {
    Value v = vals[n->inputs[k]];
    if (v.cid == SIEVE_CANON_NONE) {
      /* A zero part still fills its channels: it stays, as a zero of its shape. */
      SieveShape s = sieve_graph_node(g, n->inputs[k])->shape;
      guint z = intern(b, SIEVE_OP_ZERO, &no_attrs, s, NULL, 0, v.witness);
      g_array_append_val(parts, z);
      g_array_append_val(witnesses, v.witness);
      continue;
    }
    any = TRUE;
    constant = constant && v.constant;
    SieveCanonNode *x = cnode(b, v.cid);
    if (x->kind == SIEVE_OP_CONCAT)
      g_array_append_vals(parts, x->inputs, x->n_inputs);
    else
      g_array_append_val(parts, v.cid);
  }
  if (!any) {
    /* All zero: witnessed by the concat of the parts' witnesses, if each has one. */
    for (guint k = 0; k < witnesses->len; k++)
      if (g_array_index(witnesses, guint, k) == SIEVE_CANON_NONE)
        return zero_value(SIEVE_CANON_NONE);
    return zero_value(witnesses->len == 1 ? g_array_index(witnesses, guint, 0)
                                          : intern(b, SIEVE_OP_CONCAT, &no_attrs, n->shape, (guint *)witnesses->data,
                                                   witnesses->len, SIEVE_CANON_NONE));
  }
  if (parts->len == 1)
    return (Value){g_array_index(parts, guint, 0), SIEVE_CANON_NONE, constant};
  return (Value){intern(b, SIEVE_OP_CONCAT, &no_attrs, n->shape, (guint *)parts->data, parts->len, SIEVE_CANON_NONE),
                 SIEVE_CANON_NONE, constant};
}

/* Canonical order: a depth-first walk from the output that visits each
 * node's inputs in their canonical order (a zero's witness first) and lists
 * a node after them.  It depends on the expression only. */
static void
order_nodes(Builder *b, guint root, GArray *order)
{
  guint n = b->nodes->len;
  g_autofree guint8 *state = g_new0(guint8, n); /* 0 new, 1 open, 2 listed */
  g_autoptr(GArray) stack = g_array_new(FALSE, FALSE, sizeof(guint));
  g_array_append_val(stack, root);
  while (stack->len > 0) {
    guint v = g_array_index(stack, guint, stack->len - 1);
    if (state[v] == 2) {
      g_array_set_size(stack, stack->len - 1);
      continue;
    }
    SieveCanonNode *x = cnode(b, v);
    if (state[v] == 1) {
      state[v] = 2;
      g_array_append_val(order, v);
      g_array_set_size(stack, stack->len - 1);
      continue;
    }
    state[v] = 1;
    /* Pushed in reverse, so the first input is walked first. */
    for (guint k = x->n_inputs; k-- > 0;)
      if (state[x->inputs[k]] == 0)
        g_array_append_val(stack, x->inputs[k]);
    if (x->kind == SIEVE_OP_ZERO && x->witness != SIEVE_CANON_NONE && state[x->witness] == 0)
      g_array_append_val(stack, x->witness);
  }
}

void
sieve__canon_free(SieveCanon *canon)
{
  if (canon == NULL)
    return;
  for (guint i = 0; i < canon->n_nodes; i++)
    g_free(canon->nodes[i].inputs);
  g_free(canon->nodes);
  g_free(canon);
}

SieveCanon *
sieve__canon_new(const SieveGraph *graph, GError **error)
{
  g_return_val_if_fail(graph != NULL, NULL);
  guint out = sieve_graph_output(graph);
  if (out == SIEVE_NODE_INVALID) {
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_GRAPH, "graph %s is not finished (no output): nothing to hash",
                sieve_graph_name(graph));
    return NULL;
  }
  /* Liveness: nodes only consume earlier ones, so one backward sweep. */
  g_autofree gboolean *live = g_new0(gboolean, out + 1);
  live[out] = TRUE;
  for (guint v = out + 1; v-- > 0;) {
    if (!live[v])
      continue;
    const SieveGraphNode *n = sieve_graph_node(graph, v);
    for (guint k = 0; k < n->n_inputs; k++)
      live[n->inputs[k]] = TRUE;
  }

  Builder b = {g_array_new(FALSE, TRUE, sizeof(SieveCanonNode)),
               g_hash_table_new_full(hash_key, hash_key_equal, g_free, NULL)};
  g_autofree Value *vals = g_new(Value, out + 1);
  for (guint v = 0; v <= out; v++) {
    vals[v] = zero_value(SIEVE_CANON_NONE);
    if (!live[v])
      continue;
    const SieveGraphNode *n = sieve_graph_node(graph, v);
    switch (n->kind) {
    case SIEVE_OP_INPUT:
      vals[v].cid = intern(&b, SIEVE_OP_INPUT, &no_attrs, n->shape, NULL, 0, SIEVE_CANON_NONE);
      break;
    case SIEVE_OP_IDENTITY:
      vals[v] = vals[n->inputs[0]];
      break;
    case SIEVE_OP_ZERO: {
      Value in = vals[n->inputs[0]];
      vals[v] = zero_value(in.cid != SIEVE_CANON_NONE ? in.cid : in.witness);
      break;
    }
    case SIEVE_OP_ADD:
      vals[v] = canon_add(&b, n, vals);
      break;
    case SIEVE_OP_CONCAT:
      vals[v] = canon_concat(&b, graph, n, vals);
      break;
    case SIEVE_OP_MUL: {
      /* x * gate is zero when either is; it has x's shape, so x (or its
       * witness) witnesses the zero. */
      Value x = vals[n->inputs[0]], gate = vals[n->inputs[1]];
      if (x.cid == SIEVE_CANON_NONE)
        vals[v] = zero_value(x.witness);
      else if (gate.cid == SIEVE_CANON_NONE)
        vals[v] = zero_value(x.cid);
      else
        vals[v] = (Value){intern(&b, SIEVE_OP_MUL, &no_attrs, n->shape, (guint[]){x.cid, gate.cid}, 2,
                                 SIEVE_CANON_NONE),
                          SIEVE_CANON_NONE, x.constant && gate.constant};
      break;
    }
    default: {
      /* One input, not commutative: conv, batch norm, activation, pooling,
       * global pooling, linear, loss, crop. */
      g_assert(n->n_inputs == 1);
      Value in = vals[n->inputs[0]];
      if (in.cid == SIEVE_CANON_NONE && keeps_zero(n)) {
        SieveShape s = sieve_graph_node(graph, n->inputs[0])->shape;
        gboolean same = s.c == n->shape.c && s.h == n->shape.h && s.w == n->shape.w;
        /* A new shape is witnessed by the operation applied to the old witness. */
        vals[v] = zero_value(same || in.witness == SIEVE_CANON_NONE
                                 ? in.witness
                                 : intern(&b, n->kind, &n->attrs, n->shape, &in.witness, 1, SIEVE_CANON_NONE));
      } else if (in.cid == SIEVE_CANON_NONE) {
        /* f(0) is a constant: the operation stays, reading a zero of its input's shape. */
        SieveShape s = sieve_graph_node(graph, n->inputs[0])->shape;
        guint z = intern(&b, SIEVE_OP_ZERO, &no_attrs, s, NULL, 0, in.witness);
        vals[v] = (Value){intern(&b, n->kind, &n->attrs, n->shape, &z, 1, SIEVE_CANON_NONE), SIEVE_CANON_NONE, TRUE};
      } else {
        vals[v] = (Value){intern(&b, n->kind, &n->attrs, n->shape, &in.cid, 1, SIEVE_CANON_NONE), SIEVE_CANON_NONE,
                          in.constant};
      }
    }
    }
  }

  SieveCanon *canon = g_new0(SieveCanon, 1);
  Value result = vals[out];
  if (result.cid == SIEVE_CANON_NONE || result.constant) {
    canon->degenerate = TRUE;
    canon->output = SIEVE_CANON_NONE;
    canon->hash = *sieve_hash_degenerate();
  } else {
    g_autoptr(GArray) order = g_array_new(FALSE, FALSE, sizeof(guint));
    order_nodes(&b, result.cid, order);
    g_autofree guint *rank = g_new(guint, b.nodes->len);
    for (guint i = 0; i < b.nodes->len; i++)
      rank[i] = SIEVE_CANON_NONE;
    for (guint i = 0; i < order->len; i++)
      rank[g_array_index(order, guint, i)] = i;
    canon->n_nodes = order->len;
    canon->nodes = g_new0(SieveCanonNode, order->len);
    for (guint i = 0; i < order->len; i++) {
      SieveCanonNode *x = cnode(&b, g_array_index(order, guint, i));
      SieveCanonNode *y = &canon->nodes[i];
      *y = *x;
      y->inputs = g_new(guint, MAX(x->n_inputs, 1));
      for (guint k = 0; k < x->n_inputs; k++)
        y->inputs[k] = rank[x->inputs[k]];
      y->witness = x->witness == SIEVE_CANON_NONE ? SIEVE_CANON_NONE : rank[x->witness];
    }
    canon->output = order->len - 1;
    canon->hash = canon->nodes[canon->output].hash;
  }
  for (guint i = 0; i < b.nodes->len; i++)
    g_free(cnode(&b, i)->inputs);
  g_array_unref(b.nodes);
  g_hash_table_unref(b.index);
  return canon;
}

SieveGraph *
sieve__canon_build(const SieveCanon *canon, GError **error)
{
  g_return_val_if_fail(canon != NULL && !canon->degenerate, NULL);
  g_autoptr(SieveGraph) g = sieve_graph_new("canonical");
  for (guint i = 0; i < canon->n_nodes; i++) {
    const SieveCanonNode *x = &canon->nodes[i];
    guint id;
    if (x->kind == SIEVE_OP_INPUT) {
      id = sieve_graph_input(g, x->shape.c, x->shape.h, x->shape.w);
    } else if (x->kind == SIEVE_OP_ZERO) {
      if (x->witness == SIEVE_CANON_NONE) {
        g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_GRAPH,
                    "a zero of shape %ux%ux%u has no tensor of its shape to be built from: "
                    "the canonical graph cannot rebuild it",
                    x->shape.c, x->shape.h, x->shape.w);
        return NULL;
      }
      id = sieve_graph_zero(g, x->witness);
    } else {
      id = sieve_graph_add(g, x->kind, x->inputs, x->n_inputs, &x->attrs);
    }
    if (id != i) {
      if (!sieve_graph_finish(g, id, error)) /* reports the builder's error */
        return NULL;
      g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_GRAPH, "canonical node %u was rebuilt as node %u", i, id);
      return NULL;
    }
  }
  if (!sieve_graph_finish(g, canon->output, error))
    return NULL;
  return g_steal_pointer(&g);
}

gboolean
sieve_graph_hash_structural(const SieveGraph *graph, SieveHash *out, GError **error)
{
  g_return_val_if_fail(graph != NULL && out != NULL, FALSE);
  g_autoptr(SieveCanon) canon = sieve__canon_new(graph, error);
  if (canon == NULL)
    return FALSE;
  *out = canon->hash;
  return TRUE;
}
