/* The train evaluator's recipe (train-recipe.h): which of its options a
 * genotype may set, and where each lands in SieveTrainOptions.  The option
 * table (train-evaluator.c) gives the type and the range a decision's
 * domain must fit; this table gives the field.  FBNetV3 (Dai et al. 2021)
 * searches these together with the architecture. */
#include <math.h>

#include <sieve/abi.h>
#include <sieve/node.h>
#include <sieve/text.h>

#include "train-recipe.h"

typedef struct {
  const char *option; /* a name in the evaluator's option table, and the decision's */
  gsize offset;       /* of the field in SieveTrainOptions: double, guint or gboolean by the option's type */
} RecipeField;

static const RecipeField recipe_fields[] = {
  {"epochs", G_STRUCT_OFFSET(SieveTrainOptions, epochs)},
  {"batch_size", G_STRUCT_OFFSET(SieveTrainOptions, batch_size)},
  {"lr", G_STRUCT_OFFSET(SieveTrainOptions, lr)},
  {"momentum", G_STRUCT_OFFSET(SieveTrainOptions, momentum)},
  {"nesterov", G_STRUCT_OFFSET(SieveTrainOptions, nesterov)},
  {"weight_decay", G_STRUCT_OFFSET(SieveTrainOptions, weight_decay)},
  {"warmup_epochs", G_STRUCT_OFFSET(SieveTrainOptions, warmup_epochs)},
  {"cosine", G_STRUCT_OFFSET(SieveTrainOptions, cosine)},
  {"label_smoothing", G_STRUCT_OFFSET(SieveTrainOptions, label_smoothing)},
  {"crop_pad", G_STRUCT_OFFSET(SieveTrainOptions, crop_pad)},
  {"flip", G_STRUCT_OFFSET(SieveTrainOptions, flip)},
};

/* One recipe decision bound to its field. */
typedef struct {
  guint decision;
  const RecipeField *field;
  SieveOptionType type;
  double *choice_values; /* a categorical decision's choices as numbers (owned), else NULL */
} Binding;

struct _TrainRecipe {
  GArray *bindings; /* Binding */
};

const char *
train_recipe_names(void)
{
  static char *names;
  static gsize once;
  if (g_once_init_enter(&once)) {
    GString *s = g_string_new(NULL);
    for (guint i = 0; i < G_N_ELEMENTS(recipe_fields); i++)
      g_string_append_printf(s, "%s%s", i ? ", " : "", recipe_fields[i].option);
    names = g_string_free(s, FALSE);
    g_once_init_leave(&once, 1);
  }
  return names;
}

static void
recipe_error(GError **error, const SieveSpace *space, guint i, const char *format, ...) G_GNUC_PRINTF(4, 5);

/* A config error that starts where decision i was declared, when the space
 * says. */
static void
recipe_error(GError **error, const SieveSpace *space, guint i, const char *format, ...)
{
  va_list args;
  va_start(args, format);
  g_autofree char *message = g_strdup_vprintf(format, args);
  va_end(args);
  const char *where = sieve_space_decision_where(space, i);
  g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_CONFIG, "%s%s%s", where ? where : "", where ? ": " : "", message);
}

/* A choice's text as the option's type reads it. */
static gboolean
choice_value(const char *text, SieveOptionType type, double *out)
{
  if (type == SIEVE_OPTION_TYPE_BOOL) {
    if (g_str_equal(text, "true") || g_str_equal(text, "false")) {
      *out = g_str_equal(text, "true");
      return TRUE;
    }
    return FALSE;
  }
  char *end = NULL;
  *out = g_ascii_strtod(text, &end);
  return *text != '\0' && *end == '\0' && isfinite(*out) && (type != SIEVE_OPTION_TYPE_INT || *out == floor(*out));
}

static gboolean
in_range(const SieveOptionSpec *o, double v)
{
  return (!(o->flags & SIEVE_OPTION_HAS_MIN) || v >= o->min) && (!(o->flags & SIEVE_OPTION_HAS_MAX) || v <= o->max);
}

static gboolean
bind(const SieveSpace *space, guint i, const SieveOptionSpec *o, Binding *b, GError **error)
{
  const SieveDecision *d = sieve_space_decision(space, i);
  g_autofree char *expected = sieve_option_spec_expected(o);
  if (d->kind == SIEVE_DECISION_CATEGORICAL) {
    b->choice_values = g_new(double, d->n_choices);
    for (guint k = 0; k < d->n_choices; k++)
      if (!choice_value(d->choices[k], o->type, &b->choice_values[k]) || !in_range(o, b->choice_values[k])) {
        recipe_error(error, space, i, "choice '%s' of recipe decision '%s' is not a value of the train option '%s' "
                     "(%s)", d->choices[k], d->name, o->name, expected);
        return FALSE;
      }
    return TRUE;
  }
  gboolean fits = o->type == SIEVE_OPTION_TYPE_FLOAT ||
                  (o->type == SIEVE_OPTION_TYPE_INT && d->kind == SIEVE_DECISION_INT) ||
                  (o->type == SIEVE_OPTION_TYPE_BOOL && d->kind == SIEVE_DECISION_INT && d->low >= 0 && d->high <= 1);
  if (!fits) {
    recipe_error(error, space, i, "recipe decision '%s' is a %s, but the train option '%s' takes %s", d->name,
                 d->kind == SIEVE_DECISION_INT ? "int" : "float", o->name, expected);
    return FALSE;
  }
  if (!in_range(o, d->low) || !in_range(o, d->high)) {
    g_autofree char *lo = sieve_text_format_double(d->low), *hi = sieve_text_format_double(d->high);
    recipe_error(error, space, i, "recipe decision '%s' ranges over [%s, %s], outside what the train option '%s' "
                 "takes (%s)", d->name, lo, hi, o->name, expected);
    return FALSE;
  }
  return TRUE;
}

void
train_recipe_free(TrainRecipe *recipe)
{
  if (recipe == NULL)
    return;
  for (guint k = 0; k < recipe->bindings->len; k++)
    g_free(g_array_index(recipe->bindings, Binding, k).choice_values);
  g_array_unref(recipe->bindings);
  g_free(recipe);
}

TrainRecipe *
train_recipe_new(const SieveSpace *space, const SieveOptionSpec *spec, GError **error)
{
  TrainRecipe *recipe = g_new0(TrainRecipe, 1);
  recipe->bindings = g_array_new(FALSE, TRUE, sizeof(Binding));
  const char *names[G_N_ELEMENTS(recipe_fields) + 1] = {NULL};
  for (guint f = 0; f < G_N_ELEMENTS(recipe_fields); f++)
    names[f] = recipe_fields[f].option;
  for (guint i = 0; i < sieve_space_n_decisions(space); i++) {
    if (sieve_space_is_architecture(space, i))
      continue;
    const SieveDecision *d = sieve_space_decision(space, i);
    const RecipeField *field = NULL;
    for (guint f = 0; f < G_N_ELEMENTS(recipe_fields); f++)
      if (g_str_equal(recipe_fields[f].option, d->name))
        field = &recipe_fields[f];
    if (field == NULL) {
      const char *close = sieve_suggest(d->name, names);
      g_autofree char *hint = close ? g_strdup_printf(" (did you mean '%s'?)", close) : g_strdup("");
      recipe_error(error, space, i, "recipe decision '%s' is not an option the train evaluator takes from a "
                   "genotype%s; it takes %s", d->name, hint, train_recipe_names());
      train_recipe_free(recipe);
      return NULL;
    }
    const SieveOptionSpec *o = spec;
    while (o->name != NULL && !g_str_equal(o->name, field->option))
      o++;
    g_assert(o->name != NULL); /* the table names options of the spec */
    Binding b = {.decision = i, .field = field, .type = o->type};
    g_array_append_val(recipe->bindings, b);
    if (!bind(space, i, o, &g_array_index(recipe->bindings, Binding, recipe->bindings->len - 1), error)) {
      train_recipe_free(recipe);
      return NULL;
    }
  }
  return recipe;
}

gboolean
train_recipe_sets(const TrainRecipe *recipe, const char *option)
{
  for (guint k = 0; k < recipe->bindings->len; k++)
    if (g_str_equal(g_array_index(recipe->bindings, Binding, k).field->option, option))
      return TRUE;
  return FALSE;
}

void
train_recipe_apply(const TrainRecipe *recipe, const SieveGenotype *genotype, SieveTrainOptions *o)
{
  for (guint k = 0; k < recipe->bindings->len; k++) {
    const Binding *b = &g_array_index(recipe->bindings, Binding, k);
    double v = sieve_genotype_get(genotype, b->decision);
    if (isnan(v))
      continue; /* inactive: the option's configured value */
    if (b->choice_values != NULL)
      v = b->choice_values[(guint) v];
    gpointer field = G_STRUCT_MEMBER_P(o, b->field->offset);
    switch (b->type) {
    case SIEVE_OPTION_TYPE_FLOAT:
      *(double *) field = v;
      break;
    case SIEVE_OPTION_TYPE_INT:
      *(guint *) field = (guint) v;
      break;
    case SIEVE_OPTION_TYPE_BOOL:
      *(gboolean *) field = v != 0;
      break;
    default:
      g_assert_not_reached();
    }
  }
}
