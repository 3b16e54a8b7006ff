/* sieve: an architecture space named on the command line, and every
 * candidate of a finite one (what `sieve hash` and `sieve latency` share). */
#include <math.h>
#include <string.h>

#include "cli/cli-private.h"

/* Every genotype of a finite space, first decision slowest; decisions that
 * their conditions switch off stay NAN. */
void
sieve_cli_enumerate(const SieveSpace *space, SieveGenotype *g, guint d, GPtrArray *out)
{
  guint n = sieve_space_n_decisions(space);
  if (d == n) {
    g_ptr_array_add(out, sieve_genotype_copy(g));
    return;
  }
  if (!sieve_space_is_active(space, g, d)) {
    sieve_genotype_set(g, d, NAN);
    sieve_cli_enumerate(space, g, d + 1, out);
    return;
  }
  const SieveDecision *dec = sieve_space_decision(space, d);
  for (double v = dec->low; v <= dec->high; v++) {
    sieve_genotype_set(g, d, v);
    sieve_cli_enumerate(space, g, d + 1, out);
  }
  sieve_genotype_set(g, d, NAN);
}

SieveSpace *
sieve_cli_open_space(SieveRegistry *registry, const char *name, char **overrides, const char *command,
                     GError **error)
{
  /* Errors about the section point at the flag as train's do ("--space
   * hpo: ..."): line 0, a flag has no line and column. */
  g_autofree char *flag = g_strdup_printf("--space %s", name);
  g_autoptr(SieveNode) root = sieve_node_new_map(flag, 0, 0);
  SieveNode *section = sieve_node_new_map(flag, 0, 0);
  sieve_node_map_set(section, "plugin", sieve_node_new_scalar(name, TRUE, flag, 0, 0));
  sieve_node_map_set(root, "space", section);
  for (guint i = 0; overrides && overrides[i]; i++) {
    const char *eq = strchr(overrides[i], '=');
    if (!g_str_has_prefix(overrides[i], "space.") || eq == NULL || eq == overrides[i] + 6) {
      g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_CONFIG,
                  "--set '%s': expected space.KEY=VALUE (sieve %s only has a space), e.g. --set space.C=8",
                  overrides[i], command);
      return NULL;
    }
    g_autofree char *key = g_strndup(overrides[i], eq - overrides[i]);
    g_autofree char *origin = g_strdup_printf("--set %s", overrides[i]);
    if (!sieve_node_set_path(root, key, eq + 1, origin, error))
      return NULL;
  }
  const SieveComponent *component =
      sieve_registry_require(registry, SIEVE_KIND_SPACE, name, sieve_node_lookup(section, "plugin"), error);
  if (component == NULL)
    return NULL;
  static const char *const reserved[] = {"plugin", NULL};
  g_autofree char *context = g_strdup_printf("space '%s'", name);
  g_autofree char *cwd = g_get_current_dir();
  g_autoptr(SieveOptions) options = sieve_options_new(sieve_component_get_info(component)->options,
                                                      sieve_node_lookup(root, "space"), reserved, cwd, context, error);
  if (options == NULL)
    return NULL;
  SieveSpace *space = sieve_space_new(component, options, error);
  if (space != NULL && !sieve_space_can_build(space)) {
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_CONFIG,
                "space %s builds no networks (it is not an architecture space): there is nothing to %s", name,
                command);
    sieve_space_free(space);
    return NULL;
  }
  return space;
}

