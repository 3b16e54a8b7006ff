/* sieve plugin: hyper-parameter spaces written in YAML.
 *
 *   parameters:
 *     optimizer: [sgd, adam]                        # categorical shorthand
 *     lr: {type: float, low: 1.0e-5, high: 1.0e-1, log: true}
 *     momentum: {type: float, low: 0.0, high: 0.99, condition: {optimizer: [sgd]}}
 *     layers: {type: int, low: 1, high: 8}
 *
 * either in a file (option `file`, e.g. search_spaces/mlp.yaml) or inline in
 * the experiment (option `parameters`).  Every mistake is reported at the
 * file:line:col where it was written.  Genotypes use the generic
 * "name=value,..." text form, which needs parameter names free of ',' and
 * '=': names are restricted to identifiers.
 */
#include <math.h>
#include <string.h>

#include <sieve/abi.h>
#include <sieve/component.h>
#include <sieve/node.h>
#include <sieve/options.h>
#include <sieve/plugin.h>
#include <sieve/space.h>
#include <sieve/text.h>

static const SieveOptionSpec hpo_options[] = {
  {"file", SIEVE_OPTION_TYPE_PATH, NULL, 0, 0, NULL,
   "YAML file whose top-level 'parameters' map declares the space", 0, {NULL}},
  {"parameters", SIEVE_OPTION_TYPE_NODE, NULL, 0, 0, NULL,
   "the same 'parameters' map written inline (instead of file)", 0, {NULL}},
  SIEVE_OPTION_END,
};

static const char *const type_names[] = {"categorical", "int", "float", NULL};
static const char *const categorical_keys[] = {"type", "choices", "condition", NULL};
static const char *const number_keys[] = {"type", "low", "high", "log", "condition", NULL};
static const char *const all_keys[] = {"type", "choices", "low", "high", "log", "condition", NULL};
static const char *const file_keys[] = {"parameters", "description", NULL};

static const char *
kind_noun(const SieveNode *node)
{
  switch (sieve_node_kind(node)) {
  case SIEVE_NODE_SCALAR:
    return "a scalar";
  case SIEVE_NODE_MAP:
    return "a map";
  case SIEVE_NODE_LIST:
    return "a list";
  }
  return "?";
}

/* Identifier: [A-Za-z_][A-Za-z0-9_.-]*, so names never need escaping. */
static gboolean
valid_name(const char *name)
{
  if (!(g_ascii_isalpha(name[0]) || name[0] == '_'))
    return FALSE;
  for (const char *p = name; *p; p++)
    if (!(g_ascii_isalnum(*p) || *p == '_' || *p == '.' || *p == '-'))
      return FALSE;
  return TRUE;
}

static gboolean
read_choices(SieveSpace *space, const char *name, const SieveNode *list, guint *index, GError **error)
{
  if (sieve_node_kind(list) != SIEVE_NODE_LIST) {
    sieve_node_set_error(error, list, "choices of '%s' must be a list, got %s", name, kind_noun(list));
    return FALSE;
  }
  guint n = sieve_node_size(list);
  if (n == 0) {
    sieve_node_set_error(error, list, "categorical parameter '%s' needs at least one choice", name);
    return FALSE;
  }
  g_autofree const char **choices = g_new0(const char *, n + 1);
  for (guint k = 0; k < n; k++) {
    const SieveNode *item = sieve_node_nth(list, k);
    if (sieve_node_kind(item) != SIEVE_NODE_SCALAR) {
      sieve_node_set_error(error, item, "choice %u of '%s' must be a scalar, got %s", k + 1, name,
                           kind_noun(item));
      return FALSE;
    }
    const char *text = sieve_node_text(item);
    if (text[0] == '\0') {
      sieve_node_set_error(error, item, "choice %u of '%s' is empty", k + 1, name);
      return FALSE;
    }
    for (guint m = 0; m < k; m++)
      if (strcmp(choices[m], text) == 0) {
        sieve_node_set_error(error, item, "choice '%s' of '%s' is listed twice", text, name);
        return FALSE;
      }
    choices[k] = text;
  }
  *index = sieve_space_add_categorical(space, name, n, choices);
  /* An unquoted number or true/false keeps its type in the JSON a command
   * evaluator reads, as Optuna's suggest_categorical keeps it. */
  for (guint k = 0; k < n; k++) {
    const SieveNode *item = sieve_node_nth(list, k);
    if (sieve_node_is_quoted(item))
      continue;
    gint64 i;
    double x;
    gboolean b;
    char buf[SIEVE_TEXT_DOUBLE_SIZE];
    g_autofree char *json = NULL;
    if (sieve_node_get_int(item, &i, NULL))
      json = g_strdup_printf("%" G_GINT64_FORMAT, i);
    else if (sieve_node_get_double(item, &x, NULL) && isfinite(x))
      json = g_strdup(sieve_text_format_double_buf(x, buf));
    else if (sieve_node_get_bool(item, &b, NULL))
      json = g_strdup(b ? "true" : "false");
    if (json != NULL)
      sieve_space_set_choice_json(space, *index, k, json);
  }
  return TRUE;
}

/* low/high/log of an int or float parameter. */
static gboolean
read_range(SieveSpace *space, const char *name, const SieveNode *spec, gboolean is_int, guint *index,
           GError **error)
{
  const char *bounds[2] = {"low", "high"};
  double value[2] = {0, 0};
  gint64 ivalue[2] = {0, 0};
  for (guint b = 0; b < 2; b++) {
    const SieveNode *node = sieve_node_lookup(spec, bounds[b]);
    if (node == NULL) {
      sieve_node_set_error(error, spec, "%s parameter '%s' needs '%s'", is_int ? "int" : "float", name,
                           bounds[b]);
      return FALSE;
    }
    if (is_int) {
      if (!sieve_node_get_int(node, &ivalue[b], error))
        return FALSE;
      /* Genotypes hold doubles: keep integers exactly representable. */
      if (ivalue[b] > (G_GINT64_CONSTANT(1) << 53) || ivalue[b] < -(G_GINT64_CONSTANT(1) << 53)) {
        sieve_node_set_error(error, node, "'%s' of '%s' must lie within +-2^53", bounds[b], name);
        return FALSE;
      }
      value[b] = (double) ivalue[b];
    } else {
      if (!sieve_node_get_double(node, &value[b], error))
        return FALSE;
      if (!isfinite(value[b])) {
        sieve_node_set_error(error, node, "'%s' of '%s' must be a finite number, got %s", bounds[b], name,
                             sieve_node_text(node));
        return FALSE;
      }
    }
  }
  const SieveNode *high_node = sieve_node_lookup(spec, "high");
  if (!(value[0] < value[1])) {
    sieve_node_set_error(error, high_node, "'high' of '%s' must be greater than 'low' (%s), got %s", name,
                         sieve_node_text(sieve_node_lookup(spec, "low")), sieve_node_text(high_node));
    return FALSE;
  }
  /* Samplers and models work on low + u * (high - low): a width past
   * DBL_MAX would give inf (ints are within +-2^53, so never). */
  if (!isfinite(value[1] - value[0])) {
    sieve_node_set_error(error, high_node,
                         "the range of '%s' (%s to %s) is wider than the largest double (%g): narrow it", name,
                         sieve_node_text(sieve_node_lookup(spec, "low")), sieve_node_text(high_node), G_MAXDOUBLE);
    return FALSE;
  }
  gboolean log = FALSE;
  const SieveNode *log_node = sieve_node_lookup(spec, "log");
  if (log_node != NULL && !sieve_node_get_bool(log_node, &log, error))
    return FALSE;
  if (log && !(value[0] > 0)) {
    sieve_node_set_error(error, sieve_node_lookup(spec, "low"),
                         "'%s' is on a log scale, so 'low' must be > 0, got %s", name,
                         sieve_node_text(sieve_node_lookup(spec, "low")));
    return FALSE;
  }
  if (is_int)
    *index = sieve_space_add_int(space, name, ivalue[0], ivalue[1], log);
  else
    *index = sieve_space_add_float(space, name, value[0], value[1], log);
  return TRUE;
}

/* condition: {parent: [values]} (or a single value). */
static gboolean
read_condition(SieveSpace *space, const char *name, guint child, const SieveNode *condition, GError **error)
{
  if (sieve_node_kind(condition) != SIEVE_NODE_MAP) {
    sieve_node_set_error(error, condition, "condition of '%s' must be a map like {optimizer: [sgd]}, got %s",
                         name, kind_noun(condition));
    return FALSE;
  }
  if (sieve_node_size(condition) != 1) {
    sieve_node_set_error(error, condition, "condition of '%s' must name exactly one parent, got %u", name,
                         sieve_node_size(condition));
    return FALSE;
  }
  const SieveNode *key = sieve_node_nth_key(condition, 0);
  const char *parent_name = sieve_node_text(key);
  gint parent = sieve_space_find(space, parent_name);
  if (parent < 0 || (guint) parent >= child) {
    guint n = child;
    g_autofree const char **earlier = g_new0(const char *, n + 1);
    for (guint i = 0; i < n; i++)
      earlier[i] = sieve_space_decision(space, i)->name;
    const char *close = sieve_suggest(parent_name, earlier);
    if (strcmp(parent_name, name) == 0)
      sieve_node_set_error(error, key, "'%s' cannot be conditioned on itself", name);
    else if (close)
      sieve_node_set_error(error, key, "condition of '%s' names '%s', which is not an earlier parameter "
                           "(did you mean '%s'?)", name, parent_name, close);
    else
      sieve_node_set_error(error, key, "condition of '%s' names '%s', which is not an earlier parameter "
                           "(a parent must be declared before the parameters that depend on it)",
                           name, parent_name);
    return FALSE;
  }
  const SieveDecision *p = sieve_space_decision(space, (guint) parent);
  if (p->kind != SIEVE_DECISION_CATEGORICAL) {
    sieve_node_set_error(error, key, "condition of '%s' names '%s', which is %s parameter; a parent must be "
                         "categorical", name, parent_name, p->kind == SIEVE_DECISION_INT ? "an int" : "a float");
    return FALSE;
  }
  if (p->n_choices > 64) {
    sieve_node_set_error(error, key, "'%s' has %u choices; a condition's parent may have at most 64",
                         parent_name, p->n_choices);
    return FALSE;
  }
  const SieveNode *values = sieve_node_nth(condition, 0);
  guint n_values = sieve_node_kind(values) == SIEVE_NODE_LIST ? sieve_node_size(values) : 1;
  if (sieve_node_kind(values) == SIEVE_NODE_MAP) {
    sieve_node_set_error(error, values, "values of the condition on '%s' must be a list of its choices, got a map",
                         parent_name);
    return FALSE;
  }
  if (n_values == 0) {
    sieve_node_set_error(error, values, "the condition of '%s' on '%s' allows no value", name, parent_name);
    return FALSE;
  }
  guint64 mask = 0;
  for (guint k = 0; k < n_values; k++) {
    const SieveNode *item = sieve_node_kind(values) == SIEVE_NODE_LIST ? sieve_node_nth(values, k) : values;
    if (sieve_node_kind(item) != SIEVE_NODE_SCALAR) {
      sieve_node_set_error(error, item, "a value of the condition on '%s' must be a scalar, got %s", parent_name,
                           kind_noun(item));
      return FALSE;
    }
    const char *text = sieve_node_text(item);
    gint found = -1;
    for (guint c = 0; c < p->n_choices; c++)
      if (strcmp(p->choices[c], text) == 0)
        found = (gint) c;
    if (found < 0) {
      g_autofree char *list = g_strjoinv(", ", (char **) p->choices);
      const char *close = sieve_suggest(text, p->choices);
      g_autofree char *hint = close ? g_strdup_printf(" (did you mean '%s'?)", close) : g_strdup("");
      sieve_node_set_error(error, item, "'%s' is not a choice of '%s' (one of: %s)%s", text, parent_name, list,
                           hint);
      return FALSE;
    }
    mask |= G_GUINT64_CONSTANT(1) << (guint) found;
  }
  sieve_space_set_condition(space, child, (guint) parent, mask);
  return TRUE;
}

static gboolean
read_parameter(SieveSpace *space, const SieveNode *key, const SieveNode *spec, GError **error)
{
  const char *name = sieve_node_text(key);
  if (!valid_name(name)) {
    sieve_node_set_error(error, key, "parameter name '%s' must start with a letter or '_' and hold only "
                         "letters, digits, '_', '.' and '-'", name);
    return FALSE;
  }
  if (sieve_space_find(space, name) >= 0) {
    sieve_node_set_error(error, key, "parameter '%s' is declared twice", name);
    return FALSE;
  }
  guint index = 0;
  if (sieve_node_kind(spec) == SIEVE_NODE_LIST)
    return read_choices(space, name, spec, &index, error);
  if (sieve_node_kind(spec) != SIEVE_NODE_MAP) {
    sieve_node_set_error(error, spec, "parameter '%s' must be a map like {type: float, low: 0, high: 1} or "
                         "a list of choices, got %s", name, kind_noun(spec));
    return FALSE;
  }
  const SieveNode *type_node = sieve_node_lookup(spec, "type");
  if (type_node == NULL) {
    sieve_node_set_error(error, spec, "parameter '%s' needs a 'type' (categorical, int or float)", name);
    return FALSE;
  }
  const char *type = sieve_node_get_string(type_node, error);
  if (type == NULL)
    return FALSE;
  if (!g_strv_contains(type_names, type)) {
    const char *close = sieve_suggest(type, type_names);
    g_autofree char *hint = close ? g_strdup_printf(" (did you mean '%s'?)", close) : g_strdup("");
    sieve_node_set_error(error, type_node, "unknown type '%s' for '%s': expected categorical, int or float%s",
                         type, name, hint);
    return FALSE;
  }
  gboolean categorical = strcmp(type, "categorical") == 0;
  const char *const *valid = categorical ? categorical_keys : number_keys;
  for (guint k = 0; k < sieve_node_size(spec); k++) {
    const SieveNode *spec_key = sieve_node_nth_key(spec, k);
    const char *word = sieve_node_text(spec_key);
    if (g_strv_contains(valid, word))
      continue;
    g_autofree char *list = g_strjoinv(", ", (char **) valid);
    if (g_strv_contains(all_keys, word)) {
      sieve_node_set_error(error, spec_key, "'%s' does not apply to %s parameter '%s' (it takes %s)", word,
                           categorical ? "categorical" : strcmp(type, "int") == 0 ? "int" : "float", name, list);
    } else {
      const char *close = sieve_suggest(word, valid);
      if (close)
        sieve_node_set_error(error, spec_key, "unknown key '%s' in parameter '%s' (did you mean '%s'?)", word,
                             name, close);
      else
        sieve_node_set_error(error, spec_key, "unknown key '%s' in parameter '%s' (it takes %s)", word, name,
                             list);
    }
    return FALSE;
  }
  if (categorical) {
    const SieveNode *choices = sieve_node_lookup(spec, "choices");
    if (choices == NULL) {
      sieve_node_set_error(error, spec, "categorical parameter '%s' needs 'choices'", name);
      return FALSE;
    }
    if (!read_choices(space, name, choices, &index, error))
      return FALSE;
  } else if (!read_range(space, name, spec, strcmp(type, "int") == 0, &index, error)) {
    return FALSE;
  }
  const SieveNode *condition = sieve_node_lookup(spec, "condition");
  if (condition != NULL && !read_condition(space, name, index, condition, error))
    return FALSE;
  return TRUE;
}

static gboolean
read_parameters(SieveSpace *space, const SieveNode *map, GError **error)
{
  if (sieve_node_kind(map) != SIEVE_NODE_MAP) {
    sieve_node_set_error(error, map, "'parameters' must be a map of parameter names to their domains, got %s",
                         kind_noun(map));
    return FALSE;
  }
  if (sieve_node_size(map) == 0) {
    sieve_node_set_error(error, map, "'parameters' declares no parameter");
    return FALSE;
  }
  for (guint k = 0; k < sieve_node_size(map); k++) {
    if (!read_parameter(space, sieve_node_nth_key(map, k), sieve_node_nth(map, k), error))
      return FALSE;
    /* For messages about it, such as the train evaluator's about a recipe
     * decision it does not take. */
    sieve_space_set_decision_where(space, sieve_space_n_decisions(space) - 1, sieve_node_nth_key(map, k));
  }
  return TRUE;
}

static gboolean
read_file(SieveSpace *space, const SieveOptions *options, const char *path, GError **error)
{
  g_autoptr(GError) local = NULL;
  g_autoptr(SieveNode) root = sieve_node_parse_file(path, &local);
  if (root == NULL) {
    if (local->code == SIEVE_ERROR_CONFIG) /* a YAML syntax error, already located in the file */
      g_propagate_error(error, g_steal_pointer(&local));
    else
      sieve_options_set_error(options, "file", error, "cannot read search space: %s", local->message);
    return FALSE;
  }
  if (sieve_node_kind(root) != SIEVE_NODE_MAP) {
    sieve_node_set_error(error, root, "a search space file must be a map with 'parameters', got %s",
                         kind_noun(root));
    return FALSE;
  }
  for (guint k = 0; k < sieve_node_size(root); k++) {
    const SieveNode *key = sieve_node_nth_key(root, k);
    if (g_strv_contains(file_keys, sieve_node_text(key)))
      continue;
    const char *close = sieve_suggest(sieve_node_text(key), file_keys);
    g_autofree char *hint = close ? g_strdup_printf(" (did you mean '%s'?)", close) : g_strdup("");
    sieve_node_set_error(error, key, "unknown key '%s' in a search space file (it takes parameters, "
                         "description)%s", sieve_node_text(key), hint);
    return FALSE;
  }
  const SieveNode *parameters = sieve_node_lookup(root, "parameters");
  if (parameters == NULL) {
    sieve_node_set_error(error, root, "a search space file needs a top-level 'parameters' map");
    return FALSE;
  }
  return read_parameters(space, parameters, error);
}

static gpointer
hpo_create(SieveSpace *space, const SieveOptions *options, GError **error)
{
  gboolean has_file = sieve_options_is_set(options, "file");
  gboolean has_inline = sieve_options_is_set(options, "parameters");
  if (has_file == has_inline) {
    sieve_options_set_error(options, has_file ? "parameters" : "file", error,
                            has_file ? "space 'hpo' takes 'file' or 'parameters', not both"
                                     : "space 'hpo' needs 'file' (a YAML search space) or 'parameters' (inline)");
    return NULL;
  }
  if (has_file)
    read_file(space, options, sieve_options_get_string(options, "file"), error);
  else
    read_parameters(space, sieve_options_get_node(options, "parameters"), error);
  return NULL; /* the decisions are the whole state */
}

static const SieveSpaceClass hpo_class = {
  .create = hpo_create,
  .destroy = NULL,
  .format = NULL, /* the generic name=value text */
  .parse = NULL,
};

static const SieveComponentInfo hpo_info = {
  .kind = SIEVE_KIND_SPACE,
  .name = "hpo",
  .summary = "hyper-parameter space from YAML (categorical, int, float, conditions)",
  .options = hpo_options,
  .klass = &hpo_class,
  .example = "{plugin: hpo, file: search_spaces/branin.yaml}",
};

static gboolean
hpo_init(SieveRegistry *registry, GError **error)
{
  return sieve_registry_add(registry, &hpo_info, error);
}

SIEVE_PLUGIN_DEFINE("hpo", "0.1.0", "Hyper-parameter search spaces written in YAML", "MIT", hpo_init);
