/* The NAS-Bench-101 network skeleton as a sieve graph (private to the plugin). */
#pragma once

#include <sieve/graph.h>

#include "nb101-cell.h"

/* The skeleton's size options (the space's option table). */
typedef struct {
  guint stem;        /* channels of the stem and the first stack; doubled at each later one */
  guint stacks;      /* stacks of cells, a 2x2 max pool (stride 2) before each but the first */
  guint cells;       /* cells per stack */
  guint in_channels; /* of the input image */
  guint size;        /* input height = width; divisible by 2^(stacks-1) */
  guint classes;     /* logits */
  double bn_momentum; /* PyTorch's convention: running = (1-m) running + m batch */
} Nb101Skeleton;

/* The network of a pruned cell, ending in logits; name names the graph in
 * messages.  (transfer full) a finished graph, or NULL + error. */
SieveGraph *nb101_network_build(const Nb101Skeleton *skeleton, const Nb101Cell *cell, const char *name,
                                GError **error);
