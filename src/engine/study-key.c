/* sieve: the key of a study, what `--resume` compares: what defines the
 * study, with its defaults written out (a default written or omitted is the
 * same study), and the contents of the files that define it.
 *
 * The key is text, one "path<TAB>value" line per setting, sorted by path:
 *
 *   objective[0].direction	minimize
 *   optimizer.seed	0
 *   space.file	sp.yaml
 *   space.file@sha256	5f2c...
 *
 * Left out: budget, workers and report (README: they may change on
 * resume) and store (where the study is, not what it is).
 *
 * Until 2026-11-26 the pruner's lines were its section as written (a
 * default written out keyed apart): a store keyed so is compared with that
 * key too (sieve__study_key_as_written) and gets today's on resume. */
#include <glib/gstdio.h>
#include <string.h>

#include <sieve/text.h>

#include "engine/engine-private.h"

/* Files past this size are data (a dataset, a large table), not a
 * definition: not digested. */
#define MAX_DIGESTED_BYTES (16 << 20)

static const char *const volatile_keys[] = {"budget", "workers", "report", "store", NULL};

static void
add_line(GPtrArray *lines, const char *path, const char *value)
{
  g_autofree char *escaped = g_strescape(value ? value : "(none)", NULL);
  g_ptr_array_add(lines, g_strdup_printf("%s\t%s", path, escaped));
}

static gint
compare_text(gconstpointer a, gconstpointer b)
{
  return strcmp(*(const char *const *) a, *(const char *const *) b);
}

/* Every scalar of node under path; map keys sorted (their order means
 * nothing), lists in order. */
static void
add_node(GPtrArray *lines, const char *path, const SieveNode *node)
{
  switch (sieve_node_kind(node)) {
  case SIEVE_NODE_SCALAR:
    add_line(lines, path, sieve_node_text(node));
    return;
  case SIEVE_NODE_LIST:
    if (sieve_node_size(node) == 0)
      add_line(lines, path, "[]");
    for (guint i = 0; i < sieve_node_size(node); i++) {
      g_autofree char *sub = g_strdup_printf("%s[%u]", path, i);
      add_node(lines, sub, sieve_node_nth(node, i));
    }
    return;
  case SIEVE_NODE_MAP:
    if (sieve_node_size(node) == 0)
      add_line(lines, path, "{}");
    for (guint i = 0; i < sieve_node_size(node); i++) {
      g_autofree char *sub = g_strdup_printf("%s%s%s", path, path[0] ? "." : "",
                                             sieve_node_text(sieve_node_nth_key(node, i)));
      add_node(lines, sub, sieve_node_nth(node, i));
    }
    return;
  }
}

/* One option's lines, as the component reads it (a path as written: the
 * digest line carries what it names). */
static void
add_option(GPtrArray *lines, const SieveOptions *options, const SieveOptionSpec *o, const char *path)
{
  char buf[SIEVE_TEXT_DOUBLE_SIZE];
  switch (o->type) {
  case SIEVE_OPTION_TYPE_BOOL:
    add_line(lines, path, sieve_options_get_bool(options, o->name) ? "true" : "false");
    break;
  case SIEVE_OPTION_TYPE_INT: {
    g_autofree char *v = g_strdup_printf("%" G_GINT64_FORMAT, sieve_options_get_int(options, o->name));
    add_line(lines, path, v);
    break;
  }
  case SIEVE_OPTION_TYPE_FLOAT:
    add_line(lines, path, sieve_text_format_double_buf(sieve_options_get_double(options, o->name), buf));
    break;
  case SIEVE_OPTION_TYPE_PATH:
    if (sieve_options_is_set(options, o->name) && sieve_options_node(options, o->name) != NULL) {
      add_line(lines, path, sieve_node_text(sieve_options_node(options, o->name)));
      break;
    }
    /* Unset: the table's default as written, not resolved (a moved
     * folder is the same study). */
    add_line(lines, path, o->default_text);
    break;
  case SIEVE_OPTION_TYPE_STRING:
  case SIEVE_OPTION_TYPE_CHOICE:
    add_line(lines, path, sieve_options_get_string(options, o->name));
    break;
  case SIEVE_OPTION_TYPE_STRING_LIST: {
    const char *const *v = sieve_options_get_strv(options, o->name);
    if (v == NULL)
      add_line(lines, path, NULL);
    for (guint i = 0; v && v[i]; i++) {
      g_autofree char *sub = g_strdup_printf("%s[%u]", path, i);
      add_line(lines, sub, v[i]);
    }
    break;
  }
  case SIEVE_OPTION_TYPE_NODE: {
    const SieveNode *node = sieve_options_get_node(options, o->name);
    if (node == NULL)
      add_line(lines, path, NULL);
    else
      add_node(lines, path, node);
    break;
  }
  }
}

/* The table's defaults, read as the component's options are (NULL when the
 * table cannot stand without a value: then every option is written).
 * Options that need a value have none to compare with and are left out. */
static SieveOptions *
table_defaults(const SieveOptions *options, const char *base_dir, GArray *spec)
{
  /* spec holds the table the result reads (the caller keeps it alive). */
  for (const SieveOptionSpec *o = sieve_options_spec(options); o && o->name; o++)
    if (!(o->flags & SIEVE_OPTION_REQUIRED))
      g_array_append_val(spec, *o);
  SieveOptionSpec end = SIEVE_OPTION_END;
  g_array_append_val(spec, end);
  return sieve_options_new((const SieveOptionSpec *) spec->data, NULL, NULL, base_dir, "defaults", NULL);
}

static gboolean
same_lines(const GPtrArray *a, const GPtrArray *b)
{
  if (a->len != b->len)
    return FALSE;
  for (guint i = 0; i < a->len; i++)
    if (strcmp(a->pdata[i], b->pdata[i]) != 0)
      return FALSE;
  return TRUE;
}

/* Every option of options' table that differs from the table's default
 * (all of them when the table has no defaults), under key. */
static void
add_options(GPtrArray *lines, const char *key, const SieveOptions *options, const char *base_dir)
{
  g_autoptr(GArray) spec = g_array_new(FALSE, TRUE, sizeof(SieveOptionSpec));
  g_autoptr(SieveOptions) defaults = table_defaults(options, base_dir, spec);
  for (const SieveOptionSpec *o = sieve_options_spec(options); o && o->name; o++) {
    g_autofree char *path = g_strdup_printf("%s.%s", key, o->name);
    g_autoptr(GPtrArray) now = g_ptr_array_new_with_free_func(g_free);
    add_option(now, options, o, path);
    if (defaults != NULL && !(o->flags & SIEVE_OPTION_REQUIRED)) {
      g_autoptr(GPtrArray) by_default = g_ptr_array_new_with_free_func(g_free);
      add_option(by_default, defaults, o, path);
      if (same_lines(now, by_default))
        continue;
    }
    for (guint i = 0; i < now->len; i++)
      g_ptr_array_add(lines, g_strdup(now->pdata[i]));
  }
}

char *
sieve__study_key_options(const char *key, const SieveOptions *options, const char *base_dir)
{
  g_autoptr(GPtrArray) lines = g_ptr_array_new_with_free_func(g_free);
  add_options(lines, key, options, base_dir);
  GString *out = g_string_new(NULL);
  for (guint i = 0; i < lines->len; i++)
    g_string_append_printf(out, "%s\n", (const char *) lines->pdata[i]);
  return g_string_free(out, FALSE);
}

/* A component's section: its plugin and every option of its table that
 * differs from the table's default, so that a default written or omitted
 * is the same study, and so is one resumed by a version of the plugin that
 * has gained an option (its default keeps the old behaviour). */
static void
add_section(GPtrArray *lines, const char *key, const SieveSection *section, const char *base_dir)
{
  g_autofree char *plugin = g_strconcat(key, ".plugin", NULL);
  add_line(lines, plugin, sieve_component_get_name(section->component));
  if (section->options != NULL)
    add_options(lines, key, section->options, base_dir);
}

/* The pruner through its option table, as a component's options: a
 * default written or omitted is the same study.  Median is percentile 50
 * whatever the table's default (sieve_pruner_new refuses another). */
static void
add_pruner(GPtrArray *lines, const SieveExperiment *exp)
{
  g_autoptr(SieveOptions) options = sieve_options_new(sieve_pruner_spec(), exp->pruner, NULL, exp->dir, "pruner", NULL);
  if (options == NULL) {
    /* (validated when the experiment was read: not reached) */
    add_node(lines, "pruner", exp->pruner);
    return;
  }
  guint from = lines->len;
  add_options(lines, "pruner", options, exp->dir);
  if (!g_str_equal(sieve_options_get_string(options, "kind"), "median"))
    return;
  for (guint i = lines->len; i-- > from;)
    if (g_str_has_prefix(lines->pdata[i], "pruner.percentile\t"))
      g_ptr_array_remove_index(lines, i);
}

/* The file a value names, when it is one that defines the study: a regular
 * file (not a folder), small enough not to be data. (transfer full) */
static char *
defining_file(const SieveExperiment *exp, const char *value)
{
  if (value == NULL || value[0] == '\0')
    return NULL;
  g_autofree char *path = g_canonicalize_filename(value, exp->dir);
  GStatBuf st;
  if (g_stat(path, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > MAX_DIGESTED_BYTES)
    return NULL;
  return g_steal_pointer(&path);
}

static void
add_digest(GPtrArray *lines, const SieveExperiment *exp, const char *path, const char *value)
{
  g_autofree char *file = defining_file(exp, value);
  if (file == NULL)
    return;
  g_autofree char *contents = NULL;
  gsize length = 0;
  g_autofree char *key = g_strconcat(path, "@sha256", NULL);
  if (!g_file_get_contents(file, &contents, &length, NULL)) {
    add_line(lines, key, "(unreadable)");
    return;
  }
  g_autofree char *digest = g_compute_checksum_for_data(G_CHECKSUM_SHA256, (const guchar *) contents, length);
  /* The file as resolved, for the message only: the digest is compared. */
  g_autofree char *line = g_strdup_printf("%s %s", digest, file);
  add_line(lines, key, line);
}

/* The files that define the study: the path options of its components
 * (an hpo space's file, a Lua component's script, a tabular table) and,
 * anywhere in the space, optimizer and evaluator sections, a `file` or
 * `script` (a composed space's recipe file); the `lua.load` scripts.
 * Datasets are not: the train evaluator names them by name or folder. */
static void
add_digests_under(GPtrArray *lines, const SieveExperiment *exp, const char *path, const char *key,
                  const SieveNode *node)
{
  if (sieve_node_kind(node) == SIEVE_NODE_SCALAR) {
    if (key && (strcmp(key, "file") == 0 || strcmp(key, "script") == 0))
      add_digest(lines, exp, path, sieve_node_text(node));
    return;
  }
  for (guint i = 0; i < sieve_node_size(node); i++) {
    gboolean map = sieve_node_kind(node) == SIEVE_NODE_MAP;
    const char *sub_key = map ? sieve_node_text(sieve_node_nth_key(node, i)) : key;
    g_autofree char *sub = map ? g_strdup_printf("%s.%s", path, sub_key) : g_strdup_printf("%s[%u]", path, i);
    add_digests_under(lines, exp, sub, sub_key, sieve_node_nth(node, i));
  }
}

static void
add_digests(GPtrArray *lines, const SieveExperiment *exp)
{
  static const char *const keys[] = {"space", "optimizer", "evaluator"};
  const SieveSection *sections[] = {&exp->space, &exp->optimizer, &exp->evaluator};
  g_autoptr(GHashTable) done = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
  for (guint k = 0; k < G_N_ELEMENTS(keys); k++) {
    const SieveOptions *options = sections[k]->options;
    for (const SieveOptionSpec *o = options ? sieve_options_spec(options) : NULL; o && o->name; o++)
      if (o->type == SIEVE_OPTION_TYPE_PATH && sieve_options_is_set(options, o->name)) {
        g_autofree char *path = g_strdup_printf("%s.%s", keys[k], o->name);
        /* Resolved as the component reads it (~ expanded, relative to the
         * experiment's folder). */
        add_digest(lines, exp, path, sieve_options_get_string(options, o->name));
        g_hash_table_add(done, g_steal_pointer(&path));
      }
    const SieveNode *node = sieve_node_lookup(exp->root, keys[k]);
    if (node == NULL || sieve_node_kind(node) != SIEVE_NODE_MAP)
      continue;
    for (guint i = 0; i < sieve_node_size(node); i++) {
      const char *key = sieve_node_text(sieve_node_nth_key(node, i));
      g_autofree char *path = g_strdup_printf("%s.%s", keys[k], key);
      if (!g_hash_table_contains(done, path))
        add_digests_under(lines, exp, path, key, sieve_node_nth(node, i));
    }
  }
  const SieveNode *lua = sieve_node_lookup(exp->root, "lua");
  const SieveNode *load = lua && sieve_node_kind(lua) == SIEVE_NODE_MAP ? sieve_node_lookup(lua, "load") : NULL;
  if (load != NULL && sieve_node_kind(load) == SIEVE_NODE_SCALAR)
    add_digest(lines, exp, "lua.load", sieve_node_text(load));
  for (guint i = 0; load && sieve_node_kind(load) == SIEVE_NODE_LIST && i < sieve_node_size(load); i++) {
    g_autofree char *path = g_strdup_printf("lua.load[%u]", i);
    add_digest(lines, exp, path, sieve_node_text(sieve_node_nth(load, i)));
  }
}

/* keyed_pruner: the pruner through its option table (the key of today),
 * else as written (the key until 2026-11-26). */
static char *
study_key(const SieveExperiment *exp, gboolean keyed_pruner)
{
  g_autoptr(GPtrArray) lines = g_ptr_array_new_with_free_func(g_free);
  char buf[32];
  /* The top-level settings as read, defaults included. */
  g_snprintf(buf, sizeof buf, "%" G_GUINT64_FORMAT, exp->seed);
  add_line(lines, "seed", buf);
  g_snprintf(buf, sizeof buf, "%" G_GUINT64_FORMAT, exp->optimizer_seed);
  add_line(lines, "optimizer.seed", buf);
  add_line(lines, "tell_order", exp->tell_in_order ? "trial" : "completion");
  g_snprintf(buf, sizeof buf, "%" G_GINT64_FORMAT, exp->constraint_tries);
  add_line(lines, "constraint_tries", buf);
  for (guint k = 0; k < exp->n_objectives; k++) {
    g_autofree char *metric = g_strdup_printf("objective[%u].metric", k);
    g_autofree char *direction = g_strdup_printf("objective[%u].direction", k);
    add_line(lines, metric, exp->objectives[k].metric);
    add_line(lines, direction, exp->objectives[k].maximize ? "maximize" : "minimize");
  }
  add_section(lines, "space", &exp->space, exp->dir);
  add_section(lines, "optimizer", &exp->optimizer, exp->dir);
  add_section(lines, "evaluator", &exp->evaluator, exp->dir);
  /* The rest as written: name, pipeline (an empty one is none), constraints,
   * pruner, lua, plugin_path. */
  static const char *const read[] = {"seed", "tell_order", "constraint_tries", "objective",
                                     "space", "optimizer", "evaluator", NULL};
  for (guint i = 0; i < sieve_node_size(exp->root); i++) {
    const char *key = sieve_node_text(sieve_node_nth_key(exp->root, i));
    const SieveNode *value = sieve_node_nth(exp->root, i);
    if (g_strv_contains(volatile_keys, key) || g_strv_contains((const char *const *) read, key) ||
        (strcmp(key, "pipeline") == 0 && sieve_node_kind(value) == SIEVE_NODE_LIST && sieve_node_size(value) == 0))
      continue;
    if (keyed_pruner && strcmp(key, "pruner") == 0)
      add_pruner(lines, exp);
    else
      add_node(lines, key, value);
  }
  add_digests(lines, exp);
  g_ptr_array_sort(lines, compare_text);
  GString *text = g_string_new(NULL);
  for (guint i = 0; i < lines->len; i++)
    g_string_append_printf(text, "%s\n", (const char *) lines->pdata[i]);
  return g_string_free(text, FALSE);
}

char *
sieve__study_key(const SieveExperiment *exp)
{
  return study_key(exp, TRUE);
}

char *
sieve__study_key_as_written(const SieveExperiment *exp)
{
  return study_key(exp, FALSE);
}

GHashTable *
sieve__study_key_lines(const char *key)
{
  GHashTable *map = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
  g_auto(GStrv) lines = g_strsplit(key, "\n", -1);
  for (guint i = 0; lines[i]; i++) {
    char *tab = strchr(lines[i], '\t');
    if (tab != NULL)
      g_hash_table_insert(map, g_strndup(lines[i], tab - lines[i]), g_strcompress(tab + 1));
  }
  return map;
}

/* The paths of both keys' lines, each once, sorted. (transfer container:
 * the strings are a's and b's) */
static GPtrArray *
union_paths(GHashTable *a, GHashTable *b)
{
  GPtrArray *paths = g_ptr_array_new();
  GHashTableIter it;
  gpointer path;
  g_hash_table_iter_init(&it, a);
  while (g_hash_table_iter_next(&it, &path, NULL))
    g_ptr_array_add(paths, path);
  g_hash_table_iter_init(&it, b);
  while (g_hash_table_iter_next(&it, &path, NULL))
    if (!g_hash_table_contains(a, path))
      g_ptr_array_add(paths, path);
  g_ptr_array_sort(paths, compare_text);
  return paths;
}

static gboolean is_script_digest(const char *path);

char *
sieve__study_key_difference(const char *stored, const char *current, gboolean skip_scripts)
{
  g_autoptr(GHashTable) a = sieve__study_key_lines(stored), b = sieve__study_key_lines(current);
  g_autoptr(GPtrArray) paths = union_paths(a, b);
  /* A component's plugin first: its other settings differ because of it
   * (bug hunt 4: optimizer.script, then optimizer.options.population, was
   * named where optimizer.plugin changed).  Then a changed file: its path
   * line may be unchanged.  A file only one side has comes last: the
   * setting that brought it is what differs. */
  for (guint pass = 0; pass < 4; pass++)
    for (guint i = 0; i < paths->len; i++) {
      const char *p = paths->pdata[i];
      const char *x = g_hash_table_lookup(a, p), *y = g_hash_table_lookup(b, p);
      gboolean digest = g_str_has_suffix(p, "@sha256");
      guint want = digest ? (x != NULL && y != NULL ? 1 : 3) : g_str_has_suffix(p, ".plugin") ? 0 : 2;
      if (want != pass || (skip_scripts && is_script_digest(p)))
        continue;
      if (digest && x != NULL && y != NULL) {
        /* "SHA256 FILE": the contents decide, not where the file is. */
        const char *file = strchr(y, ' ');
        if (strncmp(x, y, 64) == 0)
          continue;
        g_autofree char *option = g_strndup(p, strlen(p) - strlen("@sha256"));
        return g_strdup_printf("%s: the file %s changed since the study was stored (sha256 %.12s..., now %.12s...)%s",
                               option, file ? file + 1 : "?", x, y,
                               g_str_has_prefix(p, "space.") && g_str_has_suffix(option, ".script")
                                   ? "; a space's script is part of what the stored trials mean, as a space `file` "
                                     "is, so --accept-changed-scripts does not cover it"
                                   : "");
      }
      if (g_strcmp0(x, y) == 0)
        continue;
      g_autofree char *option = digest ? g_strndup(p, strlen(p) - strlen("@sha256")) : g_strdup(p);
      g_autofree char *was = x ? g_strdup_printf("'%s'", x) : g_strdup("(not set)");
      g_autofree char *now = y ? g_strdup_printf("'%s'", y) : g_strdup("(not set)");
      if (digest)
        return g_strdup_printf("%s: a file %s the study (stored %s, now %s)", option,
                               x ? "no longer defines" : "now defines", was, now);
      return g_strdup_printf("%s: stored %s, now %s", option, was, now);
    }
  return NULL;
}

/* A file the user writes as code (lua.load's scripts, a Lua optimizer's
 * or evaluator's `script`), told apart from data that defines the study (a
 * space file, a table).  A space's script is data here: the stored
 * genotypes mean what it says (a choice renamed, a range moved), as a
 * space file's do. */
static gboolean
is_script_digest(const char *path)
{
  if (!g_str_has_suffix(path, "@sha256") || g_str_has_prefix(path, "space."))
    return FALSE;
  g_autofree char *option = g_strndup(path, strlen(path) - strlen("@sha256"));
  return strcmp(option, "lua.load") == 0 || g_str_has_prefix(option, "lua.load[") || g_str_has_suffix(option, ".script");
}

/* The section key of root as written, one line per scalar. */
static GPtrArray *
written_section(const SieveNode *root, const char *key)
{
  GPtrArray *lines = g_ptr_array_new_with_free_func(g_free);
  const SieveNode *node = root != NULL && sieve_node_kind(root) == SIEVE_NODE_MAP ? sieve_node_lookup(root, key) : NULL;
  if (node != NULL)
    add_node(lines, key, node);
  return lines;
}

/* Whether the setting at path, in the section of an optimizer or evaluator
 * written in Lua, is written the same in the stored config and now: its key line may still
 * differ, since a component from a script has the script's defaults, and
 * the key leaves out a value equal to the default (a default changed from
 * 1 to 8 turns `batch: 8` from written to omitted). */
static gboolean
same_as_written(const char *path, const char *stored_config, const SieveExperiment *exp)
{
  gsize n = strcspn(path, ".[");
  g_autofree char *section = g_strndup(path, n);
  const SieveSection *of = strcmp(section, "optimizer") == 0   ? &exp->optimizer
                           : strcmp(section, "evaluator") == 0 ? &exp->evaluator
                                                               : NULL;
  if (path[n] == '\0' || of == NULL || !sieve__component_in_lua(of->component) || stored_config == NULL)
    return FALSE;
  g_autoptr(SieveNode) stored = sieve_node_parse_string(stored_config, -1, "the stored config", NULL);
  if (stored == NULL)
    return FALSE;
  g_autoptr(GPtrArray) was = written_section(stored, section);
  g_autoptr(GPtrArray) now = written_section(exp->root, section);
  return same_lines(was, now);
}

GPtrArray *
sieve__study_key_script_changes(const char *stored, const char *current, const char *stored_config,
                                const SieveExperiment *exp)
{
  g_autoptr(GHashTable) a = sieve__study_key_lines(stored), b = sieve__study_key_lines(current);
  g_autoptr(GPtrArray) changes = g_ptr_array_new_with_free_func(g_free);
  g_autoptr(GPtrArray) paths = union_paths(a, b);
  g_autoptr(GPtrArray) settings = g_ptr_array_new();
  for (guint i = 0; i < paths->len; i++) {
    const char *p = paths->pdata[i];
    const char *x = g_hash_table_lookup(a, p), *y = g_hash_table_lookup(b, p);
    gboolean digest = g_str_has_suffix(p, "@sha256");
    /* A digest is "SHA256 FILE": the contents decide, not where the file is. */
    if (digest ? x != NULL && y != NULL && strncmp(x, y, 64) == 0 : g_strcmp0(x, y) == 0)
      continue;
    if (!digest) {
      g_ptr_array_add(settings, (gpointer) p);
      continue;
    }
    /* Only a script that is still there, changed: one added or gone is
     * another experiment. */
    if (!is_script_digest(p) || x == NULL || y == NULL || strlen(x) < 64 || strlen(y) < 64)
      return NULL;
    const char *file = strchr(y, ' ');
    g_ptr_array_add(changes, g_strdup_printf("%.*s\t%.64s\t%.64s\t%s", (int) (strlen(p) - strlen("@sha256")), p, x,
                                             y, file ? file + 1 : "?"));
  }
  if (changes->len == 0)
    return NULL;
  /* With a script changed, a setting's line may differ only by the
   * script's new default: the same study when it is written the same. */
  for (guint i = 0; i < settings->len; i++)
    if (!same_as_written(settings->pdata[i], stored_config, exp))
      return NULL;
  return g_steal_pointer(&changes);
}

char *
sieve__study_key_changed_scripts(const char *key, const char *history)
{
  /* The digest each script had when the study was stored first: the old
   * one of its first recorded change. */
  g_autoptr(GHashTable) original = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
  g_auto(GStrv) changes = g_strsplit(history ? history : "", "\n", -1);
  for (guint i = 0; changes[i]; i++) {
    g_auto(GStrv) f = g_strsplit(changes[i], "\t", 5);
    if (g_strv_length(f) == 5 && !g_hash_table_contains(original, f[1]))
      g_hash_table_insert(original, g_strdup(f[1]), g_strdup(f[2]));
  }
  g_autoptr(GHashTable) lines = sieve__study_key_lines(key);
  g_autoptr(GPtrArray) paths = union_paths(lines, lines);
  GString *out = g_string_new(NULL);
  gboolean changed = FALSE;
  for (guint i = 0; i < paths->len; i++) {
    const char *p = paths->pdata[i];
    const char *digest = g_hash_table_lookup(lines, p);
    if (!is_script_digest(p) || strlen(digest) < 64)
      continue;
    g_autofree char *option = g_strndup(p, strlen(p) - strlen("@sha256"));
    const char *first = g_hash_table_lookup(original, option);
    changed |= first != NULL && strncmp(first, digest, 64) != 0;
    g_string_append_printf(out, "%s %.64s\n", option, digest);
  }
  if (!changed) {
    g_string_free(out, TRUE);
    return NULL;
  }
  return g_string_free(out, FALSE);
}
