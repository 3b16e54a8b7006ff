/* sieve plugin: the DARTS search space (Liu, Simonyan & Yang, "DARTS:
 * Differentiable Architecture Search", ICLR 2019), the space of
 * NAS-Bench-301 (Siems et al. 2020).
 *
 * Two cells, normal and reduction, each of 4 intermediate nodes; node 2 + k
 * takes two distinct inputs among the cell's two inputs and nodes 2..k+1,
 * each through one of 7 operations.  Per node three categorical decisions:
 *
 *   <cell>_node<n>_inputs  the pair of inputs "i_j", i < j (1, 3, 6, 10 pairs)
 *   <cell>_node<n>_op_a    the operation on input i
 *   <cell>_node<n>_op_b    the operation on input j
 *
 * A node sums its two operations, so the order of a pair does not matter:
 * one genotype per network, (49 * 147 * 294 * 490)^2 ~ 1.08e18 in all, the
 * figure NAS-Bench-301 gives for the space.  The text form is DARTS's own
 * Genotype namedtuple, so that published genotypes paste in:
 *
 *   Genotype(normal=[('sep_conv_3x3', 0), ('sep_conv_3x3', 1), ...],
 *            normal_concat=[2, 3, 4, 5], reduce=[...], reduce_concat=[2, 3, 4, 5])
 *
 * (normal_concat and reduce_concat also as range(2, 6); every intermediate
 * node is concatenated, as in DARTS and NAS-Bench-301).  Formatting writes
 * each node's input pair in ascending order.
 *
 * build() makes the evaluation network (darts-network.c); its size options
 * are C, layers, in_channels, size and classes, whose defaults are the
 * paper's CIFAR-10 network (C = 36, 20 cells). */
#include <errno.h>
#include <string.h>

#include <sieve/abi.h>
#include <sieve/component.h>
#include <sieve/graph.h>
#include <sieve/options.h>
#include <sieve/plugin.h>
#include <sieve/space.h>
#include <sieve/text.h>

#include "darts-network.h"

static const char *const darts_ops[] = {
  "max_pool_3x3", "avg_pool_3x3", "skip_connect", "sep_conv_3x3", "sep_conv_5x5", "dil_conv_3x3", "dil_conv_5x5", NULL,
};
G_STATIC_ASSERT(G_N_ELEMENTS(darts_ops) == DARTS_N_OPS + 1);

static const char *const darts_cell_names[DARTS_CELL_TYPES] = {"normal", "reduce"};

/* Input pairs (i, j), i < j, in the order j * (j - 1) / 2 + i: node 2 + k
 * chooses among the first (k + 2)(k + 1) / 2. */
#define DARTS_MAX_PAIRS 10
static const char *const darts_pairs[DARTS_MAX_PAIRS] = {
  "0_1", "0_2", "1_2", "0_3", "1_3", "2_3", "0_4", "1_4", "2_4", "3_4",
};

static guint
pair_index(guint i, guint j)
{
  return j * (j - 1) / 2 + i;
}

static void
pair_of(guint index, guint *i, guint *j)
{
  guint jj = 1;
  while (pair_index(0, jj + 1) <= index)
    jj++;
  *j = jj;
  *i = index - pair_index(0, jj);
}

/* The decision of cell t, node 2 + k: 0 inputs, 1 op_a, 2 op_b. */
static guint
decision_index(guint t, guint k, guint what)
{
  return (t * DARTS_STEPS + k) * 3 + what;
}

/* The defaults are the paper's CIFAR-10 evaluation network. */
static const SieveOptionSpec darts_options[] = {
  SIEVE_OPTION_INT("C", "36", 1, 4096, "channels of the first cells (the stem has 3C; each reduction doubles them)"),
  SIEVE_OPTION_INT("layers", "20", 1, 256, "cells; the ones at layers/3 and 2*layers/3 are reduction cells"),
  SIEVE_OPTION_INT("in_channels", "3", 1, 4096, "channels of the input images"),
  SIEVE_OPTION_INT("size", "32", 4, 65536, "input height and width; even wherever a reduction halves it"),
  SIEVE_OPTION_INT("classes", "10", 2, 1000000, "outputs of the final linear layer"),
  SIEVE_OPTION_END,
};

static void
darts_destroy(gpointer instance)
{
  g_free(instance);
}

static gpointer
darts_create(SieveSpace *space, const SieveOptions *options, GError **error)
{
  DartsSkeleton *self = g_new0(DartsSkeleton, 1);
  self->C = sieve_options_get_int(options, "C");
  self->layers = sieve_options_get_int(options, "layers");
  self->in_channels = sieve_options_get_int(options, "in_channels");
  self->size = sieve_options_get_int(options, "size");
  self->classes = sieve_options_get_int(options, "classes");
  guint odd = 0;
  if (!darts_skeleton_fits(self, &odd)) {
    sieve_options_set_error(options, "size", error,
                            "size %u reaches a reduction cell at the odd extent %u: a factorized reduction needs an "
                            "even one (use a multiple of 4)",
                            self->size, odd);
    g_free(self);
    return NULL;
  }
  g_autoptr(GString) name = g_string_new(NULL);
  for (guint t = 0; t < DARTS_CELL_TYPES; t++)
    for (guint k = 0; k < DARTS_STEPS; k++) {
      g_string_printf(name, "%s_node%u_inputs", darts_cell_names[t], k + 2);
      sieve_space_add_categorical(space, name->str, (k + 2) * (k + 1) / 2, darts_pairs);
      g_string_printf(name, "%s_node%u_op_a", darts_cell_names[t], k + 2);
      sieve_space_add_categorical(space, name->str, DARTS_N_OPS, darts_ops);
      g_string_printf(name, "%s_node%u_op_b", darts_cell_names[t], k + 2);
      sieve_space_add_categorical(space, name->str, DARTS_N_OPS, darts_ops);
    }
  return self;
}

/* The cells of a genotype; FALSE + error on a value out of its domain. */
static gboolean
cells_of(const SieveSpace *space, const SieveGenotype *genotype, DartsCell cells[DARTS_CELL_TYPES], GError **error)
{
  for (guint t = 0; t < DARTS_CELL_TYPES; t++)
    for (guint k = 0; k < DARTS_STEPS; k++)
      for (guint what = 0; what < 3; what++) {
        guint d = decision_index(t, k, what);
        double v = sieve_genotype_get(genotype, d);
        guint n = sieve_space_decision(space, d)->n_choices;
        if (!(v >= 0 && v < n && v == (guint) v)) {
          g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_GRAPH, "darts: decision %s has value %g, expected 0..%u",
                      sieve_space_decision(space, d)->name, v, n - 1);
          return FALSE;
        }
        if (what == 0)
          pair_of((guint) v, &cells[t].input[k][0], &cells[t].input[k][1]);
        else
          cells[t].op[k][what - 1] = (DartsOp) v;
      }
  return TRUE;
}

static SieveGraph *
darts_build(gpointer instance, const SieveSpace *space, const SieveGenotype *genotype, GError **error)
{
  DartsCell cells[DARTS_CELL_TYPES];
  if (!cells_of(space, genotype, cells, error))
    return NULL;
  g_autofree char *name = sieve_space_format(space, genotype);
  return darts_network_build(instance, cells, name, error);
}

static char *
darts_format(gpointer instance, const SieveSpace *space, const SieveGenotype *genotype)
{
  DartsCell cells[DARTS_CELL_TYPES];
  if (!cells_of(space, genotype, cells, NULL))
    g_return_val_if_reached(NULL);
  GString *out = g_string_new("Genotype(");
  for (guint t = 0; t < DARTS_CELL_TYPES; t++) {
    g_string_append_printf(out, "%s%s=[", t ? ", " : "", darts_cell_names[t]);
    for (guint k = 0; k < DARTS_STEPS; k++)
      for (guint e = 0; e < 2; e++)
        g_string_append_printf(out, "%s('%s', %u)", k + e ? ", " : "", darts_ops[cells[t].op[k][e]],
                               cells[t].input[k][e]);
    g_string_append_printf(out, "], %s_concat=[2, 3, 4, 5]", darts_cell_names[t]);
  }
  g_string_append_c(out, ')');
  return g_string_free(out, FALSE);
}

/* ---- parsing DARTS's Genotype(...) text ------------------------------------ */

typedef struct {
  const char *text;
  const char *p;
  GError **error;
} Parser;

static void
parse_error(Parser *ps, const char *at, const char *format, ...) G_GNUC_PRINTF(3, 4);

/* "darts genotype: at character N: MESSAGE", N 1-based; the first error wins. */
static void
parse_error(Parser *ps, const char *at, const char *format, ...)
{
  va_list args;
  va_start(args, format);
  g_autofree char *message = g_strdup_vprintf(format, args);
  va_end(args);
  if (ps->error && *ps->error == NULL)
    g_set_error(ps->error, SIEVE_ERROR, SIEVE_ERROR_PARSE, "darts genotype: at character %u: %s",
                sieve_text_char_number(ps->text, at), message);
}

/* What stands at p, for messages. (transfer full) */
static char *
describe_at(const char *p)
{
  return sieve_text_quote_at(p, "_", 24);
}

static void
skip_space(Parser *ps)
{
  while (g_ascii_isspace(*ps->p))
    ps->p++;
}

/* The character c (after spaces); what names the place in the message. */
static gboolean
expect(Parser *ps, char c, const char *what)
{
  skip_space(ps);
  if (*ps->p != c) {
    g_autofree char *got = describe_at(ps->p);
    parse_error(ps, ps->p, "expected '%c' %s, got %s", c, what, got);
    return FALSE;
  }
  ps->p++;
  return TRUE;
}

/* An identifier (letters, digits, '_'); (transfer full) or NULL + error. */
static char *
identifier(Parser *ps, const char *what)
{
  skip_space(ps);
  const char *start = ps->p;
  while (g_ascii_isalnum(*ps->p) || *ps->p == '_')
    ps->p++;
  if (ps->p == start) {
    g_autofree char *got = describe_at(start);
    parse_error(ps, start, "expected %s, got %s", what, got);
    return NULL;
  }
  return g_strndup(start, ps->p - start);
}

static gboolean
integer(Parser *ps, const char *what, gint64 *out, const char **at)
{
  skip_space(ps);
  *at = ps->p;
  const char *q = ps->p + (*ps->p == '-');
  if (!g_ascii_isdigit(*q)) {
    g_autofree char *got = describe_at(ps->p);
    parse_error(ps, ps->p, "expected %s (an integer), got %s", what, got);
    return FALSE;
  }
  char *end = NULL;
  errno = 0;
  *out = g_ascii_strtoll(ps->p, &end, 10);
  if (errno == ERANGE) { /* strtoll clamps: 99999999999999999999 would read as 2^63 - 1 */
    g_autofree char *digits = g_strndup(ps->p, end - ps->p);
    parse_error(ps, ps->p, "%s %s is out of range (a 64-bit integer)", what, digits);
    return FALSE;
  }
  ps->p = end;
  return TRUE;
}

/* '[' or ']' separated by ',' with an optional trailing one: TRUE when the
 * list goes on (an element follows), FALSE at its ']' (consumed) or on an
 * error (set). */
static gboolean
list_next(Parser *ps, gboolean first, const char *field)
{
  skip_space(ps);
  if (*ps->p == ']') {
    ps->p++;
    return FALSE;
  }
  if (!first) {
    if (*ps->p != ',') {
      g_autofree char *got = describe_at(ps->p);
      g_autofree char *what = g_strdup_printf("between the elements of %s", field);
      parse_error(ps, ps->p, "expected ',' or ']' %s, got %s", what, got);
      return FALSE;
    }
    ps->p++;
    skip_space(ps);
    if (*ps->p == ']') {
      ps->p++;
      return FALSE;
    }
  }
  return TRUE;
}

/* normal=[('op', i), ...]: 8 pairs, node 2 + k from entries 2k and 2k + 1. */
static gboolean
parse_cell(Parser *ps, SieveGenotype *genotype, guint t)
{
  const char *field = darts_cell_names[t];
  g_autofree char *where = g_strdup_printf("to open the list of %s", field);
  if (!expect(ps, '[', where))
    return FALSE;
  const char *list_start = ps->p - 1;
  guint n = 0;
  DartsCell cell;
  for (gboolean first = TRUE;; first = FALSE) {
    if (!list_next(ps, first, field)) {
      if (ps->error && *ps->error)
        return FALSE;
      break;
    }
    skip_space(ps);
    const char *entry = ps->p;
    guint k = n / 2;
    if (n >= 2 * DARTS_STEPS) {
      parse_error(ps, entry, "%s has more than %u (operation, input) pairs (2 for each of %u nodes)", field,
                  2 * DARTS_STEPS, DARTS_STEPS);
      return FALSE;
    }
    g_autofree char *what = g_strdup_printf("to open pair %u of %s", n + 1, field);
    if (!expect(ps, '(', what))
      return FALSE;
    skip_space(ps);
    char quote = *ps->p;
    if (quote != '\'' && quote != '"') {
      g_autofree char *got = describe_at(ps->p);
      parse_error(ps, ps->p, "expected a quoted operation name in pair %u of %s, got %s", n + 1, field, got);
      return FALSE;
    }
    const char *name = ++ps->p;
    const char *close = strchr(name, quote);
    if (close == NULL) {
      parse_error(ps, name - 1, "the operation name in pair %u of %s has no closing %c", n + 1, field, quote);
      return FALSE;
    }
    g_autofree char *op = g_strndup(name, close - name);
    gint o = -1;
    for (guint i = 0; i < DARTS_N_OPS; i++)
      if (strcmp(op, darts_ops[i]) == 0)
        o = (gint) i;
    if (o < 0) {
      g_autofree char *list = g_strjoinv(", ", (char **) darts_ops);
      parse_error(ps, name, "unknown operation '%s' in pair %u of %s%s (expected one of %s)", op, n + 1, field,
                  strcmp(op, "none") == 0 ? ": 'none' belongs to the search supernet, not to a derived cell" : "",
                  list);
      return FALSE;
    }
    ps->p = close + 1;
    if (!expect(ps, ',', "after the operation name"))
      return FALSE;
    gint64 input;
    const char *input_at;
    g_autofree char *iwhat = g_strdup_printf("the input of pair %u of %s", n + 1, field);
    if (!integer(ps, iwhat, &input, &input_at))
      return FALSE;
    if (input < 0 || input > (gint64) k + 1) {
      parse_error(ps, input_at,
                  "input %" G_GINT64_FORMAT " of pair %u of %s: node %u may read states 0..%u (the cell's two "
                  "inputs and the nodes before it)",
                  input, n + 1, field, k + 2, k + 1);
      return FALSE;
    }
    if (!expect(ps, ')', "to close the pair"))
      return FALSE;
    cell.op[k][n % 2] = (DartsOp) o;
    cell.input[k][n % 2] = (guint) input;
    if (n % 2 == 1 && cell.input[k][0] == cell.input[k][1]) {
      parse_error(ps, entry, "pairs %u and %u of %s both read state %u: node %u takes two distinct inputs", n, n + 1,
                  field, cell.input[k][1], k + 2);
      return FALSE;
    }
    n++;
  }
  if (n != 2 * DARTS_STEPS) {
    parse_error(ps, list_start, "%s has %u (operation, input) pairs, expected %u (2 for each of %u nodes)", field, n,
                2 * DARTS_STEPS, DARTS_STEPS);
    return FALSE;
  }
  for (guint k = 0; k < DARTS_STEPS; k++) {
    guint a = cell.input[k][0] < cell.input[k][1] ? 0 : 1;
    sieve_genotype_set(genotype, decision_index(t, k, 0), pair_index(cell.input[k][a], cell.input[k][1 - a]));
    sieve_genotype_set(genotype, decision_index(t, k, 1), cell.op[k][a]);
    sieve_genotype_set(genotype, decision_index(t, k, 2), cell.op[k][1 - a]);
  }
  return TRUE;
}

/* normal_concat=[2, 3, 4, 5] or range(2, 6): the only concat this space has. */
static gboolean
parse_concat(Parser *ps, const char *field)
{
  skip_space(ps);
  const char *start = ps->p;
  guint64 seen = 0;
  guint count = 0;
  if (g_str_has_prefix(ps->p, "range")) {
    ps->p += 5;
    gint64 lo, hi;
    const char *at;
    if (!expect(ps, '(', "after range") || !integer(ps, "range's start", &lo, &at) ||
        !expect(ps, ',', "between range's bounds") || !integer(ps, "range's end", &hi, &at) ||
        !expect(ps, ')', "to close range"))
      return FALSE;
    if (lo == 2 && hi == 6) { /* the one range this space accepts */
      seen = 0x3c;
      count = DARTS_STEPS;
    }
  } else {
    g_autofree char *where = g_strdup_printf("or range( to open %s", field);
    if (*ps->p != '[') {
      g_autofree char *got = describe_at(ps->p);
      parse_error(ps, ps->p, "expected '[' %s, got %s", where, got);
      return FALSE;
    }
    ps->p++;
    for (gboolean first = TRUE;; first = FALSE) {
      if (!list_next(ps, first, field)) {
        if (ps->error && *ps->error)
          return FALSE;
        break;
      }
      gint64 v;
      const char *at;
      if (!integer(ps, "a node of the concat", &v, &at))
        return FALSE;
      if (v >= 0 && v < 64)
        seen |= G_GUINT64_CONSTANT(1) << v;
      count++;
    }
  }
  if (count != DARTS_STEPS || seen != 0x3c) {
    g_autofree char *got = g_strndup(start, ps->p - start);
    parse_error(ps, start,
                "%s is %s; this space concatenates every intermediate node, [2, 3, 4, 5] or range(2, 6), as "
                "DARTS and NAS-Bench-301 do",
                field, got);
    return FALSE;
  }
  return TRUE;
}

static SieveGenotype *
darts_parse(gpointer instance, const SieveSpace *space, const char *text, GError **error)
{
  static const char *const fields[] = {"normal", "normal_concat", "reduce", "reduce_concat"};
  g_autoptr(SieveGenotype) genotype = sieve_genotype_new(space);
  Parser ps = {text, text, error};
  g_autofree char *head = identifier(&ps, "Genotype(normal=[...], normal_concat=[...], reduce=[...], "
                                          "reduce_concat=[...])");
  if (head == NULL)
    return NULL;
  if (strcmp(head, "Genotype") != 0) {
    parse_error(&ps, ps.p - strlen(head), "expected 'Genotype', got '%s'", head);
    return NULL;
  }
  if (!expect(&ps, '(', "after Genotype"))
    return NULL;
  gboolean done[4] = {FALSE};
  for (guint i = 0; i < 4; i++) {
    skip_space(&ps);
    /* Closed early: name the fields it lacks, not the ',' it expected. */
    if (i > 0 && (*ps.p == ')' || (*ps.p == ',' && *(ps.p + 1 + strspn(ps.p + 1, " \t\n")) == ')'))) {
      g_autoptr(GString) missing = g_string_new(NULL);
      for (guint j = 0; j < 4; j++)
        if (!done[j])
          g_string_append_printf(missing, "%s%s", missing->len ? " and " : "", fields[j]);
      parse_error(&ps, ps.p, "Genotype(...) lacks %s (DARTS writes all four fields: ..., normal_concat=range(2, 6), "
                             "...)",
                  missing->str);
      return NULL;
    }
    if (i > 0 && !expect(&ps, ',', "between the fields"))
      return NULL;
    skip_space(&ps);
    const char *at = ps.p;
    g_autofree char *name = identifier(&ps, "a field name (normal, normal_concat, reduce, reduce_concat)");
    if (name == NULL)
      return NULL;
    gint f = -1;
    for (guint j = 0; j < 4; j++)
      if (strcmp(name, fields[j]) == 0)
        f = (gint) j;
    if (f < 0) {
      parse_error(&ps, at, "unknown field '%s' (expected normal, normal_concat, reduce or reduce_concat)", name);
      return NULL;
    }
    if (done[f]) {
      parse_error(&ps, at, "field %s given twice", name);
      return NULL;
    }
    done[f] = TRUE;
    g_autofree char *what = g_strdup_printf("after %s", name);
    if (!expect(&ps, '=', what))
      return NULL;
    gboolean ok = f == 0 || f == 2 ? parse_cell(&ps, genotype, f == 0 ? DARTS_NORMAL : DARTS_REDUCE)
                                   : parse_concat(&ps, name);
    if (!ok)
      return NULL;
  }
  skip_space(&ps);
  if (*ps.p == ',') /* Python allows a trailing comma */
    ps.p++;
  if (!expect(&ps, ')', "to close Genotype(...) after its four fields"))
    return NULL;
  skip_space(&ps);
  if (*ps.p != '\0') {
    g_autofree char *got = describe_at(ps.p);
    parse_error(&ps, ps.p, "unexpected %s after the closing ')'", got);
    return NULL;
  }
  (void) instance;
  return g_steal_pointer(&genotype);
}

/* The scale the functional hash runs at (sieve/hash.h): 4 channels, 16x16
 * inputs (cells at 16, 8 and 4 pixels: a 3x3 pool is not idempotent
 * there), and the fewest cells that put each cell kind in every situation
 * the network puts it in, and in no other.  A cell's situations: normal or
 * reduction, first (its two inputs are both the stem, so inputs 0 and 1
 * are one tensor) or not, after a reduction (its older input goes through a
 * factorized reduction) or not.  layers = 1 and 2 have reduction cells
 * only; 3 to 5 each have a set of their own (3: normal first, reduction
 * after normal, reduction after reduction; 4: and normal after reduction;
 * 5: no reduction after a reduction); from 6 on (reductions at layers/3 >= 2
 * and 2 layers/3 >= layers/3 + 2) the set is normal first, normal after
 * normal, reduction after normal and normal after reduction, which 6 cells
 * have.  A probe with a situation the network lacks splits networks the
 * structural hash joins (layers 2: the normal cell is never built); one
 * lacking a situation joins networks that differ (layers 20 at a probe of
 * 3 cells, whose only normal cell is the first: swapping inputs 0 and 1 of
 * the normal cell changed nothing there). */
#define DARTS_PROBE_LAYERS 6
static const char *const darts_probe_options[DARTS_PROBE_LAYERS][4] = {
  {"C=4", "layers=1", "size=16", NULL}, {"C=4", "layers=2", "size=16", NULL}, {"C=4", "layers=3", "size=16", NULL},
  {"C=4", "layers=4", "size=16", NULL}, {"C=4", "layers=5", "size=16", NULL}, {"C=4", "layers=6", "size=16", NULL},
};

static const char *const *
darts_probe_options_for(gpointer instance, const SieveSpace *space)
{
  const DartsSkeleton *self = instance;
  (void) space;
  return darts_probe_options[MIN(self->layers, DARTS_PROBE_LAYERS) - 1];
}

static const SieveSpaceClass darts_class = {
  .create = darts_create,
  .destroy = darts_destroy,
  .format = darts_format,
  .parse = darts_parse,
  .build = darts_build,
  .probe_options_for = darts_probe_options_for,
};

static const SieveComponentInfo darts_info = {
  .kind = SIEVE_KIND_SPACE,
  .name = "darts",
  .summary = "DARTS / NAS-Bench-301 cells: normal and reduction, 4 nodes of 2 inputs, 7 operations (~1.1e18)",
  .options = darts_options,
  .klass = &darts_class,
};

static gboolean
darts_init(SieveRegistry *registry, GError **error)
{
  return sieve_registry_add(registry, &darts_info, error);
}

SIEVE_PLUGIN_DEFINE("darts", "0.1.0", "The DARTS (NAS-Bench-301) cell search space", "MIT", darts_init);
