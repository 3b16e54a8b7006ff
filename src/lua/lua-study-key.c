/* sieve: the key of a study a script opens with sieve.study, what makes a
 * store's study the same one when a script opens it again, as `sieve run
 * --resume` compares a YAML study's key (engine/study-key.c).  Without it a
 * store reopened with the other direction went on with its best turned
 * upside down, and one continued by another optimizer could no longer be
 * opened by the first ("the state lacks 'x'").
 *
 * One "path<TAB>value" line per setting, in a fixed order:
 *
 *   objective[0].metric	value
 *   objective[0].direction	maximize
 *   optimizer.plugin	tpe
 *   optimizer.n_startup	3                        (the options that differ from their defaults)
 *   seed	1
 *   space.plugin	hpo
 *   space.decision[0]	x float [0, 1] log=0 parent=-1
 *   pruner.kind	median                           or (none)
 *   fidelity	epochs [1, 9] integer=1           or (none)
 *
 * The budget is the script's (it asks as many times as it likes), and the
 * store is where the study is, not what it is. */
#include <string.h>

#include "engine/engine-private.h"
#include "lua/lua-private.h"

static void
add_line(GString *key, const char *path, const char *value)
{
  g_autofree char *escaped = g_strescape(value != NULL ? value : "(none)", NULL);
  g_string_append_printf(key, "%s\t%s\n", path, escaped);
}

static char *
decision_text(const SieveDecision *d)
{
  GString *out = g_string_new(d->name);
  switch (d->kind) {
  case SIEVE_DECISION_CATEGORICAL:
    g_string_append(out, " categorical [");
    for (guint c = 0; c < d->n_choices; c++)
      g_string_append_printf(out, "%s%s", c ? ", " : "", d->choices[c]);
    g_string_append_c(out, ']');
    break;
  case SIEVE_DECISION_INT:
  case SIEVE_DECISION_FLOAT: {
    char low[G_ASCII_DTOSTR_BUF_SIZE], high[G_ASCII_DTOSTR_BUF_SIZE];
    g_string_append_printf(out, " %s [%s, %s]", d->kind == SIEVE_DECISION_INT ? "int" : "float",
                           g_ascii_dtostr(low, sizeof low, d->low), g_ascii_dtostr(high, sizeof high, d->high));
    break;
  }
  }
  g_string_append_printf(out, " log=%d parent=%d mask=%" G_GUINT64_FORMAT, d->log ? 1 : 0, d->parent,
                         d->parent_mask);
  return g_string_free(out, FALSE);
}

char *
sieve__lua_study_key(const SieveLuaStudyKey *k)
{
  GString *key = g_string_new(NULL);
  for (guint i = 0; i < k->objectives->n; i++) {
    g_autofree char *metric = g_strdup_printf("objective[%u].metric", i);
    g_autofree char *direction = g_strdup_printf("objective[%u].direction", i);
    add_line(key, metric, k->objectives->metrics[i]);
    add_line(key, direction, k->objectives->maximize[i] ? "maximize" : "minimize");
  }
  add_line(key, "optimizer.plugin", k->optimizer);
  if (k->optimizer_options != NULL) {
    g_autofree char *options = sieve__study_key_options("optimizer", k->optimizer_options, NULL);
    g_string_append(key, options);
  }
  g_autofree char *seed = g_strdup_printf("%" G_GINT64_FORMAT, k->seed);
  add_line(key, "seed", seed);
  add_line(key, "space.plugin", sieve_space_get_name(k->space));
  for (guint i = 0; i < sieve_space_n_decisions(k->space); i++) {
    g_autofree char *path = g_strdup_printf("space.decision[%u]", i);
    g_autofree char *text = decision_text(sieve_space_decision(k->space, i));
    add_line(key, path, text);
  }
  if (k->pruner != NULL) {
    g_autofree char *pruner = sieve__study_key_options("pruner", k->pruner, NULL);
    g_string_append(key, pruner);
  } else {
    add_line(key, "pruner.kind", NULL);
  }
  g_autofree char *fidelity = NULL;
  if (k->fidelity != NULL) {
    char low[G_ASCII_DTOSTR_BUF_SIZE], high[G_ASCII_DTOSTR_BUF_SIZE];
    fidelity = g_strdup_printf("%s [%s, %s] integer=%d", k->fidelity->name,
                               g_ascii_dtostr(low, sizeof low, k->fidelity->min),
                               g_ascii_dtostr(high, sizeof high, k->fidelity->max), k->fidelity->integer ? 1 : 0);
  }
  add_line(key, "fidelity", fidelity);
  return g_string_free(key, FALSE);
}

gboolean
sieve__lua_study_key_check(const char *stored, const char *wanted, const char *store, GError **error)
{
  if (strcmp(stored, wanted) == 0)
    return TRUE;
  /* The first setting, in the script's key's order then the stored one's,
   * whose value differs or that one of them lacks (an option set then,
   * and left at its default now, is a line the script's key lacks). */
  g_autoptr(GHashTable) was_lines = sieve__study_key_lines(stored), now_lines = sieve__study_key_lines(wanted);
  const char *keys[] = {wanted, stored};
  for (guint side = 0; side < 2; side++) {
    g_auto(GStrv) lines = g_strsplit(keys[side], "\n", -1);
    for (guint i = 0; lines[i] != NULL; i++) {
      const char *tab = strchr(lines[i], '\t');
      if (tab == NULL)
        continue;
      g_autofree char *path = g_strndup(lines[i], (gsize) (tab - lines[i]));
      const char *was = g_hash_table_lookup(was_lines, path), *now = g_hash_table_lookup(now_lines, path);
      if (g_strcmp0(was, now) == 0)
        continue;
      /* (none) is no value, and an option without a line is its default:
       * neither quoted as a value */
      gboolean q_was = was != NULL && strcmp(was, "(none)") != 0, q_now = now != NULL && strcmp(now, "(none)") != 0;
      g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_CONFIG,
                  "sieve.study: %s holds another study: its %s is %s%s%s, and this script's %s%s%s (a study goes on "
                  "with the settings it began with: open it with those, or give another store)",
                  store, path, q_was ? "'" : "", was ? was : "the default", q_was ? "'" : "", q_now ? "'" : "",
                  now ? now : "the default", q_now ? "'" : "");
      return FALSE;
    }
  }
  /* Same settings, other order: the key of another version; the same study. */
  return TRUE;
}
