/* nb101-count: enumerates every NAS-Bench-101 cell and counts the distinct
 * ones under the benchmark's graph hash, as the authors'
 * nasbench/scripts/generate_graphs.py did to find their 423,624: for each
 * number of vertices, every upper-triangular matrix whose vertices all lie
 * on an input-to-output path (graph_util.is_full_dag) with at most 9 edges,
 * under every labelling of its interior vertices.
 *
 *   nb101-count [--max-vertices N] [--exact] [--expect-exact] [--expect CLASSES]
 *
 * --exact also counts the classes by an exact canonical form (the least
 * code over every relabelling of the interior vertices), to check that the
 * hash merges isomorphic cells and nothing else (factorial cost: meant for
 * up to 6 vertices); --expect-exact fails (exit 1) when the two counts
 * differ, --expect when the hash's count is not CLASSES.  Prints one line
 * per vertex count and a total. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nb101-cell.h"

/* The exact canonical form: the least (adjacency, labels) code over the
 * relabellings of the interior vertices; input and output stay put. */
typedef struct {
  guint n;
  guint perm[NB101_MAX_VERTICES];
  guint64 best;
} Canon;

static guint64
code(const Nb101Cell *c, const guint *perm)
{
  /* vertex v becomes perm[v]; the code reads the new matrix row by row,
   * then the new labels. */
  guint n = c->n, inverse[NB101_MAX_VERTICES];
  for (guint v = 0; v < n; v++)
    inverse[perm[v]] = v;
  guint64 k = 0;
  for (guint i = 0; i < n; i++)
    for (guint j = 0; j < n; j++)
      k = k << 1 | nb101_cell_has_edge(c, inverse[i], inverse[j]);
  for (guint v = 1; v + 1 < n; v++)
    k = k * NB101_N_OPS + c->op[inverse[v]];
  return k;
}

static void
permute(const Nb101Cell *c, Canon *canon, guint at)
{
  if (at + 1 >= c->n) {
    guint64 k = code(c, canon->perm);
    canon->best = MIN(canon->best, k);
    return;
  }
  for (guint i = at; i + 1 < c->n; i++) {
    guint t = canon->perm[at];
    canon->perm[at] = canon->perm[i];
    canon->perm[i] = t;
    permute(c, canon, at + 1);
    canon->perm[i] = canon->perm[at];
    canon->perm[at] = t;
  }
}

static guint64
canonical(const Nb101Cell *c)
{
  Canon canon = {.n = c->n, .best = G_MAXUINT64};
  for (guint v = 0; v < c->n; v++)
    canon.perm[v] = v;
  permute(c, &canon, 1);
  /* Different sizes must not share a code. */
  return canon.best * 8 + c->n;
}

static guint
digest_hash(gconstpointer p)
{
  guint h;
  memcpy(&h, p, sizeof h);
  return h;
}

static gboolean
digest_equal(gconstpointer a, gconstpointer b)
{
  return memcmp(a, b, 16) == 0;
}

int
main(int argc, char **argv)
{
  guint max_vertices = NB101_MAX_VERTICES;
  gboolean exact = FALSE, expect_exact = FALSE;
  gint64 expect = -1;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--max-vertices") == 0 && i + 1 < argc) {
      max_vertices = (guint) atoi(argv[++i]);
    } else if (strcmp(argv[i], "--exact") == 0) {
      exact = TRUE;
    } else if (strcmp(argv[i], "--expect-exact") == 0) {
      expect_exact = exact = TRUE;
    } else if (strcmp(argv[i], "--expect") == 0 && i + 1 < argc) {
      expect = g_ascii_strtoll(argv[++i], NULL, 10);
    } else {
      fprintf(stderr, "usage: %s [--max-vertices N (2..7)] [--exact] [--expect-exact] [--expect CLASSES]\n",
              argv[0]);
      return 2;
    }
  }
  if (max_vertices < 2 || max_vertices > NB101_MAX_VERTICES) {
    fprintf(stderr, "%s: --max-vertices must be 2..%d\n", argv[0], NB101_MAX_VERTICES);
    return 2;
  }
  g_autoptr(GHashTable) classes = g_hash_table_new_full(digest_hash, digest_equal, g_free, NULL);
  g_autoptr(GHashTable) exact_classes = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, NULL);
  guint64 graphs = 0;
  gint64 start = g_get_monotonic_time();
  for (guint n = 2; n <= max_vertices; n++) {
    guint slots = n * (n - 1) / 2;
    guint64 graphs_n = 0;
    guint before = g_hash_table_size(classes);
    for (guint64 bits = 0; bits < (G_GUINT64_CONSTANT(1) << slots); bits++) {
      if ((guint) __builtin_popcountll(bits) > NB101_MAX_EDGES)
        continue;
      Nb101Cell c = {.n = n};
      guint8 pred[NB101_MAX_VERTICES] = {0};
      for (guint j = 1; j < n; j++)
        for (guint i = 0; i < j; i++)
          if ((bits >> nb101_edge_slot(i, j)) & 1) {
            c.succ[i] |= 1u << j;
            pred[j] |= 1u << i;
          }
      /* is_full_dag: only the output lacks successors, only the input predecessors. */
      gboolean full = TRUE;
      for (guint v = 0; v < n && full; v++)
        full = (v + 1 == n || c.succ[v] != 0) && (v == 0 || pred[v] != 0);
      if (!full)
        continue;
      guint labellings = 1;
      for (guint v = 1; v + 1 < n; v++)
        labellings *= NB101_N_OPS;
      for (guint l = 0; l < labellings; l++) {
        guint rest = l;
        /* itertools.product order: the last vertex varies fastest. */
        for (guint v = n - 2; v >= 1 && v + 1 < n; v--) {
          c.op[v] = rest % NB101_N_OPS;
          rest /= NB101_N_OPS;
        }
        graphs_n++;
        guint8 *digest = g_malloc(16);
        nb101_cell_fingerprint(&c, digest);
        g_hash_table_add(classes, digest); /* a duplicate replaces (and frees) the equal key */
        if (exact) {
          gint64 *k = g_new(gint64, 1);
          *k = (gint64) canonical(&c);
          g_hash_table_add(exact_classes, k);
        }
      }
    }
    graphs += graphs_n;
    printf("vertices=%u graphs=%" G_GUINT64_FORMAT " new_classes=%u\n", n, graphs_n,
           g_hash_table_size(classes) - before);
  }
  double seconds = (g_get_monotonic_time() - start) / 1e6;
  printf("total graphs=%" G_GUINT64_FORMAT " classes=%u", graphs, g_hash_table_size(classes));
  if (exact)
    printf(" exact_classes=%u", g_hash_table_size(exact_classes));
  printf(" seconds=%.2f\n", seconds);
  if (expect_exact && g_hash_table_size(exact_classes) != g_hash_table_size(classes)) {
    fprintf(stderr, "nb101-count: the graph hash finds %u classes, the exact canonical form %u\n",
            g_hash_table_size(classes), g_hash_table_size(exact_classes));
    return 1;
  }
  if (expect >= 0 && g_hash_table_size(classes) != (guint) expect) {
    fprintf(stderr, "nb101-count: %u classes, expected %" G_GINT64_FORMAT "\n", g_hash_table_size(classes), expect);
    return 1;
  }
  return 0;
}
