/* The functional hash (sieve/hash.h): what a network computes, not how it
 * is written.
 *
 * After Gillard et al., "Unified Functional Hashing in Automatic Machine
 * Learning" (2023): run the candidate on fixed inputs with fixed weights and
 * hash its (quantised) outputs, so that encodings which differ in ways no
 * canonicalisation rule knows about, but compute the same function, share
 * one evaluation.  Our choices, each with its reason:
 *
 * What runs.  The structural canonical form (hash-structural.c), rebuilt as
 * a graph, not the graph as written.  Two encodings with one structural hash
 * therefore run the very same computation, node for node and sum term for
 * sum term, and get the same functional hash bit for bit: the functional
 * hash never separates what the structural one joins.  The canonical graph
 * is also smaller (dead branches, zeros and duplicates gone).
 *
 * Weights.  Each parameter tensor is drawn from a PRNG seeded by the hash of
 * its operation's own content: kind, attributes, input and output shapes,
 * and the tensor's name; never its position, and never the structure of its
 * input, except that a parametric operation reading another one directly
 * (the batch norm after a conv) takes that one's seed in too: the pair is
 * one unit.  Without that, every batch norm of one width shared its offset,
 * and NAS-Bench-201 had a false join: conv1(x) + conv1(x) + conv3(2x) and
 * conv3(x) + conv3(x) + conv1(2x) (relu-conv-bn edges) are then both
 * 2 W1 r + 2 W3 r + 3 beta, r = relu(x).
 * So equal sub-computations get equal weights however they were
 * written, and a computation whose input is produced differently but equally
 * (say pool(a + b) against pool(a) + pool(b)) still meets the same weights
 * downstream, which is what lets the hash discover such equivalences.  The
 * price: two operations with equal content in one network share weights
 * even when their inputs differ.  A false merge then needs an identity that
 * holds for tied weights only, f(a) + f(b) = f(a + b) for a linear f with
 * the same weights on two different inputs; a conv or linear layer (without
 * bias) summed over two different tensors against the same layer applied
 * to their sum.  NAS-Bench-201 cannot express that (each of its convs reads
 * a ReLU of a cell node, and a sum of two ReLUs is never a node); graphs
 * that can would be merged.  Seeding from the structure of the input
 * instead would remove that risk but also every merge the hash exists for.
 *
 * Batch norm runs in evaluation mode with its running statistics at their
 * initial values (mean 0, variance 1) and random gamma in [0.5, 1.5) and
 * beta in [-0.5, 0.5): an affine map per channel with a non-zero offset.
 * Evaluation mode keeps the examples independent of each other; the offset
 * keeps relu-conv-bn from being positively homogeneous, so that f(2x) and
 * 2 f(x), different networks, do not meet by accident.  (In training mode
 * batch norm is scale invariant up to its eps, an approximate equivalence
 * that no exact hash can honour.)
 *
 * Probe batch: `batch` examples (default 4) of uniform [-1, 1) values from a
 * PRNG seeded by the input shape; evaluation mode, one thread unless told.
 *
 * Quantisation: each example's outputs are rounded to a grid of step
 * 2^(e - QUANT_BITS), 2^e just above the example's largest |output| (so 8
 * bits of the largest, the same absolute step for the smaller ones), and
 * the grid indices, the exponents, the batch and the output shape are
 * hashed (XXH3-128).  The rounding absorbs summation-order noise (thread
 * counts, oneDNN's kernels, pool(a + b) against pool(a) + pool(b)); two
 * equivalent networks are still split when an output falls on opposite
 * sides of a grid line in the two.  Over NAS-Bench-201 (README.md) 8 bits
 * sit between the first false joins (5 bits and fewer) and the first
 * splits (12 bits and more).
 *
 * Degenerate networks: a canonical output that is structurally zero, or
 * outputs bitwise equal across all probe examples (the output ignores the
 * input), both give sieve_hash_degenerate().
 */
#include <math.h>
#include <string.h>

#include <xxhash.h>

#include <sieve/rng.h>
#include <sieve/runtime.h>

#include "hash/hash-private.h"

#define FUNC_SEED G_GUINT64_CONSTANT(0x73696576652d6631)   /* "sieve-f1" */
#define LOCAL_SEED G_GUINT64_CONSTANT(0x73696576652d6c31)  /* "sieve-l1" */
#define INPUT_SEED G_GUINT64_CONSTANT(0x73696576652d6931)  /* "sieve-i1" */
#define DEFAULT_BATCH 4
/* Bits of each example's largest output that the grid keeps (README.md
 * shows how it was chosen). */
#define QUANT_BITS 8

static gboolean
has_params(SieveOpKind kind)
{
  return kind == SIEVE_OP_CONV2D || kind == SIEVE_OP_BATCH_NORM || kind == SIEVE_OP_LINEAR;
}

/* Each parametric node's weight seed: its local content (kind, attributes,
 * output and input shapes; not where the input came from), and the seed of
 * the parametric operation it reads directly, if any, so that a conv and the
 * batch norm after it are one unit (see the top of the file). */
static SieveHash *
unit_seeds(const SieveCanon *canon)
{
  SieveHash *seeds = g_new0(SieveHash, canon->n_nodes);
  for (guint i = 0; i < canon->n_nodes; i++) {
    const SieveCanonNode *x = &canon->nodes[i];
    if (!has_params(x->kind))
      continue;
    guint32 w[SIEVE_CANON_WORDS + 3 + 4];
    guint k = sieve__canon_words(w, x->kind, &x->attrs, x->shape);
    SieveShape in = canon->nodes[x->inputs[0]].shape; /* parametric operations have one input */
    w[k++] = GUINT32_TO_LE(in.c);
    w[k++] = GUINT32_TO_LE(in.h);
    w[k++] = GUINT32_TO_LE(in.w);
    if (has_params(canon->nodes[x->inputs[0]].kind)) {
      const SieveHash *u = &seeds[x->inputs[0]];
      guint32 q[4] = {(guint32)(u->hi >> 32), (guint32)u->hi, (guint32)(u->lo >> 32), (guint32)u->lo};
      for (guint j = 0; j < 4; j++)
        w[k++] = GUINT32_TO_LE(q[j]);
    }
    seeds[i] = sieve__hash_bytes(w, k * sizeof(guint32), LOCAL_SEED);
  }
  return seeds;
}

/* The tensor's values from its unit's seed and its name; fan-in scaled so
 * that activations keep their size through the probe network. */
static void
fill_param(const SieveGraph *g, const SieveHash *seed, const SieveParamInfo *info, float *v)
{
  const SieveGraphNode *n = sieve_graph_node(g, info->node);
  guint8 seed_bytes[16 + 16];
  guint64 le[2] = {GUINT64_TO_LE(seed->hi), GUINT64_TO_LE(seed->lo)};
  memcpy(seed_bytes, le, sizeof le);
  memset(seed_bytes + 16, 0, 16);
  strncpy((char *)seed_bytes + 16, info->name, 15);
  SieveRng rng;
  sieve_rng_seed(&rng, XXH3_64bits_withSeed(seed_bytes, sizeof seed_bytes, FUNC_SEED));
  double lo = -0.5, hi = 0.5;
  if (g_str_equal(info->name, "gamma")) {
    lo = 0.5, hi = 1.5;
  } else if (g_str_equal(info->name, "weight")) {
    SieveShape in = sieve_graph_node(g, n->inputs[0])->shape;
    double fan_in = n->kind == SIEVE_OP_CONV2D
                        ? (double)in.c / n->attrs.groups * n->attrs.kernel[0] * n->attrs.kernel[1]
                        : (double)in.c * in.h * in.w;
    /* Variance 2/fan_in (He) before a ReLU-heavy network; 1/fan_in for the classifier. */
    double a = sqrt((n->kind == SIEVE_OP_CONV2D ? 6.0 : 3.0) / fan_in);
    lo = -a, hi = a;
  }
  for (guint64 k = 0; k < info->size; k++)
    v[k] = (float)(lo + (hi - lo) * sieve_rng_uniform(&rng));
}

static void
put_u32(GByteArray *b, guint32 v)
{
  guint8 le[4] = {v, v >> 8, v >> 16, v >> 24};
  g_byte_array_append(b, le, 4);
}

/* One example's outputs y[0..n) on a grid of step 2^(e - QUANT_BITS), where
 * 2^e is just above the largest |y|: every value carries the same absolute
 * resolution, so an output near zero is not hashed with a precision its
 * summation noise (which scales with the larger values) cannot honour.
 * Appends e, then each value as a grid index.  Non-finite outputs: their bits. */
static void
quantise(GByteArray *buf, const float *y, gsize n)
{
  double m = 0;
  gboolean finite = TRUE;
  for (gsize k = 0; k < n; k++) {
    finite = finite && isfinite(y[k]);
    m = MAX(m, fabs(y[k]));
  }
  if (!finite) {
    put_u32(buf, 0x7fffffffu);
    for (gsize k = 0; k < n; k++) {
      guint32 u;
      memcpy(&u, &y[k], sizeof u);
      put_u32(buf, isnan(y[k]) ? 0x7fc00000u : u);
    }
    return;
  }
  int e = 0;
  if (m > 0)
    frexp(m, &e); /* m = f 2^e, f in [0.5, 1) */
  put_u32(buf, (guint32)e);
  double step = ldexp(1.0, e - QUANT_BITS);
  for (gsize k = 0; k < n; k++)
    put_u32(buf, (guint32)(gint32)llround(y[k] / step));
}

gboolean
sieve_graph_hash_functional(const SieveGraph *graph, const SieveFunctionalHashOptions *options, SieveHash *out,
                            GError **error)
{
  g_return_val_if_fail(graph != NULL && out != NULL, FALSE);
  g_autoptr(SieveCanon) canon = sieve__canon_new(graph, error);
  return canon != NULL && sieve__canon_hash_functional(canon, options, out, error);
}

gboolean
sieve__canon_hash_functional(const SieveCanon *canon, const SieveFunctionalHashOptions *options, SieveHash *out,
                             GError **error)
{
  guint batch = options && options->batch ? options->batch : DEFAULT_BATCH;
  guint threads = options && options->threads ? options->threads : 1;
  if (batch < 2) {
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_FAILED,
                "the functional hash needs a probe batch of at least 2 examples (got %u): it compares them "
                "to recognise a network that ignores its input",
                batch);
    return FALSE;
  }
  if (canon->degenerate) {
    *out = *sieve_hash_degenerate();
    return TRUE;
  }
  g_autoptr(SieveGraph) g = sieve__canon_build(canon, error);
  if (g == NULL)
    return FALSE;

  SieveRuntimeOptions ro = {.batch = batch, .threads = threads};
  g_autoptr(SieveRuntime) rt = sieve_runtime_new(g, &ro, error);
  if (rt == NULL)
    return FALSE;
  g_autofree SieveHash *seeds = unit_seeds(canon);
  for (guint i = 0; i < sieve_runtime_n_params(rt); i++) {
    const SieveParamInfo *info = sieve_runtime_param_info(rt, i);
    g_autofree float *v = g_new(float, info->size);
    fill_param(g, &seeds[info->node], info, v);
    if (!sieve_runtime_set_param(rt, i, v, error))
      return FALSE;
  }

  SieveShape in = sieve_graph_node(g, sieve_graph_input_node(g))->shape;
  gsize in_size = (gsize)in.c * in.h * in.w;
  g_autofree float *x = g_new(float, batch * in_size);
  guint32 shape_seed[3] = {GUINT32_TO_LE(in.c), GUINT32_TO_LE(in.h), GUINT32_TO_LE(in.w)};
  SieveRng rng;
  sieve_rng_seed(&rng, XXH3_64bits_withSeed(shape_seed, sizeof shape_seed, INPUT_SEED));
  for (gsize k = 0; k < batch * in_size; k++)
    x[k] = (float)(2 * sieve_rng_uniform(&rng) - 1);
  if (!sieve_runtime_forward(rt, x, NULL, SIEVE_MODE_EVAL, error))
    return FALSE;

  /* A loss is hashed by its logits (and its own attributes). */
  const SieveCanonNode *o = &canon->nodes[canon->output];
  guint read = canon->output;
  if (o->kind == SIEVE_OP_SOFTMAX_CE)
    read = o->inputs[0];
  SieveShape s = canon->nodes[read].shape;
  gsize per = (gsize)s.c * s.h * s.w;
  g_autofree float *y = g_new(float, batch * per);
  if (!sieve_runtime_read(rt, read, y, error))
    return FALSE;

  gboolean constant = TRUE;
  for (guint b = 1; b < batch && constant; b++)
    constant = memcmp(y, y + b * per, per * sizeof(float)) == 0;
  if (constant) {
    *out = *sieve_hash_degenerate();
    return TRUE;
  }
  g_autoptr(GByteArray) buf = g_byte_array_sized_new(64 + 4 * batch * per);
  put_u32(buf, batch);
  put_u32(buf, o->kind);
  put_u32(buf, s.c);
  put_u32(buf, s.h);
  put_u32(buf, s.w);
  if (o->kind == SIEVE_OP_SOFTMAX_CE)
    put_u32(buf, (guint32)llround(o->attrs.label_smoothing * 1e9));
  for (guint b = 0; b < batch; b++)
    quantise(buf, y + b * per, per);
  *out = sieve__hash_bytes(buf->data, buf->len, FUNC_SEED);
  return TRUE;
}
