/* command evaluator: argument templates (see template.h). */
#include "template.h"

#include <math.h>
#include <string.h>

#include <sieve/candidate.h>
#include <sieve/node.h>
#include <sieve/space.h>
#include <sieve/text.h>

typedef enum {
  PART_TEXT,
  PART_GENOTYPE,
  PART_TRIAL,
  PART_FIDELITY,
  PART_JSON,
  PART_DECISION,
} PartKind;

typedef struct {
  PartKind kind;
  char *text;     /* PART_TEXT */
  guint decision; /* PART_DECISION */
} Part;

struct _CommandTemplate {
  const SieveSpace *space;
  GArray *parts; /* Part */
};

static const char *const builtin_names[] = {"genotype", "trial", "fidelity", "json", NULL};

static void
part_clear(gpointer data)
{
  Part *part = data;
  g_free(part->text);
}

void
command_template_free(CommandTemplate *tmpl)
{
  if (tmpl == NULL)
    return;
  g_array_unref(tmpl->parts);
  g_free(tmpl);
}

/* "{genotype}, {trial}, ..., {x1}, {x2}" listing at most a screenful. */
static char *
valid_names(const SieveSpace *space)
{
  GString *out = g_string_new(NULL);
  for (guint i = 0; builtin_names[i]; i++)
    g_string_append_printf(out, "%s{%s}", i ? ", " : "", builtin_names[i]);
  guint n = sieve_space_n_decisions(space);
  const guint shown = 24;
  for (guint i = 0; i < n && i < shown; i++)
    g_string_append_printf(out, ", {%s}", sieve_space_decision(space, i)->name);
  if (n > shown)
    g_string_append_printf(out, " and %u more decisions", n - shown);
  return g_string_free(out, FALSE);
}

static char *
unknown_placeholder(const char *name, const SieveSpace *space)
{
  guint n = sieve_space_n_decisions(space);
  g_autofree const char **all = g_new0(const char *, n + G_N_ELEMENTS(builtin_names));
  guint k = 0;
  for (guint i = 0; builtin_names[i]; i++)
    all[k++] = builtin_names[i];
  for (guint i = 0; i < n; i++)
    all[k++] = sieve_space_decision(space, i)->name;
  const char *close = sieve_suggest(name, all);
  g_autofree char *valid = valid_names(space);
  return g_strdup_printf("unknown placeholder {%s}%s%s%s; valid placeholders: %s (write {{ and }} for "
                         "literal braces)",
                         name, close ? " (did you mean {" : "", close ? close : "", close ? "}?)" : "", valid);
}

static gboolean
resolve(const char *name, const SieveSpace *space, Part *part)
{
  static const PartKind builtin_kinds[] = {PART_GENOTYPE, PART_TRIAL, PART_FIDELITY, PART_JSON};
  for (guint i = 0; builtin_names[i]; i++)
    if (strcmp(name, builtin_names[i]) == 0) {
      part->kind = builtin_kinds[i];
      return TRUE;
    }
  gint index = sieve_space_find(space, name);
  if (index < 0)
    return FALSE;
  part->kind = PART_DECISION;
  part->decision = (guint) index;
  return TRUE;
}

static void
flush_text(GArray *parts, GString *text)
{
  if (text->len == 0)
    return;
  Part part = {PART_TEXT, g_strdup(text->str), 0};
  g_array_append_val(parts, part);
  g_string_truncate(text, 0);
}

CommandTemplate *
command_template_parse(const char *text, const SieveSpace *space, char **problem)
{
  g_return_val_if_fail(text != NULL && space != NULL && problem != NULL, NULL);
  g_autoptr(GArray) parts = g_array_new(FALSE, TRUE, sizeof(Part));
  g_array_set_clear_func(parts, part_clear);
  g_autoptr(GString) literal = g_string_new(NULL);

  for (const char *p = text; *p;) {
    if (p[0] == '{' && p[1] == '{') {
      g_string_append_c(literal, '{');
      p += 2;
    } else if (p[0] == '}' && p[1] == '}') {
      g_string_append_c(literal, '}');
      p += 2;
    } else if (p[0] == '}') {
      *problem = g_strdup_printf("unmatched '}' at character %u (write }} for a literal brace)",
                                 (guint) (p - text) + 1);
      return NULL;
    } else if (p[0] == '{') {
      const char *end = strpbrk(p + 1, "{}");
      if (end == NULL || *end != '}') {
        *problem = g_strdup_printf("unclosed '{' at character %u (write {{ for a literal brace)",
                                   (guint) (p - text) + 1);
        return NULL;
      }
      g_autofree char *name = g_strndup(p + 1, (gsize) (end - p - 1));
      Part part = {PART_TEXT, NULL, 0};
      if (!resolve(name, space, &part)) {
        *problem = unknown_placeholder(name, space);
        return NULL;
      }
      flush_text(parts, literal);
      g_array_append_val(parts, part);
      p = end + 1;
    } else {
      g_string_append_c(literal, *p++);
    }
  }
  flush_text(parts, literal);

  CommandTemplate *tmpl = g_new0(CommandTemplate, 1);
  tmpl->space = space;
  tmpl->parts = g_steal_pointer(&parts);
  return tmpl;
}

char *
command_template_expand(const CommandTemplate *tmpl, const SieveCandidate *candidate)
{
  g_return_val_if_fail(tmpl != NULL && candidate != NULL, NULL);
  const SieveGenotype *genotype = sieve_candidate_get_genotype(candidate);
  GString *out = g_string_new(NULL);
  for (guint i = 0; i < tmpl->parts->len; i++) {
    const Part *part = &g_array_index(tmpl->parts, Part, i);
    switch (part->kind) {
    case PART_TEXT:
      g_string_append(out, part->text);
      break;
    case PART_GENOTYPE:
      g_string_append(out, sieve_candidate_get_text(candidate));
      break;
    case PART_TRIAL:
      g_string_append_printf(out, "%" G_GINT64_FORMAT, sieve_candidate_get_trial(candidate));
      break;
    case PART_FIDELITY: {
      double fidelity = sieve_candidate_get_fidelity(candidate);
      if (!isnan(fidelity)) /* none: an empty text */
        sieve_text_append_double(out, fidelity);
      break;
    }
    case PART_JSON: {
      g_autofree char *json = sieve_space_to_json(tmpl->space, genotype);
      g_string_append(out, json);
      break;
    }
    case PART_DECISION: {
      double value = sieve_genotype_get(genotype, part->decision);
      if (!isnan(value)) { /* inactive decisions expand to nothing */
        g_autofree char *text = sieve_space_format_value(tmpl->space, part->decision, value);
        g_string_append(out, text);
      }
      break;
    }
    }
  }
  return g_string_free(out, FALSE);
}
