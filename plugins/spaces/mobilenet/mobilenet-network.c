/* The mobilenet network: MobileNetV2's skeleton (Sandler et al., "MobileNetV2:
 * Inverted Residuals and Linear Bottlenecks", CVPR 2018, table 2 and
 * torchvision's mobilenet_v2) with ProxylessNAS's per-block choices (Cai et
 * al., ICLR 2019) and MobileNetV3's squeeze-and-excitation and hard-swish
 * (Howard et al., ICCV 2019):
 *
 *   stem: conv3x3(stem_channels, stem_stride) + BN + ReLU
 *   first block: MBConv k3 e1 (depthwise 3x3, project to first_channels)
 *   stages: block positions, each an MBConv(k, e) or (after the first) skip
 *   head: conv1x1(last_channels) + BN + ReLU, global average pool, linear(classes)
 *
 * An MBConv(k, e) block from c_in to c_out, stride s, mid = round(c_in e):
 *   [conv1x1(mid) + BN + act]   (absent when e = 1)
 *   depthwise conv kxk(mid, s, groups mid, pad k/2) + BN + act
 *   [squeeze-and-excitation: x * hard_sigmoid(conv1x1(relu(conv1x1(gap(x)))))
 *    with make_divisible(mid / 4, 8) squeezed channels and biases, as
 *    torchvision's MobileNetV3]
 *   conv1x1(c_out) + BN                   (the linear bottleneck: no act)
 *   + x when s = 1 and c_in = c_out       (the inverted residual)
 * act is ReLU, or hard-swish where the block chooses it.  Convolutions have
 * no bias and are followed by an affine batch norm, as in both papers, so
 * the parameter count is theirs.  MobileNetV2 and ProxylessNAS clip ReLU at
 * 6; the IR has no ReLU6, and the plain ReLU changes no count. */
#include <math.h>

#include "mobilenet-network.h"

guint
mb_make_divisible(double v, guint divisor)
{
  guint n = MAX(divisor, (guint)(v + divisor / 2.0) / divisor * divisor);
  if (n < 0.9 * v)
    n += divisor;
  return n;
}

typedef struct {
  SieveGraph *graph;
  GString *label;
  const char *prefix;
} Builder;

static guint
labelled(Builder *b, guint node, const char *what)
{
  if (node == SIEVE_NODE_INVALID)
    return node;
  g_string_printf(b->label, "%s.%s", b->prefix, what);
  sieve_graph_set_label(b->graph, node, b->label->str);
  return node;
}

/* conv (no bias) + BN [+ act]; groups = channels for a depthwise one. */
static guint
conv_bn(Builder *b, guint x, guint out, guint kernel, guint stride, guint groups, int act, const char *what)
{
  SieveOpAttrs a = {.out_channels = out,
                    .kernel = {kernel, kernel},
                    .stride = {stride, stride},
                    .pad = {kernel / 2, kernel / 2},
                    .dilation = {1, 1},
                    .groups = groups};
  g_autofree char *conv = g_strdup_printf("%s.conv", what), *bn = g_strdup_printf("%s.bn", what),
                  *an = g_strdup_printf("%s.act", what);
  x = labelled(b, x == SIEVE_NODE_INVALID ? x : sieve_graph_add(b->graph, SIEVE_OP_CONV2D, &x, 1, &a), conv);
  x = labelled(b, sieve_graph_batch_norm(b->graph, x), bn);
  if (act >= 0)
    x = labelled(b, sieve_graph_activation(b->graph, x, (SieveActivation)act, 0), an);
  return x;
}

static guint
squeeze_excite(Builder *b, guint x, guint channels)
{
  guint squeezed = mb_make_divisible(channels / 4.0, 8);
  guint s = labelled(b, sieve_graph_global_avg_pool(b->graph, x), "se.pool");
  s = labelled(b, sieve_graph_conv2d(b->graph, s, squeezed, 1, 1, 0, TRUE), "se.reduce");
  s = labelled(b, sieve_graph_relu(b->graph, s), "se.relu");
  s = labelled(b, sieve_graph_conv2d(b->graph, s, channels, 1, 1, 0, TRUE), "se.expand");
  s = labelled(b, sieve_graph_activation(b->graph, s, SIEVE_ACT_HARD_SIGMOID, 0), "se.gate");
  return labelled(b, sieve_graph_mul(b->graph, x, s), "se.scale");
}

static guint
mbconv(Builder *b, guint x, guint in, guint out, guint stride, const MbBlock *blk)
{
  int act = blk->hard_swish ? SIEVE_ACT_HARD_SWISH : SIEVE_ACT_RELU;
  guint mid = (guint)lround((double)in * blk->expansion);
  guint h = x;
  if (blk->expansion != 1)
    h = conv_bn(b, h, mid, 1, 1, 1, act, "expand");
  h = conv_bn(b, h, mid, blk->kernel, stride, mid, act, "depthwise");
  if (blk->se)
    h = squeeze_excite(b, h, mid);
  h = conv_bn(b, h, out, 1, 1, 1, -1, "project");
  if (stride == 1 && in == out)
    h = labelled(b, sieve_graph_sum(b->graph, (guint[]){x, h}, 2), "residual");
  return h;
}

SieveGraph *
mb_network_build(const MbSkeleton *sk, const MbBlock *blocks, const char *name, GError **error)
{
  g_autoptr(SieveGraph) graph = sieve_graph_new(name);
  g_autoptr(GString) label = g_string_new(NULL);
  g_autoptr(GString) prefix = g_string_new("stem");
  Builder b = {graph, label, prefix->str};
  guint x = labelled(&b, sieve_graph_input(graph, sk->in_channels, sk->size, sk->size), "input");
  x = conv_bn(&b, x, sk->stem_channels, 3, sk->stem_stride, 1, SIEVE_ACT_RELU, "stem");
  guint c = sk->stem_channels;
  if (sk->first_channels) {
    b.prefix = "first";
    MbBlock first = {.kernel = 3, .expansion = 1};
    x = mbconv(&b, x, c, sk->first_channels, 1, &first);
    c = sk->first_channels;
  }
  guint k = 0;
  for (guint i = 0; i < sk->n_stages; i++)
    for (guint j = 0; j < sk->stages[i].max_blocks; j++, k++) {
      if (blocks[k].skip)
        continue;
      g_string_printf(prefix, "s%ub%u", i + 1, j + 1);
      b.prefix = prefix->str;
      x = mbconv(&b, x, c, sk->stages[i].channels, j == 0 ? sk->stages[i].stride : 1, &blocks[k]);
      c = sk->stages[i].channels;
    }
  b.prefix = "head";
  if (sk->last_channels)
    x = conv_bn(&b, x, sk->last_channels, 1, 1, 1, SIEVE_ACT_RELU, "last");
  x = labelled(&b, sieve_graph_global_avg_pool(graph, x), "pool");
  x = labelled(&b, sieve_graph_linear(graph, x, sk->classes, TRUE), "linear");
  if (!sieve_graph_finish(graph, x, error))
    return NULL;
  return g_steal_pointer(&graph);
}
