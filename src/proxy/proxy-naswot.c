/* naswot (Mellor et al., "Neural Architecture Search without Training",
 * ICML 2021): each example's binary code is the pattern of which ReLU
 * inputs are positive; the kernel K[i][j] counts the units on which
 * examples i and j agree (units minus the Hamming distance of their codes),
 * summed over every ReLU of the network; the score is log |det K|.
 *
 * As the reference implementations do (the authors' code, Abdelfattah et
 * al.'s zero-cost-nas, the PyTorch peer): a forward in train mode (batch
 * norm on the batch's statistics), every ReLU counted once per appearance
 * in the network (the NAS-Bench-201 cells apply one ReLU per outgoing edge,
 * so a node read by three convolution edges counts three times, although the
 * runtime computes it once), and log |det| in double.  The codes are packed
 * 64 units to a word and distances taken by popcount: the kernel costs
 * B^2/2 * units/64 popcounts where the dense form costs B^2 * units
 * double multiply-adds.
 *
 * A singular kernel (examples whose codes agree everywhere, such as a
 * network whose ReLUs see no input at all) scores -inf, the
 * log-determinant of a singular matrix, as numpy and torch report it. */
#include <math.h>
#include <omp.h>
#include <string.h>

#include "proxy/proxy-private.h"

/* The agreement count of two codes, with and without the POPCNT
 * instruction (the build targets generic x86-64; the CPU is asked once). */
__attribute__((target("popcnt"))) static guint64
distance_popcnt(const guint64 *a, const guint64 *b, gsize words)
{
  guint64 d = 0;
  for (gsize w = 0; w < words; w++)
    d += (guint64)__builtin_popcountll(a[w] ^ b[w]);
  return d;
}

static guint64
distance_generic(const guint64 *a, const guint64 *b, gsize words)
{
  guint64 d = 0;
  for (gsize w = 0; w < words; w++)
    d += (guint64)__builtin_popcountll(a[w] ^ b[w]);
  return d;
}

void
sieve__naswot_kernel_add(const guint64 *codes, guint n, gsize words, guint64 bits, guint64 weight, guint threads,
                         gint64 *k)
{
  __builtin_cpu_init();
  guint64 (*distance)(const guint64 *, const guint64 *, gsize) =
    __builtin_cpu_supports("popcnt") ? distance_popcnt : distance_generic;
  gint64 nn = n;
  /* Rows get shorter down the triangle: dynamic scheduling balances them. */
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads) if (nn * nn * (gint64)words > 200000)
  for (gint64 i = 0; i < nn; i++)
    for (gint64 j = i; j < nn; j++) {
      gint64 agree = (gint64)(weight * (bits - distance(codes + i * words, codes + j * words, words)));
      k[i * nn + j] += agree;
      if (j != i)
        k[j * nn + i] += agree;
    }
}

gboolean
sieve__proxy_naswot(SieveProxyRun *run, double *score, GError **error)
{
  const SieveGraph *g = run->graph;
  guint nodes = sieve_graph_n_nodes(g), n = run->batch;
  /* ReLUs of one tensor hold one code: read it once, count it as often. */
  g_autofree guint *first = g_new(guint, nodes);
  g_autofree guint *times = g_new0(guint, nodes);
  for (guint v = 0; v < nodes; v++)
    first[v] = SIEVE_NODE_INVALID;
  for (guint v = 0; v < nodes; v++) {
    const SieveGraphNode *node = sieve_graph_node(g, v);
    if (node->kind != SIEVE_OP_ACTIVATION || node->attrs.activation != SIEVE_ACT_RELU || !sieve_graph_node_live(g, v))
      continue;
    guint in = node->inputs[0];
    if (first[in] == SIEVE_NODE_INVALID)
      first[in] = v;
    times[first[in]]++;
  }
  g_autofree gint64 *k = g_new0(gint64, (gsize)n * n);
  g_autofree guint64 *codes = NULL;
  for (guint v = 0; v < nodes; v++) {
    if (times[v] == 0)
      continue;
    SieveShape s = sieve_graph_node(g, v)->shape;
    gsize len = (gsize)s.c * s.h * s.w, words = (len + 63) / 64;
    codes = g_renew(guint64, codes, (gsize)n * words);
    /* ReLU(x) > 0 exactly where x > 0: the output gives the input's code.
     * The runtime packs it in its own order of the units, the same for
     * every example, which leaves Hamming distances as they are. */
    if (!sieve_runtime_read_signs(run->rt, v, codes, error))
      return FALSE;
    sieve__naswot_kernel_add(codes, n, words, len, times[v], run->threads, k);
  }
  g_autofree double *kd = g_new(double, (gsize)n * n);
  for (gsize i = 0; i < (gsize)n * n; i++)
    kd[i] = (double)k[i];
  *score = sieve__logabsdet(kd, n);
  return TRUE;
}
