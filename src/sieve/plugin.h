/* sieve: plugins, components and the registry.
 *
 * A plugin is a shared object exporting one descriptor:
 *
 *   static gboolean
 *   my_init(SieveRegistry *registry, GError **error)
 *   {
 *     return sieve_registry_add(registry, &my_optimizer_info, error);
 *   }
 *   SIEVE_PLUGIN_DEFINE("my-plugin", "1.0", "A better optimizer", "MIT", my_init);
 *
 * where my_optimizer_info is a SieveComponentInfo naming the component, its
 * kind, its option table and its class (a const struct of function pointers).
 * The loader refuses a plugin built for another ABI major or a newer minor,
 * a file without the descriptor, and a component whose name is taken; each
 * refusal is a GError naming the file, and the other plugins still load.
 */
#pragma once

#include <glib.h>
#include <gmodule.h>
#include <sieve/abi.h>
#include <sieve/component.h>
#include <sieve/evaluator.h>
#include <sieve/optimizer.h>
#include <sieve/space.h>

G_BEGIN_DECLS

/* Register a component.  info and everything it points to must outlive the
 * registry (static data in the plugin: plugins are never unloaded). */
SIEVE_API gboolean sieve_registry_add(SieveRegistry *registry, const SieveComponentInfo *info,
                                      GError **error);

typedef struct {
  guint32 abi_major;
  guint32 abi_minor;
  const char *name;
  const char *version;
  const char *summary;
  const char *license;
  gboolean (*init)(SieveRegistry *registry, GError **error);
  gpointer reserved[8];
} SievePluginDescriptor;
SIEVE_ABI_SIZE(SievePluginDescriptor, 112);

#define SIEVE_PLUGIN_SYMBOL "sieve_plugin_descriptor"

#define SIEVE_PLUGIN_DEFINE(name_, version_, summary_, license_, init_)                          \
  G_MODULE_EXPORT const SievePluginDescriptor sieve_plugin_descriptor = {                        \
      SIEVE_ABI_MAJOR, SIEVE_ABI_MINOR, (name_), (version_), (summary_), (license_), (init_), {NULL}}

/* Registers a plugin compiled into the program instead of loaded from a
 * file, as GStreamer's gst_plugin_register_static does: from then on
 * sieve_registry_load_default() runs its init in every registry before it
 * loads any file, so that no file can take its components' names.  This is
 * how a host layer (the Lua host, an embedding program) adds components
 * without the library calling up into it.  descriptor must live as long as
 * the process (static data); registering it again does nothing.  FALSE with
 * error when its ABI or fields are unusable. */
SIEVE_API gboolean sieve_plugin_register_static(const SievePluginDescriptor *descriptor, GError **error);


G_END_DECLS
