/* The DARTS evaluation network as a sieve graph (private to the plugin). */
#pragma once

#include <sieve/graph.h>

#define DARTS_STEPS 4 /* intermediate nodes per cell: 2..5 (0 and 1 are the cell's inputs) */
#define DARTS_CELL_TYPES 2

/* The evaluation operations, in the order of DARTS's PRIMITIVES without
 * 'none' (which no derived genotype holds): what the categorical
 * decisions' indices mean. */
typedef enum {
  DARTS_OP_MAX_POOL_3X3,
  DARTS_OP_AVG_POOL_3X3,
  DARTS_OP_SKIP_CONNECT,
  DARTS_OP_SEP_CONV_3X3,
  DARTS_OP_SEP_CONV_5X5,
  DARTS_OP_DIL_CONV_3X3,
  DARTS_OP_DIL_CONV_5X5,
  DARTS_N_OPS
} DartsOp;

enum { DARTS_NORMAL, DARTS_REDUCE };

/* One cell: intermediate node 2 + k sums op[k][0] applied to state
 * input[k][0] and op[k][1] applied to state input[k][1]; every
 * intermediate node is concatenated (DARTS's *_concat = [2, 3, 4, 5]). */
typedef struct {
  guint input[DARTS_STEPS][2];
  DartsOp op[DARTS_STEPS][2];
} DartsCell;

/* The skeleton's size options (the space's option table). */
typedef struct {
  guint C;           /* channels of the first cells (the stem has 3C) */
  guint layers;      /* cells; reductions at layers/3 and 2*layers/3 */
  guint in_channels; /* of the input image */
  guint size;        /* input height = width */
  guint classes;     /* logits */
} DartsSkeleton;

/* Whether the extent halves evenly at each reduction (a factorized
 * reduction concatenates x and x[1:, 1:] strided by 2, which agree only on
 * even extents); FALSE with *at the odd extent otherwise. */
gboolean darts_skeleton_fits(const DartsSkeleton *skeleton, guint *at);

/* The network of cells[DARTS_NORMAL] and cells[DARTS_REDUCE], ending in
 * logits.  (transfer full) a finished graph, or NULL + error. */
SieveGraph *darts_network_build(const DartsSkeleton *skeleton, const DartsCell cells[DARTS_CELL_TYPES],
                                const char *name, GError **error);
