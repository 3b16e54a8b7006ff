/* The NAS-Bench-201 macro skeleton as a sieve graph (private to the plugin). */
#pragma once

#include <sieve/graph.h>

#define NB201_NODES 4 /* node 0 is the cell input */
#define NB201_EDGES 6

/* The cell operations, in the benchmark's order (NAS-Bench-201's
 * `SearchCellOps`), which is what the categorical decisions' indices mean. */
typedef enum {
  NB201_OP_NONE,
  NB201_OP_SKIP_CONNECT,
  NB201_OP_NOR_CONV_1X1,
  NB201_OP_NOR_CONV_3X3,
  NB201_OP_AVG_POOL_3X3,
  NB201_N_OPS
} Nb201Op;

/* The skeleton's size options (the space's option table). */
typedef struct {
  guint C;           /* channels of the first stage; 2C and 4C follow */
  guint N;           /* cells per stage */
  guint in_channels; /* of the input image */
  guint size;        /* input height = width; a multiple of 4 (two halvings) */
  guint classes;     /* logits */
} Nb201Skeleton;

/* Edge index of node j <- node i (j in 1..3, i < j): the decisions' order,
 * edge_1_0, edge_2_0, edge_2_1, edge_3_0, edge_3_1, edge_3_2. */
static inline guint
nb201_edge_index(guint j, guint i)
{
  return j * (j - 1) / 2 + i;
}

/* The network of the cell whose edge e applies ops[e], ending in logits.
 * name names the graph in messages (the arch string).
 * (transfer full) a finished graph, or NULL + error. */
SieveGraph *nb201_network_build(const Nb201Skeleton *skeleton, const Nb201Op ops[NB201_EDGES], const char *name,
                                GError **error);
