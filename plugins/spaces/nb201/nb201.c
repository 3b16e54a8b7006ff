/* sieve plugin: the NAS-Bench-201 cell space (Dong & Yang, "NAS-Bench-201:
 * Extending the Scope of Reproducible Neural Architecture Search", ICLR 2020).
 *
 * A cell is a DAG of 4 nodes; node j (1..3) sums one operation applied to
 * each earlier node i.  That gives 6 edges, each one of 5 operations, so
 * 5^6 = 15,625 cells.  The genotype is one categorical decision per edge,
 * named edge_<j>_<i>, and the canonical text is the benchmark's own arch
 * string, so genotypes key straight into the published table:
 *
 *   |op~0|+|op~0|op~1|+|op~0|op~1|op~2|
 *    node1  node2        node3
 *
 * build() makes the benchmark's network (network.c); its size options are
 * C, N, in_channels, size and classes, whose defaults are the benchmark's
 * CIFAR-10 setting.
 */
#include <string.h>

#include <sieve/abi.h>
#include <sieve/component.h>
#include <sieve/graph.h>
#include <sieve/options.h>
#include <sieve/plugin.h>
#include <sieve/space.h>
#include <sieve/text.h>

#include "nb201-network.h"

/* In the benchmark's order (NAS-Bench-201 `SearchCellOps`), which is what
 * the categorical indices mean. */
static const char *const nb201_ops[] = {
  "none", "skip_connect", "nor_conv_1x1", "nor_conv_3x3", "avg_pool_3x3", NULL,
};
G_STATIC_ASSERT(G_N_ELEMENTS(nb201_ops) == NB201_N_OPS + 1);

static const char *const nb201_edge_names[NB201_EDGES] = {
  "edge_1_0", "edge_2_0", "edge_2_1", "edge_3_0", "edge_3_1", "edge_3_2",
};

/* The defaults are the benchmark's CIFAR-10 network. */
static const SieveOptionSpec nb201_options[] = {
  SIEVE_OPTION_INT("C", "16", 1, 4096, "channels of the first stage (the second has 2C, the third 4C)"),
  SIEVE_OPTION_INT("N", "5", 1, 256, "cells per stage"),
  SIEVE_OPTION_INT("in_channels", "3", 1, 4096, "channels of the input images"),
  SIEVE_OPTION_INT("size", "32", 4, 65536, "input height and width, a multiple of 4 (the network halves it twice)"),
  SIEVE_OPTION_INT("classes", "10", 2, 1000000, "outputs of the final linear layer"),
  SIEVE_OPTION_END,
};

static void
nb201_destroy(gpointer instance)
{
  g_free(instance);
}

static gpointer
nb201_create(SieveSpace *space, const SieveOptions *options, GError **error)
{
  Nb201Skeleton *self = g_new0(Nb201Skeleton, 1);
  self->C = sieve_options_get_int(options, "C");
  self->N = sieve_options_get_int(options, "N");
  self->in_channels = sieve_options_get_int(options, "in_channels");
  self->size = sieve_options_get_int(options, "size");
  self->classes = sieve_options_get_int(options, "classes");
  /* Each reduction block adds a stride-2 conv (which rounds up) to a 2x2
   * pooling (which rounds down): they agree only on even extents. */
  if (self->size % 4 != 0) {
    sieve_options_set_error(options, "size", error,
                            "size %u is not a multiple of 4: the two reduction blocks each halve it", self->size);
    g_free(self);
    return NULL;
  }
  for (guint e = 0; e < NB201_EDGES; e++)
    sieve_space_add_categorical(space, nb201_edge_names[e], NB201_N_OPS, nb201_ops);
  return self;
}

static SieveGraph *
nb201_build(gpointer instance, const SieveSpace *space, const SieveGenotype *genotype, GError **error)
{
  const Nb201Skeleton *self = instance;
  Nb201Op ops[NB201_EDGES];
  for (guint e = 0; e < NB201_EDGES; e++) {
    double v = sieve_genotype_get(genotype, e);
    if (!(v >= 0 && v < NB201_N_OPS && v == (guint) v)) {
      g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_GRAPH, "nb201: decision %s has value %g, expected an operation 0..%d",
                  nb201_edge_names[e], v, NB201_N_OPS - 1);
      return NULL;
    }
    ops[e] = (Nb201Op) v;
  }
  g_autofree char *name = sieve_space_format(space, genotype);
  return nb201_network_build(self, ops, name, error);
}

static char *
nb201_format(gpointer instance, const SieveSpace *space, const SieveGenotype *genotype)
{
  GString *out = g_string_new("|");
  for (guint j = 1; j < NB201_NODES; j++) {
    if (j > 1)
      g_string_append(out, "+|");
    for (guint i = 0; i < j; i++) {
      double v = sieve_genotype_get(genotype, nb201_edge_index(j, i));
      g_return_val_if_fail(v >= 0 && v < NB201_N_OPS, g_string_free(out, TRUE));
      g_string_append_printf(out, "%s~%u|", nb201_ops[(guint) v], i);
    }
  }
  return g_string_free(out, FALSE);
}

static void
parse_error(GError **error, const char *format, ...) G_GNUC_PRINTF(2, 3);

static void
parse_error(GError **error, const char *format, ...)
{
  va_list args;
  va_start(args, format);
  g_autofree char *message = g_strdup_vprintf(format, args);
  va_end(args);
  g_set_error_literal(error, SIEVE_ERROR, SIEVE_ERROR_PARSE, message);
}

/* What stands at p, for messages: "'x'" (a whole UTF-8 character) or "the end". (transfer full) */
static char *
describe_at(const char *p)
{
  return sieve_text_quote_at(p, NULL, 1);
}

/* How many '|'-separated operations node j holds starting at p (which
 * follows the node's opening '|'), up to its '+' or the end. */
static guint
count_inputs(const char *p)
{
  guint n = 0;
  while (*p != '\0' && *p != '+') {
    const char *bar = strchr(p, '|');
    n++;
    if (bar == NULL)
      break;
    p = bar + 1;
  }
  return n;
}

/* Whether the text at p reads as one more operation ("op~N|"): else it is
 * stray text, and "extra operation" would mislead. */
static gboolean
looks_like_operation(const char *p)
{
  const char *tilde = strchr(p, '~'), *bar = strchr(p, '|');
  return tilde != NULL && bar != NULL && tilde > p && tilde < bar;
}

static SieveGenotype *
nb201_parse(gpointer instance, const SieveSpace *space, const char *text, GError **error)
{
  g_autoptr(SieveGenotype) genotype = sieve_genotype_new(space);
  const char *p = text;
  /* Positions in messages are 1-based character numbers. */
#define AT(q) sieve_text_char_number(text, (q))

  if (*p != '|') {
    parse_error(error, "missing leading '|' at character 1 (an arch string looks like "
                       "|op~0|+|op~0|op~1|+|op~0|op~1|op~2|)");
    return NULL;
  }
  p++;
  for (guint j = 1; j < NB201_NODES; j++) {
    const char *node_start = p;
    for (guint i = 0; i < j; i++) {
      if (*p == '\0' || *p == '+') {
        parse_error(error, "node %u needs %u input%s, got %u (at character %u)", j, j, j == 1 ? "" : "s", i,
                    AT(p));
        return NULL;
      }
      /* The operation name runs to the '~'. */
      const char *name = p;
      while (*p != '\0' && *p != '~' && *p != '|' && *p != '+')
        p++;
      g_autofree char *op = g_strndup(name, p - name);
      gint k = -1;
      for (guint o = 0; o < NB201_N_OPS; o++)
        if (strcmp(op, nb201_ops[o]) == 0)
          k = (gint) o;
      if (k < 0) {
        g_autofree char *list = g_strjoinv(", ", (char **) nb201_ops);
        if (op[0] == '\0')
          parse_error(error, "expected an operation at character %u, got %s (expected one of %s)", AT(name),
                      *name == '|' ? "'|'" : *name == '~' ? "'~'" : "nothing", list);
        else
          parse_error(error, "unknown operation '%s' at character %u (expected one of %s)", op, AT(name), list);
        return NULL;
      }
      /* "~i": the edge's source node, which the format fixes to i. */
      const char *tilde = p;
      gboolean ok = p[0] == '~' && g_ascii_isdigit(p[1]);
      guint64 source = 0;
      if (ok) {
        char *end = NULL;
        source = g_ascii_strtoull(p + 1, &end, 10);
        ok = source == i && end == p + 2;
        p = end;
      }
      if (!ok) {
        const char *stop = tilde;
        while (*stop != '\0' && *stop != '|' && *stop != '+')
          stop++;
        g_autofree char *got = g_strndup(tilde, stop - tilde);
        parse_error(error, "expected '~%u' after '%s' at character %u, got %s%s%s", i, op, AT(tilde),
                    got[0] ? "'" : "nothing", got, got[0] ? "'" : "");
        return NULL;
      }
      if (*p != '|') {
        g_autofree char *what = describe_at(p);
        parse_error(error, "expected '|' at character %u, got %s", AT(p), what);
        return NULL;
      }
      p++;
      sieve_genotype_set(genotype, nb201_edge_index(j, i), k);
    }
    /* The node is complete: then comes "+|" before the next node, or the end. */
    if (j + 1 < NB201_NODES) {
      if (*p != '+' && *p != '\0' && !looks_like_operation(p)) {
        g_autofree char *what = describe_at(p);
        parse_error(error, "expected '+|' after node %u at character %u, got %s", j, AT(p), what);
        return NULL;
      }
      if (*p != '+' && *p != '\0') {
        parse_error(error, "node %u needs %u input%s, got %u (extra operation at character %u)", j, j,
                    j == 1 ? "" : "s", count_inputs(node_start), AT(p));
        return NULL;
      }
      if (*p != '+') {
        parse_error(error, "the text ends after node %u at character %u; expected '+|' and node %u", j, AT(p),
                    j + 1);
        return NULL;
      }
      p++;
      if (*p != '|') {
        g_autofree char *what = describe_at(p);
        parse_error(error, "expected '|' after '+' at character %u, got %s", AT(p), what);
        return NULL;
      }
      p++;
    } else if (*p != '\0') {
      if (*p == '+')
        parse_error(error, "unexpected '+' at character %u: the cell has only 3 nodes", AT(p));
      else if (!looks_like_operation(p))
        parse_error(error, "trailing characters at character %u after the last node: '%s'", AT(p), p);
      else
        parse_error(error, "node %u needs %u inputs, got %u (extra operation at character %u)", j, j,
                    count_inputs(node_start), AT(p));
      return NULL;
    }
  }
#undef AT
  return g_steal_pointer(&genotype);
}

/* The scale the functional hash runs at (sieve/hash.h): the cell once per
 * stage, 4 channels, 16x16 inputs (stages at 16, 8 and 4 pixels).  At 8x8
 * the last stage is 2x2, where a 3x3 average pool is idempotent, and cells
 * that differ by a pool came too close; larger probes find the same classes
 * (README.md, "Functional hashing"). */
static const char *const nb201_probe_options[] = {"C=4", "N=1", "size=16", NULL};

static const SieveSpaceClass nb201_class = {
  .create = nb201_create,
  .destroy = nb201_destroy,
  .format = nb201_format,
  .parse = nb201_parse,
  .build = nb201_build,
  .probe_options = nb201_probe_options,
};

static const SieveComponentInfo nb201_info = {
  .kind = SIEVE_KIND_SPACE,
  .name = "nb201",
  .summary = "NAS-Bench-201 cell: 6 edges, 5 operations each (15,625 architectures)",
  .options = nb201_options,
  .klass = &nb201_class,
};

static gboolean
nb201_init(SieveRegistry *registry, GError **error)
{
  return sieve_registry_add(registry, &nb201_info, error);
}

SIEVE_PLUGIN_DEFINE("nb201", "0.1.0", "The NAS-Bench-201 cell search space", "MIT", nb201_init);
