/* The mobilenet space's network as a sieve graph (private to the plugin). */
#pragma once

#include <sieve/graph.h>

/* One MBConv choice: depthwise kernel and expansion ratio. */
typedef struct {
  guint kernel, expansion;
} MbOp;

/* A stage: output channels (after the width multiplier), the stride of its
 * first block, and how many block positions it has. */
typedef struct {
  guint channels, stride, max_blocks;
} MbStage;

/* What one block position holds. */
typedef struct {
  gboolean skip;              /* no block: the stage is shallower */
  guint kernel, expansion;
  gboolean se, hard_swish;
} MbBlock;

/* The network around the blocks, channels already scaled by the width. */
typedef struct {
  guint in_channels, size, classes;
  guint stem_channels, stem_stride;
  guint first_channels; /* the fixed MBConv(k3, e1) block after the stem; 0: none */
  guint last_channels;  /* the 1x1 convolution before pooling; 0: none */
  MbStage *stages;
  guint n_stages;
} MbSkeleton;

/* MobileNetV2's channel rounding (Sandler et al. 2018; torchvision's
 * _make_divisible): the multiple of divisor nearest v, at least divisor,
 * never more than 10% below v. */
guint mb_make_divisible(double v, guint divisor);

/* The network whose block positions (stage by stage, max_blocks each) hold
 * blocks[], ending in logits. (transfer full) a finished graph, or NULL + error. */
SieveGraph *mb_network_build(const MbSkeleton *skeleton, const MbBlock *blocks, const char *name, GError **error);
