/* sieve plugin: the NAS-Bench-101 cell space (Ying et al., "NAS-Bench-101:
 * Towards Reproducible Neural Architecture Search", ICML 2019).
 *
 * A cell is a DAG of at most 7 vertices and 9 edges: vertex 0 is the input,
 * vertex 6 the output, the 5 between are labelled conv3x3-bn-relu,
 * conv1x1-bn-relu or maxpool3x3.  The genotype is the benchmark's own
 * ModelSpec: 21 decisions edge_<i>_<j> ("0"/"1", one per upper-triangular
 * slot, in nasbench's bit order) and 5 decisions op_1..op_5.  Its text is
 * the ModelSpec's matrix and ops (nb101-text.h):
 *
 *   matrix=[[0,1,1,1,0,1,0],[0,0,0,0,0,0,1],...],ops=[input,conv1x1-bn-relu,...,output]
 *
 * As in nasbench, vertices off every input-to-output path are pruned; a
 * genotype is a member of the space when its input reaches its output and
 * the pruned cell has at most 9 edges (the class's check: sampling draws
 * until it holds, as the benchmark's random_spec() does, optimizers never
 * propose a genotype it refuses, and a text that breaks it is an error).
 * The structural hash is the benchmark's graph hash of the pruned cell
 * (graph_util.hash_module, byte for byte the dataset's key), so isomorphic
 * cells share it.  build() makes the benchmark's network (nb101-network.c);
 * the defaults are its CIFAR-10 setting (stem of 128 channels, 3 stacks of
 * 3 cells).
 */
#include <string.h>

#include <sieve/abi.h>
#include <sieve/component.h>
#include <sieve/graph.h>
#include <sieve/hash.h>
#include <sieve/options.h>
#include <sieve/plugin.h>
#include <sieve/space.h>

#include "nb101-cell.h"
#include "nb101-network.h"
#include "nb101-text.h"

static const char *const nb101_bits[] = {"0", "1", NULL};

/* The defaults are the benchmark's CIFAR-10 network. */
static const SieveOptionSpec nb101_options[] = {
  SIEVE_OPTION_INT("stem_channels", "128", 5, 4096,
                   "channels of the stem and the first stack (doubled at each later stack); at least 5, so that "
                   "every vertex feeding a cell's output gets a channel"),
  SIEVE_OPTION_INT("stacks", "3", 1, 8, "stacks of cells; a 2x2 max pool of stride 2 before each but the first"),
  SIEVE_OPTION_INT("cells", "3", 1, 64, "cells per stack"),
  SIEVE_OPTION_INT("in_channels", "3", 1, 4096, "channels of the input images"),
  SIEVE_OPTION_INT("size", "32", 1, 65536, "input height and width, divisible by 2^(stacks-1)"),
  SIEVE_OPTION_INT("classes", "10", 2, 1000000, "outputs of the final dense layer"),
  SIEVE_OPTION_FLOAT("bn_momentum", "0.003", 0, 1,
                     "batch-norm running-statistics momentum (PyTorch's convention); 0.003 is the benchmark's "
                     "TensorFlow decay of 0.997, short trainings want about 0.1"),
  SIEVE_OPTION_END,
};

static void
nb101_destroy(gpointer instance)
{
  g_free(instance);
}

static gpointer
nb101_create(SieveSpace *space, const SieveOptions *options, GError **error)
{
  Nb101Skeleton *self = g_new0(Nb101Skeleton, 1);
  self->stem = sieve_options_get_int(options, "stem_channels");
  self->stacks = sieve_options_get_int(options, "stacks");
  self->cells = sieve_options_get_int(options, "cells");
  self->in_channels = sieve_options_get_int(options, "in_channels");
  self->size = sieve_options_get_int(options, "size");
  self->classes = sieve_options_get_int(options, "classes");
  self->bn_momentum = sieve_options_get_double(options, "bn_momentum");
  guint halvings = 1u << (self->stacks - 1);
  /* TF's "same" 2x2 pooling rounds up, the IR's unpadded one down: they
   * agree on even extents only. */
  if (self->size % halvings != 0) {
    sieve_options_set_error(options, "size", error, "size %u is not divisible by %u: each of the %u stacks after "
                            "the first halves it", self->size, halvings, self->stacks - 1);
    g_free(self);
    return NULL;
  }
  g_autoptr(GString) name = g_string_new(NULL);
  for (guint j = 1; j < NB101_MAX_VERTICES; j++)
    for (guint i = 0; i < j; i++) {
      g_string_printf(name, "edge_%u_%u", i, j);
      guint d = sieve_space_add_categorical(space, name->str, 2, nb101_bits);
      g_assert(d == nb101_edge_slot(i, j));
    }
  for (guint v = 1; v <= NB101_INTERIOR; v++) {
    g_string_printf(name, "op_%u", v);
    sieve_space_add_categorical(space, name->str, NB101_N_OPS, nb101_op_names);
  }
  return self;
}

/* The 7-vertex cell a genotype writes (values already in their domains). */
static void
genotype_cell(const SieveGenotype *genotype, Nb101Cell *raw)
{
  *raw = (Nb101Cell){.n = NB101_MAX_VERTICES};
  for (guint j = 1; j < NB101_MAX_VERTICES; j++)
    for (guint i = 0; i < j; i++)
      if (sieve_genotype_get(genotype, nb101_edge_slot(i, j)) == 1)
        raw->succ[i] |= 1u << j;
  for (guint v = 1; v <= NB101_INTERIOR; v++) {
    double op = sieve_genotype_get(genotype, NB101_EDGE_SLOTS + v - 1);
    raw->op[v] = op >= 0 && op < NB101_N_OPS ? (guint8) op : 0;
  }
}

static gboolean
nb101_check(gpointer instance, const SieveSpace *space, const SieveGenotype *genotype, GError **error)
{
  Nb101Cell raw, cell;
  genotype_cell(genotype, &raw);
  return nb101_cell_prune(&raw, &cell, error);
}

static gboolean
nb101_hash(gpointer instance, const SieveSpace *space, const SieveGenotype *genotype, SieveHash *out, GError **error)
{
  Nb101Cell raw, cell;
  genotype_cell(genotype, &raw);
  if (!nb101_cell_prune(&raw, &cell, error))
    return FALSE;
  guint8 d[16];
  nb101_cell_fingerprint(&cell, d);
  /* Big-endian halves: the hash's text is the benchmark's hexdigest. */
  out->hi = out->lo = 0;
  for (guint k = 0; k < 8; k++) {
    out->hi = out->hi << 8 | d[k];
    out->lo = out->lo << 8 | d[8 + k];
  }
  return TRUE;
}

static SieveGraph *
nb101_build(gpointer instance, const SieveSpace *space, const SieveGenotype *genotype, GError **error)
{
  const Nb101Skeleton *self = instance;
  if (!sieve_space_validate(space, genotype, error))
    return NULL;
  Nb101Cell raw, cell;
  genotype_cell(genotype, &raw);
  if (!nb101_cell_prune(&raw, &cell, error))
    return NULL;
  g_autofree char *name = sieve_space_format(space, genotype);
  return nb101_network_build(self, &cell, name, error);
}

static char *
nb101_format(gpointer instance, const SieveSpace *space, const SieveGenotype *genotype)
{
  Nb101Cell raw;
  genotype_cell(genotype, &raw);
  return nb101_text_format(&raw);
}

static SieveGenotype *
nb101_parse(gpointer instance, const SieveSpace *space, const char *text, GError **error)
{
  Nb101Cell raw;
  if (!nb101_text_parse(text, &raw, error))
    return NULL;
  g_autoptr(SieveGenotype) genotype = sieve_genotype_new(space);
  for (guint j = 1; j < NB101_MAX_VERTICES; j++)
    for (guint i = 0; i < j; i++)
      sieve_genotype_set(genotype, nb101_edge_slot(i, j), nb101_cell_has_edge(&raw, i, j));
  for (guint v = 1; v <= NB101_INTERIOR; v++)
    sieve_genotype_set(genotype, NB101_EDGE_SLOTS + v - 1, raw.op[v]);
  return g_steal_pointer(&genotype);
}

/* The scale the functional hash runs at (sieve/hash.h): one cell per stack,
 * 8 channels in the first (each of up to 5 vertices feeding an output keeps
 * a channel), 16x16 inputs (stacks at 16, 8 and 4 pixels, where a 3x3 max
 * pool is not yet idempotent). */
static const char *const nb101_probe_options[] = {"stem_channels=8", "cells=1", "size=16", NULL};

static const SieveSpaceClass nb101_class = {
  .create = nb101_create,
  .destroy = nb101_destroy,
  .format = nb101_format,
  .parse = nb101_parse,
  .build = nb101_build,
  .probe_options = nb101_probe_options,
  .check = nb101_check,
  .hash = nb101_hash,
};

static const SieveComponentInfo nb101_info = {
  .kind = SIEVE_KIND_SPACE,
  .name = "nb101",
  .summary = "NAS-Bench-101 cell: DAG of <= 7 vertices and <= 9 edges, 3 operations (423,624 distinct cells)",
  .options = nb101_options,
  .klass = &nb101_class,
};

static gboolean
nb101_init(SieveRegistry *registry, GError **error)
{
  return sieve_registry_add(registry, &nb101_info, error);
}

SIEVE_PLUGIN_DEFINE("nb101", "0.1.0", "The NAS-Bench-101 cell search space", "MIT", nb101_init);
