/* sieve: validation of a component's options against its SieveOptionSpec
 * table, and the text `sieve plugins --describe` prints from the same table
 * (one declaration drives validation and docs, as NOMAD's attribute files
 * do). */
#include "base/base-private.h"

#include <math.h>
#include <string.h>

#include <sieve/options.h>
#include <sieve/text.h>

typedef struct {
  gboolean set;       /* written by the user */
  gboolean has_value; /* set, or a default */
  gboolean b;
  gint64 i;
  double d;
  char *s;
  char **strv;
  SieveNode *node;  /* NODE value */
  SieveNode *where; /* the value as written (set only) */
} OptionValue;

struct _SieveOptions {
  const SieveOptionSpec *spec;
  guint n;
  OptionValue *values;
  SieveNode *section; /* the map validated, (nullable) */
  char *base_dir;     /* what relative paths resolved against (nullable: the working folder) */
};

/* ---- describing a spec ---------------------------------------------------- */

static const char *
type_name(SieveOptionType type)
{
  switch (type) {
  case SIEVE_OPTION_TYPE_BOOL:
    return "bool";
  case SIEVE_OPTION_TYPE_INT:
    return "integer";
  case SIEVE_OPTION_TYPE_FLOAT:
    return "float";
  case SIEVE_OPTION_TYPE_STRING:
    return "string";
  case SIEVE_OPTION_TYPE_CHOICE:
    return "choice";
  case SIEVE_OPTION_TYPE_PATH:
    return "path";
  case SIEVE_OPTION_TYPE_STRING_LIST:
    return "string list";
  case SIEVE_OPTION_TYPE_NODE:
    return "any value";
  }
  return "?";
}

/* A bound of +-INFINITY lets infinity in and +-G_MAXDOUBLE keeps it out
 * (a finite option); neither is shown as a range. */
static gboolean
has_min(const SieveOptionSpec *o)
{
  return (o->flags & SIEVE_OPTION_HAS_MIN) && o->min > -G_MAXDOUBLE;
}

static gboolean
has_max(const SieveOptionSpec *o)
{
  return (o->flags & SIEVE_OPTION_HAS_MAX) && o->max < G_MAXDOUBLE;
}

/* A float bounded at +-G_MAXDOUBLE: says "finite", as the range does not. */
static gboolean
says_finite(const SieveOptionSpec *o)
{
  return o->type == SIEVE_OPTION_TYPE_FLOAT && (((o->flags & SIEVE_OPTION_HAS_MIN) && o->min == -G_MAXDOUBLE) ||
                                                ((o->flags & SIEVE_OPTION_HAS_MAX) && o->max == G_MAXDOUBLE));
}

const SieveOptionSpec *
sieve__option_spec_find(const SieveOptionSpec *spec, const char *name)
{
  for (const SieveOptionSpec *o = spec; o && o->name; o++)
    if (strcmp(o->name, name) == 0)
      return o;
  return NULL;
}

static void
append_number(GString *out, const SieveOptionSpec *o, double v)
{
  if (o->type == SIEVE_OPTION_TYPE_INT && fabs(v) < 9.2e18)
    g_string_append_printf(out, "%" G_GINT64_FORMAT, (gint64)v);
  else
    sieve_text_append_double(out, v);
}

/* "[2, 1000000]", ">= 0", "<= 1", or "" without bounds. */
static char *
range_text(const SieveOptionSpec *o)
{
  if (o->type != SIEVE_OPTION_TYPE_INT && o->type != SIEVE_OPTION_TYPE_FLOAT)
    return g_strdup("");
  GString *out = g_string_new(NULL);
  if (has_min(o) && has_max(o)) {
    g_string_append_c(out, '[');
    append_number(out, o, o->min);
    g_string_append(out, ", ");
    append_number(out, o, o->max);
    g_string_append_c(out, ']');
  } else if (has_min(o)) {
    g_string_append(out, ">= ");
    append_number(out, o, o->min);
  } else if (has_max(o)) {
    g_string_append(out, "<= ");
    append_number(out, o, o->max);
  }
  return g_string_free(out, FALSE);
}

static char *
choices_text(const SieveOptionSpec *o)
{
  return o->choices ? g_strjoinv(", ", (char **)o->choices) : g_strdup("");
}

char *
sieve_option_spec_expected(const SieveOptionSpec *option)
{
  g_return_val_if_fail(option != NULL, NULL);
  g_autofree char *range = range_text(option);
  const char *sep = range[0] == '[' ? " in " : range[0] ? " " : "";
  switch (option->type) {
  case SIEVE_OPTION_TYPE_BOOL:
    return g_strdup("true or false");
  case SIEVE_OPTION_TYPE_INT:
    return g_strdup_printf("integer%s%s", sep, range);
  case SIEVE_OPTION_TYPE_FLOAT:
    return g_strdup_printf("%sfloat%s%s", says_finite(option) ? "finite " : "", sep, range);
  case SIEVE_OPTION_TYPE_CHOICE: {
    g_autofree char *choices = choices_text(option);
    return g_strdup_printf("one of: %s", choices);
  }
  case SIEVE_OPTION_TYPE_STRING:
    return g_strdup("string");
  case SIEVE_OPTION_TYPE_PATH:
    return g_strdup("path");
  case SIEVE_OPTION_TYPE_STRING_LIST:
    return g_strdup("string or list of strings");
  case SIEVE_OPTION_TYPE_NODE:
    return g_strdup("any value");
  }
  return g_strdup("?");
}

char *
sieve_option_spec_describe(const SieveOptionSpec *spec)
{
  GString *out = g_string_new(NULL);
  if (spec == NULL || spec->name == NULL) {
    g_string_append(out, "  (no options)\n");
    return g_string_free(out, FALSE);
  }
  for (const SieveOptionSpec *o = spec; o->name; o++) {
    g_string_append_printf(out, "  %s (%s", o->name, type_name(o->type));
    if (o->default_text)
      g_string_append_printf(out, ", default %s", o->default_text[0] ? o->default_text : "\"\"");
    g_autofree char *range = range_text(o);
    if (range[0])
      g_string_append_printf(out, ", range %s", range);
    if (says_finite(o))
      g_string_append(out, ", finite");
    if (o->type == SIEVE_OPTION_TYPE_CHOICE) {
      g_autofree char *choices = choices_text(o);
      g_string_append_printf(out, ", one of: %s", choices);
    }
    if (o->flags & SIEVE_OPTION_REQUIRED)
      g_string_append(out, ", required");
    g_string_append(out, ")\n");
    if (o->help && o->help[0])
      g_string_append_printf(out, "      %s\n", o->help);
  }
  return g_string_free(out, FALSE);
}

/* ---- validation ----------------------------------------------------------- */

static void
value_clear(OptionValue *v)
{
  g_free(v->s);
  g_strfreev(v->strv);
  sieve_node_unref(v->node);
  sieve_node_unref(v->where);
  memset(v, 0, sizeof *v);
}

void
sieve_options_free(SieveOptions *options)
{
  if (options == NULL)
    return;
  for (guint i = 0; i < options->n; i++)
    value_clear(&options->values[i]);
  g_free(options->values);
  sieve_node_unref(options->section);
  g_free(options->base_dir);
  g_free(options);
}

static char *
resolve_path(const char *text, const char *base_dir)
{
  if (strcmp(text, "~") == 0)
    return g_strdup(g_get_home_dir());
  if (g_str_has_prefix(text, "~/"))
    return g_build_filename(g_get_home_dir(), text + 2, NULL);
  if (g_path_is_absolute(text))
    return g_strdup(text);
  /* Relative to the config's folder, so a config works from any cwd. */
  return g_canonicalize_filename(text, base_dir);
}

/* Reads node into v as option o.  is_default relaxes nothing but lets an
 * empty default stand for the empty string.  Errors point at node. */
/* Whether integer i lies below min (above max), compared as integers: as
 * doubles, 2^53 + 1 rounds to 2^53 and passed a bound of 2^53 (the
 * top-level seed's). */
static gboolean
int_below(gint64 i, double min)
{
  double c = ceil(min);
  if (c >= 9223372036854775808.0)
    return TRUE;
  return c >= -9223372036854775808.0 && i < (gint64)c;
}

static gboolean
int_above(gint64 i, double max)
{
  double f = floor(max);
  if (f < -9223372036854775808.0)
    return TRUE;
  return f < 9223372036854775808.0 && i > (gint64)f;
}

static gboolean
read_value(const SieveOptionSpec *o, SieveNode *node, gboolean is_default, const char *base_dir,
           OptionValue *v, GError **error)
{
  g_autofree char *got = NULL;
  g_autofree char *expected = sieve_option_spec_expected(o);

  switch (o->type) {
  case SIEVE_OPTION_TYPE_BOOL:
    if ((got = sieve__node_read_bool(node, &v->b)))
      goto type_error;
    break;

  case SIEVE_OPTION_TYPE_INT:
  case SIEVE_OPTION_TYPE_FLOAT: {
    gboolean is_int = o->type == SIEVE_OPTION_TYPE_INT;
    double x;
    if (is_int) {
      if ((got = sieve__node_read_int(node, &v->i)))
        goto type_error;
      x = (double)v->i;
    } else {
      if ((got = sieve__node_read_double(node, &v->d)))
        goto type_error;
      x = v->d;
    }
    /* NaN compares false with everything: a bounded option refuses it, and
     * an unbounded one too (no option takes "not a number" to mean
     * something; it would only switch a comparison off). */
    gboolean below = (o->flags & SIEVE_OPTION_HAS_MIN) && (is_int ? int_below(v->i, o->min) : !(x >= o->min));
    gboolean above = (o->flags & SIEVE_OPTION_HAS_MAX) && (is_int ? int_above(v->i, o->max) : !(x <= o->max));
    if (below || above || isnan(x)) {
      sieve_node_set_error(error, node, "option '%s' expects %s %s, got %s", o->name,
                           is_int ? "an" : "a", expected, node->text);
      return FALSE;
    }
    break;
  }

  case SIEVE_OPTION_TYPE_STRING:
  case SIEVE_OPTION_TYPE_PATH:
  case SIEVE_OPTION_TYPE_CHOICE: {
    const char *text = NULL;
    if ((got = sieve__node_read_string(node, is_default, &text)))
      goto type_error;
    if (o->type == SIEVE_OPTION_TYPE_CHOICE) {
      gboolean found = FALSE;
      for (guint i = 0; o->choices && o->choices[i] && !found; i++)
        found = strcmp(o->choices[i], text) == 0;
      if (!found) {
        g_autofree char *choices = choices_text(o);
        const char *close = sieve_suggest(text, o->choices);
        g_autofree char *hint = close ? g_strdup_printf(" (did you mean '%s'?)", close) : g_strdup("");
        sieve_node_set_error(error, node, "option '%s' expects one of %s; got '%s'%s", o->name,
                             choices, text, hint);
        return FALSE;
      }
    }
    v->s = o->type == SIEVE_OPTION_TYPE_PATH ? resolve_path(text, base_dir) : g_strdup(text);
    break;
  }

  case SIEVE_OPTION_TYPE_STRING_LIST: {
    g_autoptr(GPtrArray) list = g_ptr_array_new_with_free_func(g_free);
    if (node->kind == SIEVE_NODE_SCALAR) {
      const char *text = NULL;
      if ((got = sieve__node_read_string(node, FALSE, &text)))
        goto type_error;
      g_ptr_array_add(list, g_strdup(text));
    } else if (node->kind == SIEVE_NODE_LIST) {
      for (guint i = 0; i < node->values->len; i++) {
        SieveNode *item = node->values->pdata[i];
        const char *text = NULL;
        g_autofree char *item_got = sieve__node_read_string(item, FALSE, &text);
        if (item_got) {
          sieve_node_set_error(error, item, "option '%s' expects a list of strings, got %s as item %u",
                               o->name, item_got, i + 1);
          return FALSE;
        }
        g_ptr_array_add(list, g_strdup(text));
      }
    } else {
      got = g_strdup(sieve__node_kind_noun(node->kind));
      goto type_error;
    }
    g_ptr_array_add(list, NULL);
    v->strv = (char **)g_ptr_array_free(g_steal_pointer(&list), FALSE);
    break;
  }

  case SIEVE_OPTION_TYPE_NODE:
    v->node = sieve_node_ref(node);
    break;
  }
  v->has_value = TRUE;
  return TRUE;

type_error: {
  const char *article = "";
  if (o->type == SIEVE_OPTION_TYPE_INT)
    article = "an ";
  else if (o->type == SIEVE_OPTION_TYPE_FLOAT || o->type == SIEVE_OPTION_TYPE_STRING ||
           o->type == SIEVE_OPTION_TYPE_PATH || o->type == SIEVE_OPTION_TYPE_STRING_LIST)
    article = "a ";
  /* Type errors name the type only; the range comes once the type is right. */
  g_autofree char *plain = NULL;
  if (o->type == SIEVE_OPTION_TYPE_INT)
    plain = g_strdup("integer");
  else if (o->type == SIEVE_OPTION_TYPE_FLOAT)
    plain = g_strdup("number");
  sieve_node_set_error(error, node, "option '%s' expects %s%s, got %s", o->name, article,
                       plain ? plain : expected, got);
  return FALSE;
}
}

/* Errors say "the default of option 'x': ..." (the component's bug, not
 * the user's): a one-word default has no position worth a line and column;
 * in a longer one (a list) they are the position in its text. */
static gboolean
read_default(const SieveOptionSpec *o, const char *base_dir, OptionValue *v, GError **error)
{
  g_autofree char *origin = g_strdup_printf("the default of option '%s'", o->name);
  g_autoptr(SieveNode) node = NULL;
  g_autoptr(GError) local = NULL;
  const char *p = o->default_text;
  while (g_ascii_isspace(*p))
    p++;
  if (*p == '\0') {
    node = sieve_node_new_scalar("", FALSE, origin, 0, 0); /* "" is the empty string, not {} */
  } else if ((node = sieve_node_parse_string(o->default_text, -1, origin, &local)) != NULL &&
             node->kind == SIEVE_NODE_SCALAR) {
    node->line = node->column = 0;
  }
  if (node != NULL && read_value(o, node, TRUE, base_dir, v, &local))
    return TRUE;
  g_set_error_literal(error, SIEVE_ERROR, SIEVE_ERROR_FAILED, local->message);
  return FALSE;
}

static gboolean
valid_option_name(const char *name)
{
  if (!g_ascii_isalpha(name[0]))
    return FALSE;
  for (const char *p = name; *p; p++)
    if (!g_ascii_isalnum(*p) && *p != '_' && *p != '-')
      return FALSE;
  return TRUE;
}

/* The first thing wrong with option o of a table (transfer full), or NULL. */
static char *
option_spec_problem(const SieveOptionSpec *spec, const SieveOptionSpec *o, const char *const *reserved)
{
  if (!valid_option_name(o->name))
    return g_strdup("its name is not valid (a letter, then letters, digits, '_' and '-')");
  for (const SieveOptionSpec *before = spec; before < o; before++)
    if (strcmp(before->name, o->name) == 0)
      return g_strdup("it is declared twice");
  for (guint i = 0; reserved && reserved[i]; i++)
    if (strcmp(reserved[i], o->name) == 0)
      return g_strdup_printf("the name is reserved: the registry reads '%s' itself", o->name);
  if ((guint) o->type > SIEVE_OPTION_TYPE_NODE)
    return g_strdup_printf("its type %d is not an option type", (int) o->type);
  if ((o->flags & SIEVE_OPTION_HAS_MIN) && isnan(o->min))
    return g_strdup("its minimum is NaN");
  if ((o->flags & SIEVE_OPTION_HAS_MAX) && isnan(o->max))
    return g_strdup("its maximum is NaN");
  if ((o->flags & SIEVE_OPTION_HAS_MIN) && (o->flags & SIEVE_OPTION_HAS_MAX) && o->min > o->max) {
    g_autoptr(GString) range = g_string_new("its range is empty: minimum ");
    append_number(range, o, o->min);
    g_string_append(range, " is above maximum ");
    append_number(range, o, o->max);
    return g_strdup(range->str);
  }
  if (o->type == SIEVE_OPTION_TYPE_CHOICE && (o->choices == NULL || o->choices[0] == NULL))
    return g_strdup("it is a choice without choices");
  if ((o->flags & SIEVE_OPTION_REQUIRED) && o->default_text != NULL)
    return g_strdup_printf("it is required but has a default (%s)", o->default_text);
  if (o->default_text != NULL) {
    OptionValue v = {0};
    GError *local = NULL;
    gboolean ok = read_default(o, NULL, &v, &local);
    value_clear(&v);
    if (!ok) {
      char *message = g_strdup(local->message);
      g_error_free(local);
      return message;
    }
  }
  return NULL;
}

gboolean
sieve__option_spec_check(const SieveOptionSpec *spec, const char *const *reserved, GError **error)
{
  for (const SieveOptionSpec *o = spec; o && o->name; o++) {
    g_autofree char *problem = option_spec_problem(spec, o, reserved);
    if (problem != NULL) {
      g_autofree char *shown = g_strescape(o->name, NULL);
      /* A default's message names the option itself. */
      if (g_str_has_prefix(problem, "the default of option"))
        g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_PLUGIN, "%s", problem);
      else
        g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_PLUGIN, "option '%s': %s", shown, problem);
      return FALSE;
    }
  }
  return TRUE;
}

static gboolean
is_reserved(const char *key, const char *const *reserved)
{
  for (guint i = 0; reserved && reserved[i]; i++)
    if (strcmp(reserved[i], key) == 0)
      return TRUE;
  return FALSE;
}

SieveOptions *
sieve_options_new(const SieveOptionSpec *spec, const SieveNode *map, const char *const *reserved,
                  const char *base_dir, const char *context, GError **error)
{
  g_return_val_if_fail(error == NULL || *error == NULL, NULL);
  static const SieveOptionSpec empty[] = {SIEVE_OPTION_END};
  if (spec == NULL)
    spec = empty;

  g_autofree char *for_context = context ? g_strdup_printf(" for %s", context) : g_strdup("");
  if (map && map->kind != SIEVE_NODE_MAP) {
    sieve_node_set_error(error, map, "expected a map of options%s, got %s", for_context,
                         sieve__node_kind_noun(map->kind));
    return NULL;
  }

  g_autoptr(SieveOptions) options = g_new0(SieveOptions, 1);
  options->spec = spec;
  while (spec[options->n].name)
    options->n++;
  options->values = g_new0(OptionValue, options->n);
  options->section = map ? sieve_node_ref((SieveNode *)map) : NULL;
  options->base_dir = g_strdup(base_dir);

  /* What the user wrote, in written order. */
  for (guint k = 0; map && k < map->keys->len; k++) {
    SieveNode *key = map->keys->pdata[k];
    SieveNode *value = map->values->pdata[k];
    if (is_reserved(key->text, reserved))
      continue;
    guint i;
    for (i = 0; i < options->n; i++)
      if (strcmp(spec[i].name, key->text) == 0)
        break;
    if (i == options->n) {
      /* The caller's reserved keys (plugin, seed) are valid too, so they
       * are suggested like any option. */
      guint n_reserved = reserved ? g_strv_length((char **)reserved) : 0;
      g_autofree const char **names = g_new0(const char *, options->n + n_reserved + 1);
      for (guint j = 0; j < options->n; j++)
        names[j] = spec[j].name;
      for (guint j = 0; j < n_reserved; j++)
        names[options->n + j] = reserved[j];
      const char *close = sieve_suggest(key->text, names);
      if (close) {
        sieve_node_set_error(error, key, "unknown option '%s'%s (did you mean '%s'?)", key->text,
                             for_context, close);
      } else if (options->n == 0) {
        sieve_node_set_error(error, key, "unknown option '%s'%s (it takes no options)", key->text,
                             for_context);
      } else {
        g_autofree char *all = g_strjoinv(", ", (char **)names);
        sieve_node_set_error(error, key, "unknown option '%s'%s (valid options: %s)", key->text,
                             for_context, all);
      }
      return NULL;
    }
    OptionValue *v = &options->values[i];
    if (!read_value(&spec[i], value, FALSE, base_dir, v, error))
      return NULL;
    v->set = TRUE;
    v->where = sieve_node_ref(value);
  }

  /* Defaults and required options. */
  for (guint i = 0; i < options->n; i++) {
    OptionValue *v = &options->values[i];
    if (v->set)
      continue;
    if (spec[i].default_text) {
      if (!read_default(&spec[i], base_dir, v, error))
        return NULL;
    } else if (spec[i].flags & SIEVE_OPTION_REQUIRED) {
      sieve_node_set_error(error, map, "missing required option '%s'%s", spec[i].name, for_context);
      return NULL;
    }
  }
  return g_steal_pointer(&options);
}

/* ---- accessors ------------------------------------------------------------ */

const char *
sieve__options_get_base_dir(const SieveOptions *options)
{
  g_return_val_if_fail(options != NULL, NULL);
  return options->base_dir;
}

static const OptionValue *
find(const SieveOptions *options, const char *name, guint type_mask, const SieveOptionSpec **spec_out)
{
  g_return_val_if_fail(options != NULL && name != NULL, NULL);
  for (guint i = 0; i < options->n; i++) {
    const SieveOptionSpec *o = &options->spec[i];
    if (strcmp(o->name, name) != 0)
      continue;
    if (type_mask && !(type_mask & (1u << o->type))) {
      g_critical("option '%s' is declared as %s: wrong accessor", name, type_name(o->type));
      return NULL;
    }
    if (spec_out)
      *spec_out = o;
    return &options->values[i];
  }
  g_critical("option '%s' is not declared", name);
  return NULL;
}

#define T(x) (1u << SIEVE_OPTION_TYPE_##x)

gboolean
sieve_options_get_bool(const SieveOptions *options, const char *name)
{
  const OptionValue *v = find(options, name, T(BOOL), NULL);
  return v ? v->b : FALSE;
}

gint64
sieve_options_get_int(const SieveOptions *options, const char *name)
{
  const OptionValue *v = find(options, name, T(INT), NULL);
  return v ? v->i : 0;
}

double
sieve_options_get_double(const SieveOptions *options, const char *name)
{
  const OptionValue *v = find(options, name, T(FLOAT), NULL);
  return v ? v->d : 0.0;
}

const char *
sieve_options_get_string(const SieveOptions *options, const char *name)
{
  const OptionValue *v = find(options, name, T(STRING) | T(CHOICE) | T(PATH), NULL);
  return v ? v->s : NULL;
}

const char *const *
sieve_options_get_strv(const SieveOptions *options, const char *name)
{
  const OptionValue *v = find(options, name, T(STRING_LIST), NULL);
  return v ? (const char *const *)v->strv : NULL;
}

const SieveNode *
sieve_options_get_node(const SieveOptions *options, const char *name)
{
  const OptionValue *v = find(options, name, T(NODE), NULL);
  return v ? v->node : NULL;
}

gboolean
sieve_options_is_set(const SieveOptions *options, const char *name)
{
  const OptionValue *v = find(options, name, 0, NULL);
  return v ? v->set : FALSE;
}

const SieveNode *
sieve_options_node(const SieveOptions *options, const char *name)
{
  const OptionValue *v = find(options, name, 0, NULL);
  if (v == NULL)
    return NULL;
  return v->where ? v->where : options->section;
}

const SieveOptionSpec *
sieve_options_spec(const SieveOptions *options)
{
  g_return_val_if_fail(options != NULL, NULL);
  return options->spec;
}

void
sieve_options_set_error(const SieveOptions *options, const char *name, GError **error,
                        const char *format, ...)
{
  g_return_if_fail(options != NULL && name != NULL);
  va_list args;
  va_start(args, format);
  g_autofree char *message = g_strdup_vprintf(format, args);
  va_end(args);
  sieve_node_set_error(error, sieve_options_node(options, name), "%s", message);
}
