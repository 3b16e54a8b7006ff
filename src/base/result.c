/* sieve: evaluation results. */
#include <string.h>
#include <sieve/result.h>

struct _SieveResult {
  SieveStatus status;
  char *reason;
  GPtrArray *names; /* char*, insertion order */
  GArray *values;   /* double */
  double cost;
  GBytes *weights; /* nullable */
  guint keep_top;
};

static const char *const status_names[] = {"pending", "ok", "failed", "screened", "cached", "pruned", "rejected"};

const char *
sieve_status_to_string(SieveStatus status)
{
  g_return_val_if_fail((guint) status < G_N_ELEMENTS(status_names), "unknown");
  return status_names[status];
}

gboolean
sieve_status_from_string(const char *text, SieveStatus *out)
{
  for (guint i = 0; i < G_N_ELEMENTS(status_names); i++)
    if (g_strcmp0(text, status_names[i]) == 0) {
      *out = (SieveStatus) i;
      return TRUE;
    }
  return FALSE;
}

SieveResult *
sieve_result_new(void)
{
  SieveResult *r = g_new0(SieveResult, 1);
  r->status = SIEVE_STATUS_OK;
  r->names = g_ptr_array_new_with_free_func(g_free);
  r->values = g_array_new(FALSE, FALSE, sizeof(double));
  return r;
}

SieveResult *
sieve_result_copy(const SieveResult *result)
{
  g_return_val_if_fail(result != NULL, NULL);
  SieveResult *r = sieve_result_new();
  r->status = result->status;
  r->reason = g_strdup(result->reason);
  r->cost = result->cost;
  sieve_result_set_weights(r, result->weights, result->keep_top);
  for (guint i = 0; i < result->names->len; i++)
    sieve_result_set_metric(r, result->names->pdata[i], g_array_index(result->values, double, i));
  return r;
}

void
sieve_result_free(SieveResult *result)
{
  if (result == NULL)
    return;
  g_free(result->reason);
  g_ptr_array_unref(result->names);
  g_array_unref(result->values);
  g_clear_pointer(&result->weights, g_bytes_unref);
  g_free(result);
}

SieveStatus
sieve_result_get_status(const SieveResult *result)
{
  g_return_val_if_fail(result != NULL, SIEVE_STATUS_FAILED);
  return result->status;
}

void
sieve_result_set_status(SieveResult *result, SieveStatus status)
{
  g_return_if_fail(result != NULL);
  result->status = status;
}

const char *
sieve_result_get_reason(const SieveResult *result)
{
  g_return_val_if_fail(result != NULL, NULL);
  return result->reason;
}

void
sieve_result_set_reason(SieveResult *result, const char *reason)
{
  g_return_if_fail(result != NULL);
  g_free(result->reason);
  result->reason = g_strdup(reason);
}

void
sieve_result_set_failed(SieveResult *result, const char *format, ...)
{
  g_return_if_fail(result != NULL);
  va_list ap;
  va_start(ap, format);
  g_free(result->reason);
  result->reason = g_strdup_vprintf(format, ap);
  va_end(ap);
  result->status = SIEVE_STATUS_FAILED;
}

static gint
find_metric(const SieveResult *result, const char *name)
{
  for (guint i = 0; i < result->names->len; i++)
    if (strcmp(result->names->pdata[i], name) == 0)
      return (gint) i;
  return -1;
}

void
sieve_result_set_metric(SieveResult *result, const char *name, double value)
{
  g_return_if_fail(result != NULL && name != NULL);
  gint i = find_metric(result, name);
  if (i >= 0) {
    g_array_index(result->values, double, i) = value;
    return;
  }
  g_ptr_array_add(result->names, g_strdup(name));
  g_array_append_val(result->values, value);
}

gboolean
sieve_result_get_metric(const SieveResult *result, const char *name, double *out)
{
  g_return_val_if_fail(result != NULL && name != NULL, FALSE);
  gint i = find_metric(result, name);
  if (i < 0)
    return FALSE;
  if (out)
    *out = g_array_index(result->values, double, i);
  return TRUE;
}

guint
sieve_result_n_metrics(const SieveResult *result)
{
  g_return_val_if_fail(result != NULL, 0);
  return result->names->len;
}

const char *
sieve_result_metric_name(const SieveResult *result, guint i)
{
  g_return_val_if_fail(result != NULL && i < result->names->len, NULL);
  return result->names->pdata[i];
}

double
sieve_result_metric_value(const SieveResult *result, guint i)
{
  g_return_val_if_fail(result != NULL && i < result->values->len, 0.0);
  return g_array_index(result->values, double, i);
}

double
sieve_result_get_cost(const SieveResult *result)
{
  g_return_val_if_fail(result != NULL, 0.0);
  return result->cost;
}

void
sieve_result_set_cost(SieveResult *result, double seconds)
{
  g_return_if_fail(result != NULL);
  result->cost = seconds;
}

void
sieve_result_set_weights(SieveResult *result, GBytes *weights, guint keep_top)
{
  g_return_if_fail(result != NULL);
  if (weights)
    g_bytes_ref(weights);
  g_clear_pointer(&result->weights, g_bytes_unref);
  result->weights = weights;
  result->keep_top = keep_top;
}

GBytes *
sieve_result_get_weights(const SieveResult *result, guint *keep_top)
{
  g_return_val_if_fail(result != NULL, NULL);
  if (keep_top)
    *keep_top = result->keep_top;
  return result->weights;
}
