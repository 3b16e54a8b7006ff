/* sieve: finding and loading plugins.
 *
 *   g_autoptr(SieveRegistry) registry = sieve_registry_new();
 *   g_autoptr(GPtrArray) refused = g_ptr_array_new_with_free_func((GDestroyNotify) g_error_free);
 *   sieve_registry_load_default(registry, NULL, refused);
 *   const SieveComponent *random = sieve_registry_lookup(registry, SIEVE_KIND_OPTIMIZER, "random");
 *
 * The default order: the plugins compiled into the program, the build
 * tree's plugins when sieve runs uninstalled (else $libdir/sieve/plugins),
 * then every entry of SIEVE_PLUGIN_PATH (folders or files, ':'-separated),
 * then the extra paths given (a config's plugin_path).  A name is the first
 * registrant's: a later plugin that registers it is refused.  A file
 * reached twice is loaded once.
 */
#pragma once

#include <glib.h>
#include <sieve/abi.h>
#include <sieve/component.h>

G_BEGIN_DECLS

SIEVE_API SieveRegistry *sieve_registry_new(void); /* (transfer full) */
SIEVE_API void sieve_registry_free(SieveRegistry *registry);

/* Load one plugin file.  Refusals (not a shared object, no descriptor, ABI
 * mismatch, failing init, a name already taken) are errors whose message
 * starts with the file's path; nothing of a refused plugin stays registered. */
SIEVE_API gboolean sieve_registry_load_file(SieveRegistry *registry, const char *path, GError **error);
/* Load every *.so under dir (recursing into sub-folders when recursive).
 * Each refusal is appended to errors (GError*, transfer full; may be NULL to
 * ignore them).  Returns how many plugins loaded. */
SIEVE_API guint sieve_registry_load_dir(SieveRegistry *registry, const char *dir, gboolean recursive,
                                        GPtrArray *errors);
/* The program's own plugins (compiled in, then its plugin folder), then
 * SIEVE_PLUGIN_PATH's entries, then extra_paths (files or folders): a name
 * is the first registrant's, so a user's plugin cannot replace a bundled
 * one (it is refused, into errors). */
SIEVE_API void sieve_registry_load_default(SieveRegistry *registry, const char *const *extra_paths,
                                           GPtrArray *errors);

/* (transfer none) (nullable) */
SIEVE_API const SieveComponent *sieve_registry_lookup(const SieveRegistry *registry,
                                                      SieveComponentKind kind, const char *name);
/* Like lookup, but a missing name is an error at node's location with the
 * closest registered name suggested. (transfer none) */
SIEVE_API const SieveComponent *sieve_registry_require(const SieveRegistry *registry,
                                                       SieveComponentKind kind, const char *name,
                                                       const SieveNode *where, GError **error);
/* Components of one kind, sorted by name. (transfer container) */
SIEVE_API GPtrArray *sieve_registry_list(const SieveRegistry *registry, SieveComponentKind kind);
/* Paths of the plugin files loaded, in load order. (transfer container) */
SIEVE_API GPtrArray *sieve_registry_loaded_files(const SieveRegistry *registry);

G_DEFINE_AUTOPTR_CLEANUP_FUNC(SieveRegistry, sieve_registry_free)

G_END_DECLS
