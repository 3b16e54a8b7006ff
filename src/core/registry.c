/* sieve: the plugin loader and the component registry.
 *
 * Loading is all-or-nothing per file: components registered by a plugin's
 * init are staged and only enter the registry when the whole init succeeded
 * without a refused registration, so a half-registered plugin never exists.
 * Plugins stay resident (their classes and option tables are static data the
 * registry points into).
 */
#include "sieve-config.h"

#include <gmodule.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sieve/plugin.h>
#include <sieve/registry.h>

#include "core/core-private.h"


#define N_KINDS 3

struct _SieveComponent {
  SieveComponentInfo info;
  char *path; /* plugin file, or "<builtin>" */
  const SievePluginDescriptor *plugin;
  SieveRegistry *registry; /* that holds it: a composite space finds its parts there */
};

struct _SieveRegistry {
  GHashTable *by_kind[N_KINDS]; /* name -> SieveComponent* (owned) */
  GPtrArray *files;             /* canonical paths loaded, in order */
  GHashTable *seen;             /* canonical paths tried (loaded or refused) */
  /* While a plugin's init runs: */
  const char *loading_path;
  const SievePluginDescriptor *loading;
  GPtrArray *staging; /* SieveComponent* */
  GError *staging_error;
};

static const char *const kind_names[N_KINDS] = {"space", "optimizer", "evaluator"};

const char *
sieve_component_kind_to_string(SieveComponentKind kind)
{
  g_return_val_if_fail((guint) kind < N_KINDS, "unknown");
  return kind_names[kind];
}

static void
component_free(SieveComponent *c)
{
  g_free(c->path);
  g_free(c);
}

SieveRegistry *
sieve_registry_new(void)
{
  SieveRegistry *r = g_new0(SieveRegistry, 1);
  for (int k = 0; k < N_KINDS; k++)
    r->by_kind[k] = g_hash_table_new_full(g_str_hash, g_str_equal, NULL, (GDestroyNotify) component_free);
  r->files = g_ptr_array_new_with_free_func(g_free);
  r->seen = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
  /* The core's own components: the composite space. */
  gboolean ok = sieve_registry_add(r, &sieve__compose_info, NULL);
  g_assert(ok);
  return r;
}

void
sieve_registry_free(SieveRegistry *registry)
{
  if (registry == NULL)
    return;
  for (int k = 0; k < N_KINDS; k++)
    g_hash_table_unref(registry->by_kind[k]);
  g_ptr_array_unref(registry->files);
  g_hash_table_unref(registry->seen);
  g_free(registry);
}

static gboolean
valid_name(const char *name)
{
  if (name == NULL || *name == '\0')
    return FALSE;
  for (const char *p = name; *p; p++)
    if (!(g_ascii_islower(*p) || g_ascii_isdigit(*p) || *p == '_' || *p == '-'))
      return FALSE;
  return TRUE;
}

/* The function pointers a component of each kind cannot do without. */
static const char *
missing_method(const SieveComponentInfo *info)
{
  switch (info->kind) {
  case SIEVE_KIND_SPACE: {
    const SieveSpaceClass *k = info->klass;
    if (!k->create)
      return "create";
    if ((k->format == NULL) != (k->parse == NULL))
      return k->format ? "parse (format is set)" : "format (parse is set)";
    return NULL;
  }
  case SIEVE_KIND_OPTIMIZER: {
    const SieveOptimizerClass *k = info->klass;
    return !k->create ? "create" : !k->ask ? "ask" : !k->tell ? "tell" : !k->save ? "save" : !k->load ? "load" : NULL;
  }
  case SIEVE_KIND_EVALUATOR: {
    const SieveEvaluatorClass *k = info->klass;
    return !k->create ? "create" : !k->evaluate ? "evaluate" : NULL;
  }
  }
  return "kind";
}

/* What `sieve plugins --describe` shows and every section validates
 * against must hold up before the component is taken: its option table
 * (sieve__option_spec_check; the keys the registry reads itself are
 * reserved) and its example section. */
const char *const *
sieve__component_reserved_keys(SieveComponentKind kind)
{
  static const char *const reserved_plain[] = {"plugin", NULL};
  static const char *const reserved_optimizer[] = {"plugin", "seed", NULL};
  return kind == SIEVE_KIND_OPTIMIZER ? reserved_optimizer : reserved_plain;
}

static gboolean
check_info_tables(const SieveComponentInfo *info, GError **error)
{
  if (!sieve__option_spec_check(info->options, sieve__component_reserved_keys(info->kind), error))
    return FALSE;
  if (info->example == NULL)
    return TRUE;
  GError *local = NULL;
  g_autoptr(SieveNode) example = sieve_node_parse_string(info->example, -1, "its example", &local);
  if (example != NULL && sieve_node_kind(example) != SIEVE_NODE_MAP)
    g_set_error(&local, SIEVE_ERROR, SIEVE_ERROR_PLUGIN, "its example is not a section ({plugin: ..., ...}): %s",
                info->example);
  if (local != NULL) {
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_PLUGIN, "%s", local->message);
    g_error_free(local);
    return FALSE;
  }
  return TRUE;
}

static const SieveComponent *
find_staged(SieveRegistry *registry, SieveComponentKind kind, const char *name)
{
  if (registry->staging == NULL)
    return NULL;
  for (guint i = 0; i < registry->staging->len; i++) {
    const SieveComponent *c = registry->staging->pdata[i];
    if (c->info.kind == kind && strcmp(c->info.name, name) == 0)
      return c;
  }
  return NULL;
}

gboolean
sieve_registry_add(SieveRegistry *registry, const SieveComponentInfo *info, GError **error)
{
  g_return_val_if_fail(registry != NULL && info != NULL, FALSE);
  const char *where = registry->loading_path ? registry->loading_path : "<builtin>";
  GError *local = NULL;

  if ((guint) info->kind >= N_KINDS)
    g_set_error(&local, SIEVE_ERROR, SIEVE_ERROR_PLUGIN, "%s: component has unknown kind %d", where, info->kind);
  else if (!valid_name(info->name))
    g_set_error(&local, SIEVE_ERROR, SIEVE_ERROR_PLUGIN,
                "%s: %s name '%s' is not valid (lower-case letters, digits, '_' and '-')", where,
                kind_names[info->kind], info->name ? info->name : "(null)");
  else if (info->klass == NULL)
    g_set_error(&local, SIEVE_ERROR, SIEVE_ERROR_PLUGIN, "%s: %s '%s' has no class", where,
                kind_names[info->kind], info->name);
  else if (missing_method(info) != NULL)
    g_set_error(&local, SIEVE_ERROR, SIEVE_ERROR_PLUGIN, "%s: %s '%s' has no '%s' method", where,
                kind_names[info->kind], info->name, missing_method(info));
  else if (!check_info_tables(info, &local))
    g_prefix_error(&local, "%s: %s '%s': ", where, kind_names[info->kind], info->name);
  else {
    const SieveComponent *other = g_hash_table_lookup(registry->by_kind[info->kind], info->name);
    if (other == NULL)
      other = find_staged(registry, info->kind, info->name);
    if (other != NULL)
      g_set_error(&local, SIEVE_ERROR, SIEVE_ERROR_PLUGIN,
                  "%s: %s '%s' is already registered by %s", where, kind_names[info->kind], info->name,
                  other->path);
  }
  if (local != NULL) {
    if (registry->staging != NULL && registry->staging_error == NULL)
      registry->staging_error = g_error_copy(local);
    g_propagate_error(error, local);
    return FALSE;
  }

  SieveComponent *c = g_new0(SieveComponent, 1);
  c->info = *info;
  c->path = g_strdup(where);
  c->plugin = registry->loading;
  c->registry = registry;
  if (registry->staging != NULL)
    g_ptr_array_add(registry->staging, c);
  else
    g_hash_table_insert(registry->by_kind[info->kind], (gpointer) c->info.name, c);
  return TRUE;
}

const SieveRegistry *
sieve__component_get_registry(const SieveComponent *component)
{
  g_return_val_if_fail(component != NULL, NULL);
  return component->registry;
}

/* For components registered by a script: the registry names origin as
 * their file, as it names a plugin's. */
gboolean
sieve__registry_add_from(SieveRegistry *registry, const SieveComponentInfo *info, const char *origin, GError **error)
{
  g_return_val_if_fail(registry != NULL && registry->staging == NULL, FALSE);
  const char *saved = registry->loading_path;
  registry->loading_path = origin;
  gboolean ok = sieve_registry_add(registry, info, error);
  registry->loading_path = saved;
  return ok;
}

static char *
canonical_path(const char *path)
{
  char *real = realpath(path, NULL);
  if (real == NULL)
    return g_canonicalize_filename(path, NULL);
  char *copy = g_strdup(real);
  free(real);
  return copy;
}

/* A descriptor the loader can use: this ABI, an init, a name and a version. */
static gboolean
check_descriptor(const SievePluginDescriptor *desc, const char *path, GError **error)
{
  if (desc->abi_major != SIEVE_ABI_MAJOR || desc->abi_minor > SIEVE_ABI_MINOR) {
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_ABI,
                "%s: plugin '%s' was built for sieve ABI %u.%u, this sieve provides ABI %d.%d; "
                "rebuild the plugin against this sieve's headers",
                path, desc->name ? desc->name : "?", desc->abi_major, desc->abi_minor, SIEVE_ABI_MAJOR,
                SIEVE_ABI_MINOR);
    return FALSE;
  }
  if (desc->init == NULL || desc->name == NULL || desc->version == NULL) {
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_PLUGIN, "%s: plugin descriptor has no %s", path,
                desc->init == NULL ? "init function" : desc->name == NULL ? "name" : "version");
    return FALSE;
  }
  return TRUE;
}

/* A plugin whose init crashes takes the process with it; what we can do is
 * say which file did it.  While an init runs, the fatal signals print the
 * plugin's path (with write(), async-signal-safe) and then take their
 * default action, so the exit status still tells the signal.  Plugins are
 * loaded at start-up, one at a time, so one static path is enough. */
static const char *volatile init_crash_path;

static void
on_init_crash(int sig)
{
  static const char head[] = "sieve: plugin ";
  static const char tail[] = " crashed in its init (a fatal signal); remove it from the plugin path\n";
  const char *path = init_crash_path;
  if (write(STDERR_FILENO, head, sizeof head - 1) < 0 || (path && write(STDERR_FILENO, path, strlen(path)) < 0) ||
      write(STDERR_FILENO, tail, sizeof tail - 1) < 0) {
    /* nothing more to do: the signal is raised again below */
  }
  signal(sig, SIG_DFL);
  raise(sig);
}

static gboolean
call_init_guarded(SieveRegistry *registry, const SievePluginDescriptor *desc, const char *path, GError **error)
{
  static const int fatal[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
  struct sigaction crash = {.sa_handler = on_init_crash, .sa_flags = SA_NODEFER}, saved[G_N_ELEMENTS(fatal)];
  sigemptyset(&crash.sa_mask);
  init_crash_path = path;
  for (guint i = 0; i < G_N_ELEMENTS(fatal); i++)
    sigaction(fatal[i], &crash, &saved[i]);
  gboolean ok = desc->init(registry, error);
  for (guint i = 0; i < G_N_ELEMENTS(fatal); i++)
    sigaction(fatal[i], &saved[i], NULL);
  init_crash_path = NULL;
  return ok;
}

/* Runs a plugin's init with its registrations staged: they enter the
 * registry only when the whole init succeeded.  where: what components
 * name as their file (the canonical path, or "<builtin>"); path: what
 * messages name. */
static gboolean
run_init(SieveRegistry *registry, const SievePluginDescriptor *desc, const char *where, const char *path,
         GError **error)
{
  registry->loading_path = where;
  registry->loading = desc;
  registry->staging = g_ptr_array_new();
  GError *local = NULL;
  gboolean ok = call_init_guarded(registry, desc, path, &local);
  GPtrArray *staged = registry->staging;
  registry->staging = NULL;
  registry->loading_path = NULL;
  registry->loading = NULL;

  if (!ok || local != NULL || registry->staging_error != NULL) {
    GError *why = local ? local : registry->staging_error;
    if (why == NULL)
      g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_PLUGIN, "%s: plugin '%s' init failed without a reason",
                  path, desc->name);
    else if (g_str_has_prefix(why->message, where))
      g_set_error(error, SIEVE_ERROR, why->code, "%s", why->message); /* already names the file */
    else
      g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_PLUGIN, "%s: plugin '%s' init failed: %s", path,
                  desc->name, why->message);
    g_clear_error(&local);
    g_clear_error(&registry->staging_error);
    for (guint i = 0; i < staged->len; i++)
      component_free(staged->pdata[i]);
    g_ptr_array_unref(staged);
    return FALSE;
  }
  for (guint i = 0; i < staged->len; i++) {
    SieveComponent *c = staged->pdata[i];
    g_hash_table_insert(registry->by_kind[c->info.kind], (gpointer) c->info.name, c);
  }
  g_ptr_array_unref(staged);
  return TRUE;
}

gboolean
sieve_registry_load_file(SieveRegistry *registry, const char *path, GError **error)
{
  g_return_val_if_fail(registry != NULL && path != NULL, FALSE);
  g_autofree char *canon = canonical_path(path);
  if (g_hash_table_contains(registry->seen, canon))
    return TRUE; /* reached twice through the search path: once is enough */
  g_hash_table_add(registry->seen, g_strdup(canon));

  GModule *module = g_module_open(canon, G_MODULE_BIND_LAZY | G_MODULE_BIND_LOCAL);
  if (module == NULL) {
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_PLUGIN, "%s: not a loadable shared object: %s", path,
                g_module_error());
    return FALSE;
  }
  const SievePluginDescriptor *desc = NULL;
  if (!g_module_symbol(module, SIEVE_PLUGIN_SYMBOL, (gpointer *) &desc) || desc == NULL) {
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_PLUGIN,
                "%s: not a sieve plugin (no '%s' symbol; use SIEVE_PLUGIN_DEFINE)", path, SIEVE_PLUGIN_SYMBOL);
    g_module_close(module);
    return FALSE;
  }
  if (!check_descriptor(desc, path, error) || !run_init(registry, desc, canon, path, error)) {
    g_module_close(module);
    return FALSE;
  }
  g_module_make_resident(module);
  g_ptr_array_add(registry->files, g_strdup(canon));
  return TRUE;
}

static gint
compare_strings(gconstpointer a, gconstpointer b)
{
  return strcmp(*(const char *const *) a, *(const char *const *) b);
}

guint
sieve_registry_load_dir(SieveRegistry *registry, const char *dir, gboolean recursive, GPtrArray *errors)
{
  g_return_val_if_fail(registry != NULL && dir != NULL, 0);
  GError *local = NULL;
  g_autoptr(GDir) d = g_dir_open(dir, 0, &local);
  if (d == NULL) {
    if (errors)
      g_ptr_array_add(errors, g_error_new(SIEVE_ERROR, SIEVE_ERROR_PLUGIN, "%s: cannot read plugin folder: %s",
                                          dir, local->message));
    g_error_free(local);
    return 0;
  }
  /* Sorted, so that which of two same-named plugins wins never depends on
   * the order the file system lists them in. */
  g_autoptr(GPtrArray) names = g_ptr_array_new_with_free_func(g_free);
  const char *name;
  while ((name = g_dir_read_name(d)) != NULL)
    if (name[0] != '.')
      g_ptr_array_add(names, g_strdup(name));
  g_ptr_array_sort(names, compare_strings);

  guint loaded = 0;
  for (guint i = 0; i < names->len; i++) {
    g_autofree char *path = g_build_filename(dir, names->pdata[i], NULL);
    if (g_file_test(path, G_FILE_TEST_IS_DIR)) {
      if (recursive)
        loaded += sieve_registry_load_dir(registry, path, TRUE, errors);
      continue;
    }
    if (!g_str_has_suffix(names->pdata[i], "." G_MODULE_SUFFIX))
      continue;
    GError *err = NULL;
    if (sieve_registry_load_file(registry, path, &err))
      loaded++;
    else if (errors)
      g_ptr_array_add(errors, err);
    else
      g_error_free(err);
  }
  return loaded;
}

/* Running from the build tree (sieve or a test binary under the build root)? */
static gboolean
running_uninstalled(void)
{
  g_autofree char *exe = g_file_read_link("/proc/self/exe", NULL);
  if (exe == NULL)
    return FALSE;
  g_autofree char *root = canonical_path(SIEVE_BUILD_ROOT);
  return g_str_has_prefix(exe, root) && exe[strlen(root)] == G_DIR_SEPARATOR;
}

static void
load_path_entry(SieveRegistry *registry, const char *entry, GPtrArray *errors)
{
  if (*entry == '\0')
    return;
  if (g_file_test(entry, G_FILE_TEST_IS_DIR)) {
    sieve_registry_load_dir(registry, entry, FALSE, errors);
    return;
  }
  GError *err = NULL;
  if (!g_file_test(entry, G_FILE_TEST_EXISTS))
    err = g_error_new(SIEVE_ERROR, SIEVE_ERROR_PLUGIN, "%s: no such plugin file or folder", entry);
  else
    sieve_registry_load_file(registry, entry, &err);
  if (err != NULL && errors)
    g_ptr_array_add(errors, err);
  else if (err != NULL)
    g_error_free(err);
}

/* Plugins compiled into the program (sieve_plugin_register_static), in
 * the order they were registered. */
static GMutex static_lock;
static GPtrArray *static_plugins; /* const SievePluginDescriptor* */

gboolean
sieve_plugin_register_static(const SievePluginDescriptor *descriptor, GError **error)
{
  g_return_val_if_fail(descriptor != NULL, FALSE);
  if (!check_descriptor(descriptor, "<builtin>", error))
    return FALSE;
  g_mutex_lock(&static_lock);
  if (static_plugins == NULL)
    static_plugins = g_ptr_array_new();
  gboolean known = FALSE;
  for (guint i = 0; i < static_plugins->len; i++)
    known |= static_plugins->pdata[i] == descriptor;
  if (!known)
    g_ptr_array_add(static_plugins, (gpointer) descriptor);
  g_mutex_unlock(&static_lock);
  return TRUE;
}

/* Each static plugin once per registry, before any file. */
static void
load_static(SieveRegistry *registry, GPtrArray *errors)
{
  g_mutex_lock(&static_lock);
  guint n = static_plugins ? static_plugins->len : 0;
  g_autofree gpointer *list = n ? g_memdup2(static_plugins->pdata, n * sizeof(gpointer)) : NULL;
  g_mutex_unlock(&static_lock);
  for (guint i = 0; i < n; i++) {
    const SievePluginDescriptor *desc = list[i];
    g_autofree char *key = g_strdup_printf("<builtin %p>", (gconstpointer) desc);
    if (g_hash_table_contains(registry->seen, key))
      continue;
    g_hash_table_add(registry->seen, g_strdup(key));
    GError *err = NULL;
    if (!run_init(registry, desc, "<builtin>", "<builtin>", &err)) {
      if (errors)
        g_ptr_array_add(errors, err);
      else {
        g_warning("%s", err->message);
        g_error_free(err);
      }
    }
  }
}

void
sieve_registry_load_default(SieveRegistry *registry, const char *const *extra_paths, GPtrArray *errors)
{
  g_return_if_fail(registry != NULL);
  /* Plugins compiled into the program first, then the ones installed with
   * it, so that a user's file cannot take their names: it is refused with
   * a warning naming it (it replaced the bundled component, and every
   * config naming that one ran the user's code, a review found). */
  load_static(registry, errors);
  if (running_uninstalled()) {
    g_autofree char *dir = g_build_filename(SIEVE_BUILD_ROOT, "plugins", NULL);
    sieve_registry_load_dir(registry, dir, TRUE, errors);
  } else if (g_file_test(SIEVE_PLUGINDIR, G_FILE_TEST_IS_DIR)) {
    sieve_registry_load_dir(registry, SIEVE_PLUGINDIR, FALSE, errors);
  }
  const char *env = g_getenv("SIEVE_PLUGIN_PATH");
  if (env != NULL) {
    g_auto(GStrv) entries = g_strsplit(env, G_SEARCHPATH_SEPARATOR_S, -1);
    for (guint i = 0; entries[i]; i++)
      load_path_entry(registry, entries[i], errors);
  }
  for (guint i = 0; extra_paths && extra_paths[i]; i++)
    load_path_entry(registry, extra_paths[i], errors);
}

static gint
compare_components(gconstpointer a, gconstpointer b)
{
  const SieveComponent *ca = *(const SieveComponent *const *) a, *cb = *(const SieveComponent *const *) b;
  return strcmp(ca->info.name, cb->info.name);
}

const SieveComponent *
sieve_registry_lookup(const SieveRegistry *registry, SieveComponentKind kind, const char *name)
{
  g_return_val_if_fail(registry != NULL && (guint) kind < N_KINDS && name != NULL, NULL);
  return g_hash_table_lookup(registry->by_kind[kind], name);
}

GPtrArray *
sieve_registry_list(const SieveRegistry *registry, SieveComponentKind kind)
{
  g_return_val_if_fail(registry != NULL && (guint) kind < N_KINDS, NULL);
  GPtrArray *list = g_ptr_array_new();
  GHashTableIter iter;
  gpointer value;
  g_hash_table_iter_init(&iter, registry->by_kind[kind]);
  while (g_hash_table_iter_next(&iter, NULL, &value))
    g_ptr_array_add(list, value);
  g_ptr_array_sort(list, compare_components);
  return list;
}

const SieveComponent *
sieve_registry_require(const SieveRegistry *registry, SieveComponentKind kind, const char *name,
                       const SieveNode *where, GError **error)
{
  const SieveComponent *c = sieve_registry_lookup(registry, kind, name);
  if (c != NULL)
    return c;
  g_autoptr(GPtrArray) list = sieve_registry_list(registry, kind);
  g_autofree const char **names = g_new0(const char *, list->len + 1);
  for (guint i = 0; i < list->len; i++)
    names[i] = sieve_component_get_name(list->pdata[i]);
  const char *guess = sieve_suggest(name, names);
  g_autofree char *all = list->len ? g_strjoinv(", ", (char **) names) : g_strdup("none loaded");
  g_autofree char *hint = guess ? g_strdup_printf(" (did you mean '%s'?)", guess) : g_strdup("");
  if (where != NULL)
    sieve_node_set_error(error, where, "no %s plugin named '%s'%s; available: %s", kind_names[kind], name, hint,
                         all);
  else
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_NOT_FOUND, "no %s plugin named '%s'%s; available: %s",
                kind_names[kind], name, hint, all);
  return NULL;
}

GPtrArray *
sieve_registry_loaded_files(const SieveRegistry *registry)
{
  g_return_val_if_fail(registry != NULL, NULL);
  GPtrArray *out = g_ptr_array_new();
  for (guint i = 0; i < registry->files->len; i++)
    g_ptr_array_add(out, registry->files->pdata[i]);
  return out;
}

const SieveComponentInfo *
sieve_component_get_info(const SieveComponent *component)
{
  g_return_val_if_fail(component != NULL, NULL);
  return &component->info;
}

const char *
sieve_component_get_name(const SieveComponent *component)
{
  g_return_val_if_fail(component != NULL, NULL);
  return component->info.name;
}

SieveComponentKind
sieve_component_get_kind(const SieveComponent *component)
{
  g_return_val_if_fail(component != NULL, SIEVE_KIND_SPACE);
  return component->info.kind;
}

const char *
sieve_component_get_path(const SieveComponent *component)
{
  g_return_val_if_fail(component != NULL, NULL);
  return component->path;
}

const char *
sieve_component_get_plugin_name(const SieveComponent *component)
{
  g_return_val_if_fail(component != NULL, NULL);
  return component->plugin ? component->plugin->name : "builtin";
}

const char *
sieve_component_get_plugin_version(const SieveComponent *component)
{
  g_return_val_if_fail(component != NULL, NULL);
  return component->plugin ? component->plugin->version : SIEVE_VERSION;
}

const char *
sieve_component_get_plugin_license(const SieveComponent *component)
{
  g_return_val_if_fail(component != NULL, NULL);
  return component->plugin && component->plugin->license ? component->plugin->license : "unknown";
}
