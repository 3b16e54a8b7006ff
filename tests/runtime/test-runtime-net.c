/* Whole NAS-Bench-201 networks, as the nb201 space builds them, on the CPU
 * runtime against the reference: every node's forward value and the
 * gradients of every parameter tensor and of the input (central finite
 * differences on a random sample of each tensor's entries).  The cells
 * exercise what single ops do not: ReLUs of one node shared by several
 * edges, zero edges folded out of sums, identities, pools and convolutions
 * summed into one node, the reduction blocks and the head.
 *
 * Scale: C=4, N=1, 8x8 inputs with 2 channels, batch 3, 10 classes.
 * Tolerances: forward |rt - ref| <= 5e-5 + 5e-4 |ref| (batch norms divide
 * by batch standard deviations, which magnifies float32 rounding a little
 * more than single ops do); gradients |rt - fd| <= 2e-4 |fd| + 2e-4 max(s,
 * S/100), with s the largest |fd| in the tensor and S in the network, step
 * 1e-6, and no ReLU input within 1e-4 of 0. */
#include <math.h>
#include <string.h>

#include "check.h"

#include "test-support.h"

#define FWD_RTOL 5e-4
#define FWD_ATOL 5e-5
#define FD_STEP 1e-6
#define GRAD_RTOL 2e-4
#define GRAD_ATOL 2e-4
#define KINK_MARGIN 1e-4
#define ENTRIES 8 /* per tensor */

static SieveRegistry *registry;

static SieveSpace *
space_new(void)
{
  const SieveComponent *c = sieve_registry_lookup(registry, SIEVE_KIND_SPACE, "nb201");
  if (c == NULL)
    g_error("space 'nb201' is not in the build tree's plugins");
  GError *error = NULL;
  g_autoptr(SieveNode) map =
    sieve_node_parse_string("{C: 4, N: 1, size: 8, in_channels: 2, classes: 10}", -1, "test.yaml", &error);
  g_assert_no_error(error);
  static const char *const reserved[] = {"plugin", NULL};
  g_autoptr(SieveOptions) options =
    sieve_options_new(sieve_component_get_info(c)->options, map, reserved, NULL, "test", &error);
  g_assert_no_error(error);
  SieveSpace *space = sieve_space_new(c, options, &error);
  g_assert_no_error(error);
  return space;
}

static SieveGraph *
build(const char *arch, gboolean loss)
{
  g_autoptr(SieveSpace) space = space_new();
  return test_space_net(space, arch, loss);
}

static const char *const archs[] = {
  /* arch 1 of the issue: conv3x3s, a pool, skips */
  "|nor_conv_3x3~0|+|nor_conv_3x3~0|avg_pool_3x3~1|+|skip_connect~0|nor_conv_3x3~1|skip_connect~2|",
  /* zero edges, 1x1 convolutions, three ReLUs of node 0 */
  "|nor_conv_1x1~0|+|none~0|skip_connect~1|+|nor_conv_3x3~0|none~1|nor_conv_1x1~2|",
  /* node 3 is only a pool and a skip: no ReLU in its sum */
  "|avg_pool_3x3~0|+|nor_conv_1x1~0|none~1|+|none~0|avg_pool_3x3~1|skip_connect~2|",
};

static void
test_arch(gconstpointer data)
{
  guint i = GPOINTER_TO_UINT(data);
  for (int loss = 0; loss <= 1; loss++) {
    g_autoptr(Case) c = case_new(build(archs[i], loss), 3, 200 + 10 * i + loss, TRUE);
    case_randomise_params(c, 300 + i);
    double margin = case_pick_input(c, KINK_MARGIN);
    double f = case_check_forward(c, SIEVE_MODE_TRAIN, FWD_RTOL, FWD_ATOL);
    double r = case_check_grads(c, FD_STEP, GRAD_RTOL, GRAD_ATOL, ENTRIES, FALSE);
    g_test_message("%s%s: %u params, kink margin %.2g, worst forward error %.2g and gradient error %.2g of the "
                   "tolerance",
                   archs[i], loss ? " + loss" : "", sieve_runtime_n_params(c->rt), margin, f, r);
  }
}

/* Every edge none: the cells output zeros, which the head's batch norm
 * turns into its beta; the forward must still match. */
static void
test_all_none(void)
{
  g_autoptr(Case) c = case_new(build("|none~0|+|none~0|none~1|+|none~0|none~1|none~2|", TRUE), 3, 250, TRUE);
  case_randomise_params(c, 251);
  case_check_forward(c, SIEVE_MODE_TRAIN, FWD_RTOL, FWD_ATOL);
  GError *error = NULL;
  sieve_runtime_backward(c->rt, NULL, &error);
  g_assert_no_error(error);
  /* Only the head's beta and the linear layer can move the loss. */
  g_autofree float *gx = g_new(float, c->batch * c->in_size);
  sieve_runtime_read_input_grad(c->rt, gx, &error);
  g_assert_no_error(error);
  for (gsize k = 0; k < c->batch * c->in_size; k++)
    g_assert_cmpfloat(gx[k], ==, 0);
}

int
main(int argc, char **argv)
{
  g_test_init(&argc, &argv, NULL);
  registry = test_registry_load();
  for (guint i = 0; i < G_N_ELEMENTS(archs); i++) {
    g_autofree char *path = g_strdup_printf("/runtime/net/nb201/%u", i);
    g_test_add_data_func(path, GUINT_TO_POINTER(i), test_arch);
  }
  g_test_add_func("/runtime/net/nb201/all-none", test_all_none);
  int status = g_test_run();
  sieve_registry_free(registry);
  return status;
}
