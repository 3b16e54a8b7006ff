/* The NAS-Bench-101 cell as a graph (private to the plugin and its
 * enumerator): pruning, the edge limit, the benchmark's graph hash and its
 * channel split (Ying et al., "NAS-Bench-101: Towards Reproducible Neural
 * Architecture Search", ICML 2019; the authors' nasbench/lib/model_spec.py,
 * graph_util.py and model_builder.py are the reference semantics).
 *
 *   Nb101Cell raw = ..., cell;
 *   if (!nb101_cell_prune(&raw, &cell, error)) ...   // disconnected or > 9 edges
 *   guint8 md5[16];
 *   nb101_cell_fingerprint(&cell, md5);               // the dataset's module hash
 */
#pragma once

#include <glib.h>

#define NB101_MAX_VERTICES 7
#define NB101_MAX_EDGES 9
/* Upper-triangular slots of a 7x7 matrix. */
#define NB101_EDGE_SLOTS (NB101_MAX_VERTICES * (NB101_MAX_VERTICES - 1) / 2)
#define NB101_INTERIOR (NB101_MAX_VERTICES - 2)

/* Interior labels in the benchmark's order (its config's available_ops),
 * which is what its hash labels and the categorical indices mean. */
typedef enum {
  NB101_OP_CONV3X3,
  NB101_OP_CONV1X1,
  NB101_OP_MAXPOOL3X3,
  NB101_N_OPS
} Nb101Op;

/* n vertices: 0 is the input, n-1 the output; succ[i] has bit j set for an
 * edge i -> j (only j > i); op[v] labels interior vertices 1..n-2. */
typedef struct {
  guint n;
  guint8 succ[NB101_MAX_VERTICES];
  guint8 op[NB101_MAX_VERTICES];
} Nb101Cell;

/* The benchmark's names: "input", the three operations, "output". */
extern const char *const nb101_op_names[NB101_N_OPS + 1];
#define NB101_INPUT_NAME "input"
#define NB101_OUTPUT_NAME "output"

/* Slot of edge i -> j (i < j) in nasbench's bit order (graph_util's
 * gen_is_edge_fn): column by column, 0->1, 0->2, 1->2, 0->3, ... */
static inline guint
nb101_edge_slot(guint i, guint j)
{
  return i + j * (j - 1) / 2;
}

static inline gboolean
nb101_cell_has_edge(const Nb101Cell *c, guint i, guint j)
{
  return (c->succ[i] >> j) & 1;
}

guint nb101_cell_edges(const Nb101Cell *cell);

/* model_spec._prune: drops the vertices not on a path from the input to the
 * output, keeping the order of the rest.  FALSE + error when the input does
 * not reach the output (nasbench's "disconnected" spec) or the pruned cell
 * has more than NB101_MAX_EDGES edges (its api.is_valid). */
gboolean nb101_cell_prune(const Nb101Cell *raw, Nb101Cell *out, GError **error);

/* graph_util.hash_module of a pruned cell with nasbench's labels (-1 input,
 * -2 output, the Nb101Op index inside): MD5 digest of the iterated
 * neighbourhood hash, byte for byte the key of the published dataset.
 * Invariant under relabelling the interior vertices. */
void nb101_cell_fingerprint(const Nb101Cell *cell, guint8 digest[16]);

/* model_builder.compute_vertex_channels of a pruned cell: channels[v] for
 * every vertex.  FALSE + error when out_channels cannot give each vertex
 * feeding the output at least one channel. */
gboolean nb101_cell_channels(const Nb101Cell *cell, guint in_channels, guint out_channels,
                             guint channels[NB101_MAX_VERTICES], GError **error);
