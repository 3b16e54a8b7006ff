/* sieve: the options every user of the proxies reads the same way
 * (sieve_proxy_options_read in sieve/proxy.h). */
#include <math.h>
#include <string.h>

#include <sieve/proxy.h>

/* weights: a list of numbers >= 0, one per proxy, not all zero. */
static gboolean
load_weights(const SieveOptions *o, guint n_proxies, double **out, GError **error)
{
  const SieveNode *node = sieve_options_get_node(o, "weights");
  if (node == NULL)
    return TRUE;
  if (sieve_node_kind(node) != SIEVE_NODE_LIST) {
    sieve_node_set_error(error, node, "'weights' must be a list of numbers, one per proxy");
    return FALSE;
  }
  if (sieve_node_size(node) != n_proxies) {
    sieve_node_set_error(error, node, "'weights' has %u values for %u prox%s", sieve_node_size(node), n_proxies,
                         n_proxies == 1 ? "y" : "ies");
    return FALSE;
  }
  g_autofree double *weights = g_new0(double, n_proxies);
  double sum = 0;
  for (guint i = 0; i < n_proxies; i++) {
    const SieveNode *w = sieve_node_nth(node, i);
    if (!sieve_node_get_double(w, &weights[i], error))
      return FALSE;
    if (!isfinite(weights[i]) || weights[i] < 0) {
      sieve_node_set_error(error, w, "a weight must be a finite number >= 0, got %s", sieve_node_text(w));
      return FALSE;
    }
    sum += weights[i];
  }
  if (sum <= 0) {
    sieve_node_set_error(error, node, "'weights' are all zero: at least one proxy must count");
    return FALSE;
  }
  *out = g_steal_pointer(&weights);
  return TRUE;
}

gboolean
sieve_proxy_options_read(const SieveOptions *o, char ***names, guint *n_names, double **weights, GError **error)
{
  g_return_val_if_fail(o != NULL && names != NULL && n_names != NULL && weights != NULL, FALSE);
  const char *const *proxies = sieve_options_get_strv(o, "proxies");
  guint n = proxies ? g_strv_length((char **) proxies) : 0;
  if (n == 0) {
    sieve_options_set_error(o, "proxies", error, "'proxies' is empty: name at least one proxy");
    return FALSE;
  }
  /* Each proxy's score is reported under its name: twice would be once. */
  for (guint i = 0; i < n; i++)
    for (guint j = 0; j < i; j++)
      if (strcmp(proxies[i], proxies[j]) == 0) {
        sieve_options_set_error(o, "proxies", error, "proxy '%s' is listed twice", proxies[i]);
        return FALSE;
      }
  double *w = NULL;
  if (!load_weights(o, n, &w, error))
    return FALSE;
  *names = g_strdupv((char **) proxies);
  *n_names = n;
  *weights = w;
  return TRUE;
}
