/* The CPU backend's parameters as the runtime exchanges them (plain
 * layout), and the SGD step on them in their stored layout. */
#include <omp.h>

#include "runtime/cpu/cpu-private.h"

guint
sieve__cpu_n_params(gpointer impl)
{
  return ((Cpu *)impl)->params->len;
}

const SieveParamInfo *
sieve__cpu_param_info(gpointer impl, guint i)
{
  return &g_array_index(((Cpu *)impl)->params, Param, i).info;
}

gboolean
sieve__cpu_get_param(gpointer impl, guint i, float *out, GError **error)
{
  Cpu *c = impl;
  Param *p = &g_array_index(c->params, Param, i);
  return sieve__cpu_transfer(c, &p->plain, out, &p->md, sieve__cpu_slot_ptr(c, p->value), TRUE, error);
}

gboolean
sieve__cpu_set_param(gpointer impl, guint i, const float *values, GError **error)
{
  Cpu *c = impl;
  Param *p = &g_array_index(c->params, Param, i);
  return sieve__cpu_transfer(c, &p->plain, (float *)values, &p->md, sieve__cpu_slot_ptr(c, p->value), FALSE, error);
}

gboolean
sieve__cpu_get_grad(gpointer impl, guint i, float *out, GError **error)
{
  Cpu *c = impl;
  Param *p = &g_array_index(c->params, Param, i);
  return sieve__cpu_transfer(c, &p->plain, out, &p->md, sieve__cpu_slot_ptr(c, p->grad), TRUE, error);
}

gboolean
sieve__cpu_get_velocity(gpointer impl, guint i, float *out, GError **error)
{
  Cpu *c = impl;
  Param *p = &g_array_index(c->params, Param, i);
  return sieve__cpu_transfer(c, &p->plain, out, &p->md, sieve__cpu_slot_ptr(c, p->velocity), TRUE, error);
}

gboolean
sieve__cpu_set_velocity(gpointer impl, guint i, const float *values, GError **error)
{
  Cpu *c = impl;
  Param *p = &g_array_index(c->params, Param, i);
  return sieve__cpu_transfer(c, &p->plain, (float *)values, &p->md, sieve__cpu_slot_ptr(c, p->velocity), FALSE,
                             error);
}

/* PyTorch's SGD (dampening 0): g += wd w; v = m v + g; step along g + m v
 * (Nesterov) or v.  Padding inside blocked layouts stays zero: its
 * weights, gradients and velocities all start and remain zero. */
gboolean
sieve__cpu_sgd_step(gpointer impl, const SieveSgd *sgd, GError **error)
{
  Cpu *c = impl;
  omp_set_num_threads((int)c->threads);
  float lr = (float)sgd->lr, m = (float)sgd->momentum, wd = (float)sgd->weight_decay;
  for (guint i = 0; i < c->params->len; i++) {
    Param *p = &g_array_index(c->params, Param, i);
    float *w = sieve__cpu_slot_ptr(c, p->value), *g = sieve__cpu_slot_ptr(c, p->grad),
          *v = sieve__cpu_slot_ptr(c, p->velocity);
    gssize n = (gssize)(sieve__cpu_md_bytes(&p->md) / sizeof(float));
    gboolean nesterov = sgd->nesterov;
#pragma omp parallel for if (n > 32768) schedule(static)
    for (gssize k = 0; k < n; k++) {
      float gk = g[k] + wd * w[k];
      if (m != 0) {
        v[k] = m * v[k] + gk;
        gk = nesterov ? gk + m * v[k] : v[k];
      }
      w[k] -= lr * gk;
    }
  }
  return TRUE;
}
