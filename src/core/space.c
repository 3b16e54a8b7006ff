/* sieve: search spaces, decisions and genotypes. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sieve/graph.h>
#include <sieve/space.h>
#include <sieve/text.h>
#include "core/core-private.h"

/* Entries the functional-hash memo keeps at most (32 bytes each). */
#define MEMO_MAX (1u << 20)

struct _SieveSpace {
  const SieveComponent *component; /* NULL for a space built by hand (tests, Lua) */
  const SieveSpaceClass *klass;    /* NULL: generic text form only */
  gpointer instance;
  GArray *decisions;  /* SieveDecision; names and choices point into strings */
  GPtrArray *strings; /* owned copies of names and choice arrays */
  GPtrArray *wheres;  /* char* (nullable), one per decision: where it was declared */
  GPtrArray *choice_json; /* GPtrArray* of n_choices char* (nullable; its entries too), one per decision */
  /* For the probe copy (sieve__space_probe): the options the user wrote, as
   * a map, and what hashing keeps between calls, under probe_lock. */
  SieveNode *written;
  GMutex probe_lock;
  SieveSpace *probe;  /* created on first use; the space itself when it has no probe_options */
  GError *probe_error;
  GHashTable *memo;   /* SieveHash -> SieveHash, both in one 32-byte block */
  GError *build_error; /* the first builder call create() got wrong (misuse) */
};

struct _SieveGenotype {
  const SieveSpace *space;
  guint n;
  double values[];
};

/* ---- builder ---------------------------------------------------------- */

static void
free_choice_json(gpointer values)
{
  if (values != NULL)
    g_ptr_array_unref(values);
}

static SieveSpace *
space_alloc(void)
{
  SieveSpace *space = g_new0(SieveSpace, 1);
  space->decisions = g_array_new(FALSE, TRUE, sizeof(SieveDecision));
  space->strings = g_ptr_array_new_with_free_func(g_free);
  space->wheres = g_ptr_array_new_with_free_func(g_free);
  space->choice_json = g_ptr_array_new_with_free_func(free_choice_json);
  g_mutex_init(&space->probe_lock);
  return space;
}

static const char *
keep(SieveSpace *space, char *owned)
{
  g_ptr_array_add(space->strings, owned);
  return owned;
}

/* A builder call that create() got wrong: a plugin space keeps the first
 * and sieve_space_new refuses the space with it, naming the plugin; it was
 * a critical only, and the study ran on another space than the plugin
 * meant (a duplicate name made ambiguous genotypes, a bad range dropped a
 * decision).  A space built by hand (no component: tests, Lua) has no
 * create() to fail, and still gets the critical. */
static void G_GNUC_PRINTF(2, 3)
misuse(SieveSpace *space, const char *format, ...)
{
  va_list args;
  va_start(args, format);
  g_autofree char *msg = g_strdup_vprintf(format, args);
  va_end(args);
  if (space->component == NULL)
    g_critical("sieve_space_add: %s", msg);
  else if (space->build_error == NULL)
    space->build_error = g_error_new_literal(SIEVE_ERROR, SIEVE_ERROR_CONFIG, msg);
}

static guint
add_decision(SieveSpace *space, const char *name, SieveDecisionKind kind)
{
  if (name == NULL || *name == '\0') {
    misuse(space, "decision %u has no name", space->decisions->len);
    name = "?";
  } else if (sieve_space_find(space, name) >= 0)
    misuse(space, "decision '%s' declared twice (names must be unique)", name);
  SieveDecision d = {0};
  d.name = keep(space, g_strdup(name));
  d.kind = kind;
  d.parent = -1;
  g_array_append_val(space->decisions, d);
  g_ptr_array_add(space->wheres, NULL);
  g_ptr_array_add(space->choice_json, NULL);
  return space->decisions->len - 1;
}

guint
sieve_space_add_categorical(SieveSpace *space, const char *name, guint n_choices,
                            const char *const *choices)
{
  g_return_val_if_fail(space != NULL, 0);
  guint i = add_decision(space, name, SIEVE_DECISION_CATEGORICAL);
  const char *label = g_array_index(space->decisions, SieveDecision, i).name;
  if (n_choices == 0 || choices == NULL) {
    misuse(space, "categorical '%s' has no choices", label);
    n_choices = 1; /* a stand-in "?" (the space is refused), and choices not read */
    choices = NULL;
  }
  const char **copy = g_new0(const char *, n_choices + 1);
  for (guint k = 0; k < n_choices; k++) {
    const char *choice = choices != NULL && choices[k] != NULL ? choices[k] : "?";
    if (choices != NULL && choices[k] == NULL)
      misuse(space, "categorical '%s': choice %u is NULL", label, k);
    for (guint j = 0; j < k; j++)
      if (strcmp(copy[j], choice) == 0)
        misuse(space, "categorical '%s': choice '%s' is listed twice (a genotype's text would not read back)",
               label, choice);
    copy[k] = keep(space, g_strdup(choice));
  }
  keep(space, (char *) copy);
  SieveDecision *d = &g_array_index(space->decisions, SieveDecision, i);
  d->n_choices = n_choices;
  d->choices = copy;
  d->low = 0;
  d->high = n_choices - 1;
  return i;
}

/* Integers a double holds exactly: genotypes are doubles. */
#define EXACT_INT G_GINT64_CONSTANT(9007199254740992) /* 2^53 */

guint
sieve_space_add_int(SieveSpace *space, const char *name, gint64 low, gint64 high, gboolean log)
{
  g_return_val_if_fail(space != NULL, 0);
  guint i = add_decision(space, name, SIEVE_DECISION_INT);
  SieveDecision *d = &g_array_index(space->decisions, SieveDecision, i);
  if (low > high)
    misuse(space, "int '%s': low %" G_GINT64_FORMAT " is above high %" G_GINT64_FORMAT, d->name, low, high);
  else if (log && low < 1)
    misuse(space, "int '%s': a log scale needs low >= 1, got %" G_GINT64_FORMAT, d->name, low);
  else if (low < -EXACT_INT || high > EXACT_INT)
    misuse(space, "int '%s': [%" G_GINT64_FORMAT ", %" G_GINT64_FORMAT "] reaches beyond +-2^53, where a genotype's "
           "values (doubles) are no longer every integer", d->name, low, high);
  d->low = (double) low;
  d->high = (double) high;
  d->log = log;
  return i;
}

guint
sieve_space_add_float(SieveSpace *space, const char *name, double low, double high, gboolean log)
{
  g_return_val_if_fail(space != NULL, 0);
  guint i = add_decision(space, name, SIEVE_DECISION_FLOAT);
  SieveDecision *d = &g_array_index(space->decisions, SieveDecision, i);
  if (!isfinite(low) || !isfinite(high) || !(low <= high))
    misuse(space, "float '%s': [%g, %g] is no finite range with low <= high", d->name, low, high);
  else if (!isfinite(high - low)) /* samplers draw low + u * (high - low) */
    misuse(space, "float '%s': [%g, %g] is wider than a double holds", d->name, low, high);
  else if (log && !(low > 0))
    misuse(space, "float '%s': a log scale needs low > 0, got %g", d->name, low);
  d->low = low;
  d->high = high;
  d->log = log;
  return i;
}

void
sieve_space_set_condition(SieveSpace *space, guint child, guint parent, guint64 mask)
{
  g_return_if_fail(space != NULL);
  if (!(parent < child && child < space->decisions->len)) {
    misuse(space, "a condition of decision %u on decision %u: the parent must be declared before the child, and "
           "both exist (%u decisions)", child, parent, space->decisions->len);
    return;
  }
  SieveDecision *p = &g_array_index(space->decisions, SieveDecision, parent);
  SieveDecision *d = &g_array_index(space->decisions, SieveDecision, child);
  if (p->kind != SIEVE_DECISION_CATEGORICAL || p->n_choices > 64) {
    misuse(space, "'%s' is conditioned on '%s', which is not a categorical of at most 64 choices", d->name, p->name);
    return;
  }
  d->parent = (gint) parent;
  d->parent_mask = mask;
}

/* Whether text is a finite JSON number (RFC 8259's grammar) or true/false. */
static gboolean
is_json_literal(const char *text)
{
  if (strcmp(text, "true") == 0 || strcmp(text, "false") == 0)
    return TRUE;
  const char *p = text;
  if (*p == '-')
    p++;
  if (*p == '0')
    p++;
  else if (*p >= '1' && *p <= '9')
    while (g_ascii_isdigit(*p))
      p++;
  else
    return FALSE;
  if (*p == '.') {
    if (!g_ascii_isdigit(*++p))
      return FALSE;
    while (g_ascii_isdigit(*p))
      p++;
  }
  if (*p == 'e' || *p == 'E') {
    p++;
    if (*p == '+' || *p == '-')
      p++;
    if (!g_ascii_isdigit(*p))
      return FALSE;
    while (g_ascii_isdigit(*p))
      p++;
  }
  return *p == '\0' && isfinite(g_ascii_strtod(text, NULL));
}

gboolean
sieve_space_set_choice_json(SieveSpace *space, guint i, guint k, const char *json)
{
  g_return_val_if_fail(space != NULL && i < space->decisions->len && json != NULL, FALSE);
  const SieveDecision *d = &g_array_index(space->decisions, SieveDecision, i);
  g_return_val_if_fail(d->kind == SIEVE_DECISION_CATEGORICAL && k < d->n_choices, FALSE);
  if (!is_json_literal(json))
    return FALSE;
  GPtrArray *values = space->choice_json->pdata[i];
  if (values == NULL) {
    values = space->choice_json->pdata[i] = g_ptr_array_new_full(d->n_choices, g_free);
    g_ptr_array_set_size(values, d->n_choices);
  }
  g_free(values->pdata[k]);
  values->pdata[k] = g_strdup(json);
  return TRUE;
}

const char *
sieve_space_choice_json(const SieveSpace *space, guint i, guint k)
{
  g_return_val_if_fail(space != NULL && i < space->decisions->len, NULL);
  const GPtrArray *values = space->choice_json->pdata[i];
  return values != NULL && k < values->len ? values->pdata[k] : NULL;
}

void
sieve_space_set_decision_where(SieveSpace *space, guint i, const SieveNode *node)
{
  g_return_if_fail(space != NULL && i < space->wheres->len);
  g_free(space->wheres->pdata[i]);
  space->wheres->pdata[i] = node ? sieve_node_where(node) : NULL;
}

const char *
sieve_space_decision_where(const SieveSpace *space, guint i)
{
  g_return_val_if_fail(space != NULL && i < space->wheres->len, NULL);
  return space->wheres->pdata[i];
}

gboolean
sieve_space_is_architecture(const SieveSpace *space, guint i)
{
  g_return_val_if_fail(space != NULL && i < space->decisions->len, FALSE);
  guint first = 0;
  const SieveSpace *arch = sieve__space_arch_part(space, &first);
  if (arch != NULL)
    return i >= first && i < first + arch->decisions->len;
  return sieve_space_can_build(space);
}

const SieveSpaceClass *
sieve__space_get_class(const SieveSpace *space)
{
  return space->klass;
}

const SieveComponent *
sieve__space_get_component(const SieveSpace *space)
{
  return space->component;
}

const SieveRegistry *
sieve__space_get_registry(const SieveSpace *space)
{
  return space->component ? sieve__component_get_registry(space->component) : NULL;
}

void
sieve__space_set_where_text(SieveSpace *space, guint i, const char *where)
{
  g_return_if_fail(i < space->wheres->len);
  g_free(space->wheres->pdata[i]);
  space->wheres->pdata[i] = g_strdup(where);
}

/* ---- instances -------------------------------------------------------- */

/* The options the user wrote, as a map a probe copy can start from: values
 * as written, paths already resolved (the probe has no config folder). */
static SieveNode *
written_options(const SieveComponent *component, const SieveOptions *options)
{
  SieveNode *map = sieve_node_new_map("the space's options", 0, 0);
  const SieveOptionSpec *spec = sieve_component_get_info(component)->options;
  for (guint i = 0; options != NULL && spec != NULL && spec[i].name != NULL; i++) {
    if (!sieve_options_is_set(options, spec[i].name))
      continue;
    const SieveNode *value = sieve_options_node(options, spec[i].name);
    if (spec[i].type == SIEVE_OPTION_TYPE_PATH)
      sieve_node_map_set(map, spec[i].name,
                         sieve_node_new_scalar(sieve_options_get_string(options, spec[i].name), TRUE,
                                               sieve_node_origin(value), sieve_node_line(value),
                                               sieve_node_column(value)));
    else
      sieve_node_map_set(map, spec[i].name, sieve_node_copy(value));
  }
  return map;
}

SieveNode *
sieve__space_get_written(const SieveSpace *space)
{
  g_return_val_if_fail(space != NULL, NULL);
  return space->written ? sieve_node_copy(space->written) : sieve_node_new_map("the space's options", 0, 0);
}

void
sieve__space_set_written(SieveSpace *space, SieveNode *written)
{
  g_return_if_fail(space != NULL && written != NULL);
  sieve_node_ref(written);
  g_clear_pointer(&space->written, sieve_node_unref);
  space->written = written;
}

char *
sieve__space_options_json(const SieveSpace *space, GError **error)
{
  g_return_val_if_fail(space != NULL && space->component != NULL, NULL);
  const SieveOptionSpec *spec = sieve_component_get_info(space->component)->options;
  g_autofree char *context = g_strdup_printf("space '%s'", sieve_space_get_name(space));
  g_autoptr(SieveOptions) options = sieve_options_new(spec, space->written, NULL, NULL, context, error);
  return options ? sieve__options_to_json(options) : NULL;
}

void
sieve__space_add_files(const SieveSpace *space, GPtrArray *paths)
{
  g_return_if_fail(space != NULL && paths != NULL);
  const SieveOptionSpec *spec = space->component ? sieve_component_get_info(space->component)->options : NULL;
  for (guint i = 0; spec != NULL && spec[i].name != NULL; i++) {
    const SieveNode *value = spec[i].type == SIEVE_OPTION_TYPE_PATH && space->written
                                 ? sieve_node_lookup(space->written, spec[i].name)
                                 : NULL;
    /* Once each: two parts may read one file (a model file's space_files
     * is a JSON object keyed by path). */
    if (value != NULL && sieve_node_kind(value) == SIEVE_NODE_SCALAR && !sieve_node_is_null(value) &&
        !g_ptr_array_find_with_equal_func(paths, sieve_node_text(value), g_str_equal, NULL))
      g_ptr_array_add(paths, g_strdup(sieve_node_text(value)));
  }
  for (guint k = 0; sieve__space_part(space, k) != NULL; k++)
    sieve__space_add_files(sieve__space_part(space, k), paths);
}

/* The probe copy: the component again, with the class's probe_options
 * written over the user's options. */
static SieveSpace *
probe_new(const SieveSpace *space, const char *const *probe_options, GError **error)
{
  const char *name = sieve_space_get_name(space);
  g_autoptr(SieveNode) map = sieve_node_copy(space->written);
  g_autofree char *origin = g_strdup_printf("probe_options of space %s", name);
  for (guint i = 0; probe_options[i] != NULL; i++) {
    const char *item = probe_options[i];
    const char *eq = strchr(item, '=');
    if (eq == NULL || eq == item) {
      g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_PLUGIN, "space %s: probe option '%s' is not KEY=VALUE", name, item);
      return NULL;
    }
    g_autofree char *key = g_strndup(item, eq - item);
    if (!sieve_node_set_path(map, key, eq + 1, origin, error))
      return NULL;
  }
  g_autofree char *context = g_strdup_printf("space '%s' at its probe scale", name);
  g_autoptr(SieveOptions) options =
      sieve_options_new(sieve_component_get_info(space->component)->options, map, NULL, NULL, context, error);
  if (options == NULL)
    return NULL;
  SieveSpace *probe = sieve_space_new(space->component, options, error);
  if (probe != NULL && probe->decisions->len != space->decisions->len) {
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_PLUGIN,
                "space %s declares %u decisions at its probe scale but %u at its own: probe_options must "
                "only change the size of the networks",
                name, probe->decisions->len, space->decisions->len);
    sieve_space_free(probe);
    return NULL;
  }
  return probe;
}

const SieveSpace *
sieve__space_probe(const SieveSpace *space, GError **error)
{
  g_return_val_if_fail(space != NULL, NULL);
  if (space->klass == NULL || space->component == NULL)
    return space;
  const char *const *probe_options = space->klass->probe_options_for != NULL
                                         ? space->klass->probe_options_for(space->instance, space)
                                         : space->klass->probe_options;
  if (probe_options == NULL)
    return space;
  SieveSpace *self = (SieveSpace *)space; /* the cache is not part of the space's value */
  g_mutex_lock(&self->probe_lock);
  if (self->probe == NULL && self->probe_error == NULL)
    self->probe = probe_new(space, probe_options, &self->probe_error);
  const SieveSpace *probe = self->probe;
  if (probe == NULL)
    g_propagate_error(error, g_error_copy(self->probe_error));
  g_mutex_unlock(&self->probe_lock);
  return probe;
}

static guint
memo_hash(gconstpointer p)
{
  return (guint)((const SieveHash *)p)->lo;
}

static gboolean
memo_equal(gconstpointer a, gconstpointer b)
{
  const SieveHash *x = a, *y = b;
  return x->hi == y->hi && x->lo == y->lo;
}

gboolean
sieve__space_memo_get(const SieveSpace *space, const SieveHash *key, SieveHash *value)
{
  SieveSpace *self = (SieveSpace *)space;
  g_mutex_lock(&self->probe_lock);
  const SieveHash *found = self->memo ? g_hash_table_lookup(self->memo, key) : NULL;
  if (found != NULL)
    *value = found[1];
  g_mutex_unlock(&self->probe_lock);
  return found != NULL;
}

void
sieve__space_memo_put(const SieveSpace *space, const SieveHash *key, const SieveHash *value)
{
  SieveSpace *self = (SieveSpace *)space;
  g_mutex_lock(&self->probe_lock);
  if (self->memo == NULL)
    self->memo = g_hash_table_new_full(memo_hash, memo_equal, g_free, NULL);
  if (g_hash_table_size(self->memo) < MEMO_MAX) {
    SieveHash *pair = g_new(SieveHash, 2);
    pair[0] = *key;
    pair[1] = *value;
    g_hash_table_replace(self->memo, pair, pair);
  }
  g_mutex_unlock(&self->probe_lock);
}

SieveSpace *
sieve_space_new(const SieveComponent *component, const SieveOptions *options, GError **error)
{
  SieveSpace *space = space_alloc();
  if (component == NULL)
    return space;
  g_return_val_if_fail(sieve_component_get_kind(component) == SIEVE_KIND_SPACE, NULL);
  space->component = component;
  space->klass = sieve_component_get_info(component)->klass;
  space->written = written_options(component, options);
  GError *local = NULL;
  space->instance = space->klass->create(space, options, &local);
  if (local != NULL) {
    g_propagate_error(error, local);
    space->klass = NULL; /* create failed: nothing to destroy */
    sieve_space_free(space);
    return NULL;
  }
  if (space->build_error != NULL) {
    g_propagate_prefixed_error(error, g_steal_pointer(&space->build_error), "space '%s': its create() declared a "
                               "decision wrongly: ", sieve_component_get_name(component));
    sieve_space_free(space);
    return NULL;
  }
  if (space->decisions->len == 0) {
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_CONFIG, "space '%s' declares no decisions",
                sieve_component_get_name(component));
    sieve_space_free(space);
    return NULL;
  }
  return space;
}

void
sieve_space_free(SieveSpace *space)
{
  if (space == NULL)
    return;
  if (space->klass != NULL && space->klass->destroy != NULL && space->instance != NULL)
    space->klass->destroy(space->instance);
  if (space->probe != space)
    sieve_space_free(space->probe);
  g_clear_error(&space->probe_error);
  g_clear_error(&space->build_error);
  g_clear_pointer(&space->memo, g_hash_table_unref);
  g_clear_pointer(&space->written, sieve_node_unref);
  g_mutex_clear(&space->probe_lock);
  g_ptr_array_unref(space->choice_json);
  g_array_unref(space->decisions);
  g_ptr_array_unref(space->strings);
  g_ptr_array_unref(space->wheres);
  g_free(space);
}

/* Number of distinct genotypes of the subtree rooted at decision d: the
 * decisions conditioned on d are active for some of its values only. */
static double
subtree_size(const SieveSpace *space, guint d)
{
  const SieveDecision *dec = sieve_space_decision(space, d);
  guint n = sieve_space_n_decisions(space);
  switch (dec->kind) {
  case SIEVE_DECISION_FLOAT:
    return INFINITY;
  case SIEVE_DECISION_INT:
    return dec->high - dec->low + 1; /* only categoricals have children */
  case SIEVE_DECISION_CATEGORICAL:
    break;
  }
  double total = 0;
  for (guint v = 0; v < dec->n_choices; v++) {
    double product = 1;
    for (guint c = d + 1; c < n; c++) {
      const SieveDecision *child = sieve_space_decision(space, c);
      if (child->parent == (gint) d && v < 64 && (child->parent_mask & (G_GUINT64_CONSTANT(1) << v)))
        product *= subtree_size(space, c);
    }
    total += product;
  }
  return total;
}

double
sieve_space_size(const SieveSpace *space)
{
  double product = 1;
  for (guint d = 0; d < sieve_space_n_decisions(space); d++)
    if (sieve_space_decision(space, d)->parent < 0)
      product *= subtree_size(space, d);
  return product;
}

void
sieve__space_set_class(SieveSpace *space, const SieveSpaceClass *klass)
{
  g_return_if_fail(klass != NULL && space->klass != NULL && klass->create == space->klass->create &&
                   klass->destroy == space->klass->destroy);
  space->klass = klass;
}

gboolean
sieve_space_can_build(const SieveSpace *space)
{
  return space->klass != NULL && space->klass->build != NULL;
}

SieveGraph *
sieve_space_build(const SieveSpace *space, const SieveGenotype *genotype, GError **error)
{
  if (!sieve_space_can_build(space)) {
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_GRAPH, "space %s builds no networks (it is not an architecture space)",
                sieve_space_get_name(space));
    return NULL;
  }
  if (genotype->space != space) {
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_GRAPH, "a genotype of another space was given to space %s",
                sieve_space_get_name(space));
    return NULL;
  }
  GError *local = NULL;
  SieveGraph *graph = space->klass->build(space->instance, space, genotype, &local);
  if (graph == NULL) {
    if (local == NULL)
      local = g_error_new(SIEVE_ERROR, SIEVE_ERROR_GRAPH, "space %s: build() failed without saying why",
                          sieve_space_get_name(space));
    g_propagate_error(error, local);
    return NULL;
  }
  if (sieve_graph_output(graph) == SIEVE_NODE_INVALID) {
    sieve_graph_free(graph);
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_GRAPH, "space %s: build() returned a graph without an output",
                sieve_space_get_name(space));
    return NULL;
  }
  return graph;
}

SieveGraph *
sieve_space_build_sample(const SieveSpace *space, guint64 seed, GError **error)
{
  g_return_val_if_fail(space != NULL, NULL);
  SieveRng rng;
  sieve_rng_seed(&rng, seed);
  g_autoptr(SieveGenotype) genotype = sieve_space_sample(space, &rng);
  return sieve_space_build(space, genotype, error);
}

const char *
sieve_space_get_name(const SieveSpace *space)
{
  g_return_val_if_fail(space != NULL, NULL);
  return space->component ? sieve_component_get_name(space->component) : "custom";
}

guint
sieve_space_n_decisions(const SieveSpace *space)
{
  g_return_val_if_fail(space != NULL, 0);
  return space->decisions->len;
}

const SieveDecision *
sieve_space_decision(const SieveSpace *space, guint i)
{
  g_return_val_if_fail(space != NULL && i < space->decisions->len, NULL);
  return &g_array_index(space->decisions, SieveDecision, i);
}

gint
sieve_space_find(const SieveSpace *space, const char *name)
{
  g_return_val_if_fail(space != NULL && name != NULL, -1);
  for (guint i = 0; i < space->decisions->len; i++)
    if (strcmp(g_array_index(space->decisions, SieveDecision, i).name, name) == 0)
      return (gint) i;
  return -1;
}

gpointer
sieve_space_get_instance(const SieveSpace *space)
{
  g_return_val_if_fail(space != NULL, NULL);
  return space->instance;
}

/* ---- genotypes -------------------------------------------------------- */

SieveGenotype *
sieve_genotype_new(const SieveSpace *space)
{
  g_return_val_if_fail(space != NULL, NULL);
  guint n = space->decisions->len;
  SieveGenotype *g = g_malloc(sizeof(SieveGenotype) + n * sizeof(double));
  g->space = space;
  g->n = n;
  for (guint i = 0; i < n; i++)
    g->values[i] = NAN;
  return g;
}

SieveGenotype *
sieve_genotype_copy(const SieveGenotype *genotype)
{
  g_return_val_if_fail(genotype != NULL, NULL);
  gsize size = sizeof(SieveGenotype) + genotype->n * sizeof(double);
  return g_memdup2(genotype, size);
}

void
sieve_genotype_free(SieveGenotype *genotype)
{
  g_free(genotype);
}

guint
sieve_genotype_size(const SieveGenotype *genotype)
{
  g_return_val_if_fail(genotype != NULL, 0);
  return genotype->n;
}

double
sieve_genotype_get(const SieveGenotype *genotype, guint i)
{
  g_return_val_if_fail(genotype != NULL && i < genotype->n, NAN);
  return genotype->values[i];
}

void
sieve_genotype_set(SieveGenotype *genotype, guint i, double value)
{
  g_return_if_fail(genotype != NULL && i < genotype->n);
  genotype->values[i] = value;
}

const SieveSpace *
sieve_genotype_get_space(const SieveGenotype *genotype)
{
  g_return_val_if_fail(genotype != NULL, NULL);
  return genotype->space;
}

gboolean
sieve_genotype_equal(const SieveGenotype *a, const SieveGenotype *b)
{
  g_return_val_if_fail(a != NULL && b != NULL, FALSE);
  if (a->n != b->n)
    return FALSE;
  for (guint i = 0; i < a->n; i++) {
    gboolean na = isnan(a->values[i]), nb = isnan(b->values[i]);
    if (na != nb || (!na && a->values[i] != b->values[i]))
      return FALSE;
  }
  return TRUE;
}

gboolean
sieve_space_is_active(const SieveSpace *space, const SieveGenotype *genotype, guint i)
{
  g_return_val_if_fail(space != NULL && genotype != NULL && i < genotype->n, FALSE);
  const SieveDecision *d = sieve_space_decision(space, i);
  while (d->parent >= 0) {
    double pv = genotype->values[d->parent];
    if (isnan(pv) || pv < 0 || pv >= 64 || !(d->parent_mask & (G_GUINT64_CONSTANT(1) << (guint) pv)))
      return FALSE;
    d = sieve_space_decision(space, (guint) d->parent);
  }
  return TRUE;
}

static double
sample_decision(const SieveDecision *d, SieveRng *rng)
{
  double u;
  switch (d->kind) {
  case SIEVE_DECISION_CATEGORICAL:
    return (double) sieve_rng_below(rng, d->n_choices);
  case SIEVE_DECISION_INT:
    if (d->log) {
      /* Log-uniform over [low - 0.5, high + 0.5] then rounded, so that every
       * integer gets the mass of its own interval (as Optuna does). */
      double lo = log(d->low - 0.5), hi = log(d->high + 0.5);
      double v = round(exp(lo + sieve_rng_uniform(rng) * (hi - lo)));
      return CLAMP(v, d->low, d->high);
    }
    return d->low + (double) sieve_rng_below(rng, (guint64) (d->high - d->low) + 1);
  case SIEVE_DECISION_FLOAT:
    u = sieve_rng_uniform(rng);
    if (d->log)
      return CLAMP(exp(log(d->low) + u * (log(d->high) - log(d->low))), d->low, d->high);
    return d->low + u * (d->high - d->low);
  }
  g_assert_not_reached();
}

void
sieve_genotype_repair(SieveGenotype *genotype, SieveRng *rng)
{
  g_return_if_fail(genotype != NULL && rng != NULL);
  const SieveSpace *space = genotype->space;
  /* Parents come before children, so one pass in order sees final parents. */
  for (guint i = 0; i < genotype->n; i++) {
    if (!sieve_space_is_active(space, genotype, i))
      genotype->values[i] = NAN;
    else if (isnan(genotype->values[i]))
      genotype->values[i] = sample_decision(sieve_space_decision(space, i), rng);
  }
}

/* Draws sieve_space_sample makes before it calls a space's check broken. */
#define SAMPLE_TRIES 100000

static gboolean
is_member(const SieveSpace *space, const SieveGenotype *genotype, GError **error)
{
  if (space->klass == NULL || space->klass->check == NULL)
    return TRUE;
  if (error == NULL) /* sieve_space_sample's draws: no reason wanted */
    return space->klass->check(space->instance, space, genotype, NULL);
  GError *local = NULL;
  if (space->klass->check(space->instance, space, genotype, &local)) {
    g_clear_error(&local);
    return TRUE;
  }
  /* Said as the space's own refusal (a caller would otherwise have no
   * reason to give, and guess one). */
  if (local == NULL)
    local = g_error_new(SIEVE_ERROR, SIEVE_ERROR_PARSE, "space '%s' rejected it without a reason",
                        sieve_space_get_name(space));
  g_propagate_error(error, local);
  return FALSE;
}

SieveGenotype *
sieve_space_sample(const SieveSpace *space, SieveRng *rng)
{
  g_return_val_if_fail(space != NULL && rng != NULL, NULL);
  SieveGenotype *g = sieve_genotype_new(space);
  sieve_genotype_repair(g, rng);
  /* Rejection keeps the draw uniform over the members, as NAS-Bench-101's
   * own random_spec() does. */
  for (guint t = 1; !is_member(space, g, NULL); t++) {
    if (t == SAMPLE_TRIES) {
      g_critical("space %s: no member in %u uniform draws; its check refuses (nearly) everything",
                 sieve_space_get_name(space), SAMPLE_TRIES);
      break;
    }
    for (guint i = 0; i < g->n; i++)
      g->values[i] = NAN;
    sieve_genotype_repair(g, rng);
  }
  return g;
}

gboolean
sieve_space_validate(const SieveSpace *space, const SieveGenotype *genotype, GError **error)
{
  g_return_val_if_fail(space != NULL && genotype != NULL, FALSE);
  if (genotype->space != space && genotype->n != space->decisions->len) {
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_PARSE, "genotype has %u values, space '%s' has %u decisions",
                genotype->n, sieve_space_get_name(space), space->decisions->len);
    return FALSE;
  }
  for (guint i = 0; i < genotype->n; i++) {
    const SieveDecision *d = sieve_space_decision(space, i);
    double v = genotype->values[i];
    gboolean active = sieve_space_is_active(space, genotype, i);
    if (!active) {
      if (!isnan(v)) {
        g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_PARSE,
                    "'%s' is inactive (its condition on '%s' does not hold) but has a value", d->name,
                    sieve_space_decision(space, (guint) d->parent)->name);
        return FALSE;
      }
      continue;
    }
    if (isnan(v)) {
      g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_PARSE, "'%s' is active but has no value", d->name);
      return FALSE;
    }
    if (d->kind != SIEVE_DECISION_FLOAT && v != floor(v)) {
      g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_PARSE, "'%s' must be an integer, got %g", d->name, v);
      return FALSE;
    }
    if (!(v >= d->low && v <= d->high)) {
      g_autofree char *lo = sieve_text_format_double(d->low), *hi = sieve_text_format_double(d->high);
      g_autofree char *got = sieve_text_format_double(v);
      g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_PARSE, "'%s' = %s is outside [%s, %s]", d->name, got, lo, hi);
      return FALSE;
    }
  }
  return is_member(space, genotype, error);
}

char *
sieve_space_format_value(const SieveSpace *space, guint i, double value)
{
  const SieveDecision *d = sieve_space_decision(space, i);
  g_return_val_if_fail(d != NULL, NULL);
  if (isnan(value))
    return g_strdup("");
  switch (d->kind) {
  case SIEVE_DECISION_CATEGORICAL:
    g_return_val_if_fail(value >= 0 && value < d->n_choices, NULL);
    return g_strdup(d->choices[(guint) value]);
  case SIEVE_DECISION_INT:
    return g_strdup_printf("%" G_GINT64_FORMAT, (gint64) value);
  case SIEVE_DECISION_FLOAT:
    return sieve_text_format_double(value);
  }
  g_assert_not_reached();
}

/* Generic text: "name=value,name=value" over active decisions in declaration
 * order.  ',', '=' and '%' inside choice names are %-escaped so that any
 * choice name round-trips. */
static void
append_escaped(GString *out, const char *s)
{
  for (; *s; s++) {
    if (*s == ',' || *s == '=' || *s == '%')
      g_string_append_printf(out, "%%%02X", (unsigned char) *s);
    else
      g_string_append_c(out, *s);
  }
}

static char *
unescape(const char *s)
{
  GString *out = g_string_new(NULL);
  for (; *s; s++) {
    if (s[0] == '%' && g_ascii_isxdigit(s[1]) && g_ascii_isxdigit(s[2])) {
      g_string_append_c(out, (char) (g_ascii_xdigit_value(s[1]) * 16 + g_ascii_xdigit_value(s[2])));
      s += 2;
    } else {
      g_string_append_c(out, *s);
    }
  }
  return g_string_free(out, FALSE);
}

char *
sieve__space_generic_format(const SieveSpace *space, const SieveGenotype *genotype)
{
  GString *out = g_string_new(NULL);
  for (guint i = 0; i < genotype->n; i++) {
    if (isnan(genotype->values[i]))
      continue;
    if (out->len)
      g_string_append_c(out, ',');
    g_string_append(out, sieve_space_decision(space, i)->name);
    g_string_append_c(out, '=');
    g_autofree char *value = sieve_space_format_value(space, i, genotype->values[i]);
    append_escaped(out, value);
  }
  return g_string_free(out, FALSE);
}

/* The message sieve_space_validate gives, with the value as written. */
static gboolean
out_of_range(const SieveDecision *d, const char *text, GError **error)
{
  g_autofree char *lo = sieve_text_format_double(d->low), *hi = sieve_text_format_double(d->high);
  g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_PARSE, "'%s' = %s is outside [%s, %s]", d->name, text, lo, hi);
  return FALSE;
}

static gboolean
parse_value(const SieveDecision *d, const char *text, double *out, GError **error)
{
  char *end = NULL;
  switch (d->kind) {
  case SIEVE_DECISION_CATEGORICAL: {
    g_autofree char *name = unescape(text);
    for (guint k = 0; k < d->n_choices; k++)
      if (strcmp(d->choices[k], name) == 0) {
        *out = k;
        return TRUE;
      }
    g_autofree char *list = g_strjoinv(", ", (char **) d->choices);
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_PARSE, "'%s' is not a choice of '%s' (one of: %s)", name,
                d->name, list);
    return FALSE;
  }
  case SIEVE_DECISION_INT: {
    errno = 0;
    gint64 v = g_ascii_strtoll(text, &end, 10);
    if (*text == '\0' || *end != '\0') {
      g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_PARSE, "'%s' expects an integer, got '%s'", d->name, text);
      return FALSE;
    }
    /* Checked here, on the text: strtoll clamps what overflows to
     * +-2^63, and the error must quote what was written. */
    if (errno == ERANGE || (double) v < d->low || (double) v > d->high)
      return out_of_range(d, text, error);
    *out = (double) v;
    return TRUE;
  }
  case SIEVE_DECISION_FLOAT: {
    double v = g_ascii_strtod(text, &end);
    if (*text == '\0' || *end != '\0' || !isfinite(v)) {
      g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_PARSE, "'%s' expects a number, got '%s'", d->name, text);
      return FALSE;
    }
    if (!(v >= d->low && v <= d->high))
      return out_of_range(d, text, error);
    *out = v;
    return TRUE;
  }
  }
  g_assert_not_reached();
}

SieveGenotype *
sieve__space_generic_parse(const SieveSpace *space, const char *text, GError **error)
{
  g_autoptr(SieveGenotype) g = sieve_genotype_new(space);
  g_auto(GStrv) parts = g_strsplit(text, ",", -1);
  guint n_decisions = space->decisions->len;
  g_autofree const char **names = g_new0(const char *, n_decisions + 1);
  for (guint i = 0; i < n_decisions; i++)
    names[i] = sieve_space_decision(space, i)->name;
  for (guint k = 0; parts[k] != NULL; k++) {
    if (parts[k][0] == '\0' && parts[1] == NULL)
      break; /* the empty text: no active decision */
    char *eq = strchr(parts[k], '=');
    if (eq == NULL) {
      g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_PARSE, "expected name=value, got '%s'", parts[k]);
      return NULL;
    }
    *eq = '\0';
    gint i = sieve_space_find(space, parts[k]);
    if (i < 0) {
      const char *guess = sieve_suggest(parts[k], names);
      g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_PARSE, "unknown decision '%s'%s%s%s", parts[k],
                  guess ? " (did you mean '" : "", guess ? guess : "", guess ? "'?)" : "");
      return NULL;
    }
    if (!isnan(g->values[i])) {
      g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_PARSE, "'%s' given twice", parts[k]);
      return NULL;
    }
    if (!parse_value(sieve_space_decision(space, (guint) i), eq + 1, &g->values[i], error))
      return NULL;
  }
  return g_steal_pointer(&g);
}

char *
sieve_space_format(const SieveSpace *space, const SieveGenotype *genotype)
{
  g_return_val_if_fail(space != NULL && genotype != NULL, NULL);
  if (space->klass != NULL && space->klass->format != NULL)
    return space->klass->format(space->instance, space, genotype);
  return sieve__space_generic_format(space, genotype);
}

SieveGenotype *
sieve_space_parse(const SieveSpace *space, const char *text, GError **error)
{
  g_return_val_if_fail(space != NULL && text != NULL, NULL);
  g_autoptr(SieveGenotype) g = NULL;
  GError *local = NULL;
  if (space->klass != NULL && space->klass->parse != NULL)
    g = space->klass->parse(space->instance, space, text, &local);
  else
    g = sieve__space_generic_parse(space, text, &local);
  if (g == NULL || !sieve_space_validate(space, g, &local)) {
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_PARSE, "bad genotype '%s' for space '%s': %s", text,
                sieve_space_get_name(space), local ? local->message : "unknown error");
    g_clear_error(&local);
    return NULL;
  }
  return g_steal_pointer(&g);
}

char *
sieve_space_to_json(const SieveSpace *space, const SieveGenotype *genotype)
{
  g_return_val_if_fail(space != NULL && genotype != NULL, NULL);
  GString *out = g_string_new("{");
  gboolean first = TRUE;
  for (guint i = 0; i < genotype->n; i++) {
    double v = genotype->values[i];
    if (isnan(v))
      continue;
    const SieveDecision *d = sieve_space_decision(space, i);
    if (!first)
      g_string_append(out, ", ");
    first = FALSE;
    sieve_json_append_string(out, d->name);
    g_string_append(out, ": ");
    const char *typed = d->kind == SIEVE_DECISION_CATEGORICAL ? sieve_space_choice_json(space, i, (guint) v) : NULL;
    if (typed != NULL)
      g_string_append(out, typed);
    else if (d->kind == SIEVE_DECISION_CATEGORICAL)
      sieve_json_append_string(out, d->choices[(guint) v]);
    else if (d->kind == SIEVE_DECISION_INT)
      g_string_append_printf(out, "%" G_GINT64_FORMAT, (gint64) v);
    else
      sieve_json_append_double(out, v);
  }
  g_string_append_c(out, '}');
  return g_string_free(out, FALSE);
}
