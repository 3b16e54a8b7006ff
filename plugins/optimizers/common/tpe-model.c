/* sieve optimizers: the tree-structured Parzen estimator.  See tpe-model.h. */
#include <string.h>

#include <sieve/abi.h>
#include <sieve/rng.h>
#include <sieve/space.h>

#include "tpe-model.h"

/* ---- observations ------------------------------------------------------ */

void
opt_tpe_data_init(OptTpeData *data, const SieveSpace *space)
{
  data->n_decisions = sieve_space_n_decisions(space);
  data->x = g_array_new(FALSE, FALSE, sizeof(double));
  data->y = g_array_new(FALSE, FALSE, sizeof(double));
  data->tier = g_array_new(FALSE, FALSE, sizeof(double));
}

void
opt_tpe_data_clear(OptTpeData *data)
{
  g_clear_pointer(&data->x, g_array_unref);
  g_clear_pointer(&data->y, g_array_unref);
  g_clear_pointer(&data->tier, g_array_unref);
}

static void
data_append(OptTpeData *data, const SieveGenotype *genotype, double fitness, double tier)
{
  for (guint i = 0; i < data->n_decisions; i++) {
    double v = sieve_genotype_get(genotype, i);
    g_array_append_val(data->x, v);
  }
  g_array_append_val(data->y, fitness);
  g_array_append_val(data->tier, tier);
}

void
opt_tpe_data_add(OptTpeData *data, const SieveGenotype *genotype, double fitness)
{
  data_append(data, genotype, fitness, opt_tier_finished(fitness));
}

void
opt_tpe_data_add_ranked(OptTpeData *data, const SieveGenotype *genotype, double fitness, double tier)
{
  data_append(data, genotype, fitness, opt_fitness(tier)); /* NAN below every tier, as opt_fitness orders */
}

void
opt_tpe_data_add_from(OptTpeData *data, const OptTpeData *from, guint i)
{
  g_return_if_fail(data->n_decisions == from->n_decisions && i < from->y->len);
  g_array_append_vals(data->x, &g_array_index(from->x, double, (gsize) i * from->n_decisions), from->n_decisions);
  g_array_append_val(data->y, g_array_index(from->y, double, i));
  g_array_append_val(data->tier, g_array_index(from->tier, double, i));
}

guint
opt_tpe_data_size(const OptTpeData *data)
{
  return data->y->len;
}

void
opt_tpe_data_save(const OptTpeData *data, GVariantDict *dict, const char *prefix)
{
  g_autofree char *kx = g_strconcat(prefix, "x", NULL), *ky = g_strconcat(prefix, "y", NULL);
  g_autofree char *kt = g_strconcat(prefix, "tier", NULL);
  g_variant_dict_insert_value(dict, kx, opt_array_new(G_VARIANT_TYPE_DOUBLE, data->x->data, data->x->len,
                                                                  sizeof(double)));
  g_variant_dict_insert_value(dict, ky, opt_array_new(G_VARIANT_TYPE_DOUBLE, data->y->data, data->y->len,
                                                                  sizeof(double)));
  g_variant_dict_insert_value(dict, kt, opt_array_new(G_VARIANT_TYPE_DOUBLE, data->tier->data,
                                                                  data->tier->len, sizeof(double)));
}

gboolean
opt_tpe_data_load(OptTpeData *data, GVariant *state, const char *prefix, GError **error)
{
  g_autofree char *kx = g_strconcat(prefix, "x", NULL), *ky = g_strconcat(prefix, "y", NULL);
  g_autoptr(GVariant) x = opt_state_lookup(state, kx, G_VARIANT_TYPE("ad"), error);
  if (x == NULL)
    return FALSE;
  g_autoptr(GVariant) y = opt_state_lookup(state, ky, G_VARIANT_TYPE("ad"), error);
  if (y == NULL)
    return FALSE;
  gsize nx = 0, ny = 0;
  const double *vx = g_variant_get_fixed_array(x, &nx, sizeof(double));
  const double *vy = g_variant_get_fixed_array(y, &ny, sizeof(double));
  if (nx != ny * data->n_decisions) {
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_PARSE, "the state's '%s' holds %zu values for %zu observations of %u "
                "decisions", kx, nx, ny, data->n_decisions);
    return FALSE;
  }
  /* Absent: a state saved before tiers; present, it must be right. */
  g_autofree char *kt = g_strconcat(prefix, "tier", NULL);
  g_autoptr(GVariant) any_tier = g_variant_lookup_value(state, kt, NULL);
  g_autoptr(GVariant) tier = NULL;
  if (any_tier != NULL && (tier = opt_state_lookup(state, kt, G_VARIANT_TYPE("ad"), error)) == NULL)
    return FALSE;
  gsize nt = 0;
  const double *vt = tier ? g_variant_get_fixed_array(tier, &nt, sizeof(double)) : NULL;
  if (tier != NULL && nt != ny) {
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_PARSE, "the state's '%s' holds %zu tiers for %zu observations", kt,
                nt, ny);
    return FALSE;
  }
  g_array_set_size(data->x, 0);
  g_array_set_size(data->y, 0);
  g_array_set_size(data->tier, 0);
  g_array_append_vals(data->x, vx, (guint) nx);
  g_array_append_vals(data->y, vy, (guint) ny);
  for (gsize i = 0; i < ny; i++) {
    /* a NAN tier (a hand-edited state) ranks with the failed: never unordered */
    double t = vt ? opt_fitness(vt[i]) : opt_tier_finished(vy[i]);
    g_array_append_val(data->tier, t);
  }
  return TRUE;
}

/* ---- kernels ----------------------------------------------------------- */

static inline double
std_cdf(double z)
{
  return 0.5 * erfc(-z * G_SQRT2 / 2);
}

static inline double
to_internal(const SieveDecision *d, double v)
{
  return d->log ? log(v) : v;
}

/* One decision's Parzen mixture: n kernels (the last one the prior). */
typedef struct {
  guint n;
  double *w;      /* mixture weights, summing to 1 */
  double *log_w;
  double *mu, *sigma, *log_z; /* numeric: truncated normals on [lo, hi], as scored */
  double draw_scale; /* numeric: the bandwidths' factor when drawing only */
  double lo, hi;
  double *table;  /* categorical, univariate: the mixture's probability of each choice */
  gint *choice;   /* categorical: each kernel's observed choice, -1 for the prior */
  double smooth;  /* categorical: prior_weight / (observations + 1) */
  guint n_choices;
  double log_hit, log_miss, log_uniform; /* categorical kernels' log-probabilities, computed once */
  double p_hit, p_miss, p_uniform;
} Mix;

static void
mix_free(Mix *m)
{
  g_free(m->w);
  g_free(m->log_w);
  g_free(m->mu);
  g_free(m->sigma);
  g_free(m->log_z);
  g_free(m->table);
  g_free(m->choice);
}

/* Optuna's default weights: equal up to 25 observations, then a linear ramp
 * from 1/n for the oldest to 1 for the 25 most recent. */
static double
ramp_weight(guint i, guint n)
{
  if (n < 25)
    return 1;
  guint ramp = n - 25;
  if (i >= ramp)
    return 1;
  if (ramp == 1)
    return 1.0 / n;
  return 1.0 / n + (1 - 1.0 / n) * i / (ramp - 1);
}

static gint
compare_double(gconstpointer a, gconstpointer b)
{
  double x = *(const double *) a, y = *(const double *) b;
  return x < y ? -1 : x > y ? 1 : 0;
}

/* Builds decision d's mixture over the observations idx[0..n_idx) (trial
 * order).  Univariate: only those where d is active take part.
 * Multivariate: all of them, an observation where d is inactive getting
 * the prior's kernel (its mu NAN marks it), and n_dims sets the bandwidth. */
static void
mix_build(Mix *m, const OptTpeData *data, const guint *idx, guint n_idx, guint d, const SieveDecision *dec,
          const OptTpeParams *p, guint n_dims)
{
  memset(m, 0, sizeof *m);
  guint D = data->n_decisions;
  const double *x = (const double *) data->x->data;
  g_autofree guint *use = g_new(guint, n_idx + 1);
  guint n_obs = 0;
  for (guint i = 0; i < n_idx; i++)
    if (p->multivariate || !isnan(x[idx[i] * D + d]))
      use[n_obs++] = idx[i];
  guint n = n_obs + 1;
  m->n = n;
  m->w = g_new(double, n);
  double total = 0;
  for (guint k = 0; k < n_obs; k++)
    total += m->w[k] = ramp_weight(k, n_obs);
  total += m->w[n_obs] = p->prior_weight;
  m->log_w = g_new(double, n);
  for (guint k = 0; k < n; k++) {
    m->w[k] /= total;
    m->log_w[k] = log(m->w[k]);
  }

  if (dec->kind == SIEVE_DECISION_CATEGORICAL) {
    m->n_choices = dec->n_choices;
    m->choice = g_new(gint, n);
    m->smooth = p->prior_weight / (n_obs + 1);
    for (guint k = 0; k < n_obs; k++) {
      double v = x[use[k] * D + d];
      m->choice[k] = isnan(v) ? -1 : (gint) v;
    }
    m->choice[n_obs] = -1;
    m->p_hit = (1 + m->smooth) / (1 + m->n_choices * m->smooth);
    m->p_miss = m->smooth / (1 + m->n_choices * m->smooth);
    m->p_uniform = 1.0 / m->n_choices;
    m->log_hit = log(m->p_hit);
    m->log_miss = log(m->p_miss);
    m->log_uniform = log(m->p_uniform);
    if (!p->multivariate) {
      /* Each observation's kernel spreads `spread` on every choice and the
       * rest on its own: sums per choice make this O(n + choices). */
      m->table = g_new0(double, m->n_choices);
      double spread = m->smooth / (1 + m->n_choices * m->smooth), keep = 1 / (1 + m->n_choices * m->smooth);
      double obs_weight = 0;
      for (guint k = 0; k < n_obs; k++) {
        obs_weight += m->w[k];
        m->table[m->choice[k]] += m->w[k] * keep;
      }
      for (guint c = 0; c < m->n_choices; c++)
        m->table[c] += obs_weight * spread + m->w[n_obs] / m->n_choices;
    }
    return;
  }

  opt_domain_bounds(dec, &m->lo, &m->hi); /* kernels live in the (log-)domain */
  double range = m->hi - m->lo;
  m->mu = g_new(double, n);
  m->sigma = g_new(double, n);
  m->log_z = g_new(double, n);
  for (guint k = 0; k < n_obs; k++) {
    double v = x[use[k] * D + d];
    m->mu[k] = isnan(v) ? NAN : to_internal(dec, v);
  }
  m->mu[n_obs] = 0.5 * (m->lo + m->hi);
  double min_sigma = range / MIN(100.0, 1.0 + n);
  if (p->multivariate) {
    double s = 0.2 * pow(MAX(n_obs, 1), -1.0 / (n_dims + 4)) * range;
    for (guint k = 0; k < n_obs; k++)
      m->sigma[k] = CLAMP(s, min_sigma, range);
  } else {
    /* Distance to the farther neighbour among the sorted centres (the prior
     * included), the domain's ends standing beyond the first and last. */
    g_autofree double *sorted = g_new(double, n + 2);
    sorted[0] = m->lo;
    memcpy(sorted + 1, m->mu, n * sizeof(double));
    sorted[n + 1] = m->hi;
    qsort(sorted + 1, n, sizeof(double), (int (*)(const void *, const void *)) compare_double);
    for (guint k = 0; k < n_obs; k++) {
      /* the centre's place among the sorted (the first of equals) */
      guint lo = 1, hi = n + 1;
      while (lo < hi) {
        guint mid = (lo + hi) / 2;
        if (sorted[mid] < m->mu[k])
          lo = mid + 1;
        else
          hi = mid;
      }
      guint j = lo;
      double left = sorted[j] - sorted[j - 1], right = sorted[j + 1] - sorted[j];
      /* Optuna ignores the domain's ends for the outermost centres. */
      if (n + 2 >= 4 && j == 1)
        left = 0, right = sorted[2] - sorted[1];
      if (n + 2 >= 4 && j == n)
        right = 0, left = sorted[n] - sorted[n - 1];
      m->sigma[k] = CLAMP(MAX(left, right), min_sigma, range);
    }
  }
  m->sigma[n_obs] = range;
  /* BOHB (Falkner, Klein & Hutter, "BOHB: Robust and Efficient
   * Hyperparameter Optimization at Scale", ICML 2018, section 4) draws
   * candidates from l'(x), l's bandwidths multiplied by b_w, and ranks them
   * by l(x)/g(x) with the unwidened densities (HpBandSter's bw_factor): the
   * factor widens the draw (kernel_draw), never the scores. */
  m->draw_scale = p->bandwidth_factor;
  for (guint k = 0; k < n; k++) {
    if (isnan(m->mu[k]))
      continue; /* the prior's kernel stands in */
    m->log_z[k] = log(MAX(std_cdf((m->hi - m->mu[k]) / m->sigma[k]) - std_cdf((m->lo - m->mu[k]) / m->sigma[k]),
                          1e-300));
  }
  guint prior = n_obs;
  m->log_z[prior] = log(std_cdf(0.5 * range / m->sigma[prior]) - std_cdf(-0.5 * range / m->sigma[prior]));
}

/* Log-density (log-mass for ints) of value v under kernel k of m. */
static inline double
kernel_log(const Mix *m, guint k, const SieveDecision *dec, double v)
{
  if (dec->kind == SIEVE_DECISION_CATEGORICAL) {
    if (m->choice[k] < 0)
      return m->log_uniform;
    return (gint) v == m->choice[k] ? m->log_hit : m->log_miss;
  }
  if (isnan(m->mu[k]))
    k = m->n - 1;
  double mu = m->mu[k], s = m->sigma[k];
  if (dec->kind == SIEVE_DECISION_INT) {
    double a = to_internal(dec, v - 0.5), b = to_internal(dec, v + 0.5);
    double mass = std_cdf((b - mu) / s) - std_cdf((a - mu) / s);
    return log(MAX(mass, 1e-300)) - m->log_z[k];
  }
  double z = (to_internal(dec, v) - mu) / s;
  return -0.5 * z * z - log(s) - 0.5 * log(2 * G_PI) - m->log_z[k];
}

/* Log of the whole univariate mixture at v. */
static double
mix_log(const Mix *m, const SieveDecision *dec, double v)
{
  if (dec->kind == SIEVE_DECISION_CATEGORICAL)
    return log(MAX(m->table[(guint) v], 1e-300));
  double best = -INFINITY;
  double terms[m->n];
  for (guint k = 0; k < m->n; k++) {
    terms[k] = log(m->w[k]) + kernel_log(m, k, dec, v);
    best = MAX(best, terms[k]);
  }
  double sum = 0;
  for (guint k = 0; k < m->n; k++)
    sum += exp(terms[k] - best);
  return best + log(sum);
}

static guint
draw_index(const double *w, guint n, SieveRng *rng)
{
  double u = sieve_rng_uniform(rng), acc = 0;
  for (guint k = 0; k + 1 < n; k++) {
    acc += w[k];
    if (u < acc)
      return k;
  }
  return n - 1;
}

/* A value drawn from kernel k of decision dec's mixture. */
static double
kernel_draw(const Mix *m, guint k, const SieveDecision *dec, SieveRng *rng)
{
  if (dec->kind == SIEVE_DECISION_CATEGORICAL) {
    if (m->choice[k] < 0)
      return (double) sieve_rng_below(rng, m->n_choices);
    /* the kernel: the observed choice, or smoothing mass on every choice */
    double keep = 1 / (1 + m->n_choices * m->smooth);
    if (sieve_rng_uniform(rng) < keep)
      return m->choice[k];
    return (double) sieve_rng_below(rng, m->n_choices);
  }
  if (isnan(m->mu[k]))
    k = m->n - 1;
  double t = NAN, s = m->sigma[k] * m->draw_scale; /* widened for the draw only: see mix_build */
  for (guint tries = 0; tries < 100 && isnan(t); tries++) {
    double c = m->mu[k] + s * sieve_rng_normal(rng);
    if (c >= m->lo && c <= m->hi)
      t = c;
  }
  if (isnan(t))
    t = m->lo + sieve_rng_uniform(rng) * (m->hi - m->lo);
  double v = dec->log ? exp(t) : t;
  if (dec->kind == SIEVE_DECISION_INT)
    v = round(v);
  return CLAMP(v, dec->low, dec->high);
}

static double
mix_draw(const Mix *m, const SieveDecision *dec, SieveRng *rng)
{
  if (dec->kind == SIEVE_DECISION_CATEGORICAL && m->table != NULL) {
    double u = sieve_rng_uniform(rng), acc = 0;
    for (guint c = 0; c + 1 < m->n_choices; c++) {
      acc += m->table[c];
      if (u < acc)
        return c;
    }
    return m->n_choices - 1;
  }
  return kernel_draw(m, draw_index(m->w, m->n, rng), dec, rng);
}

/* ---- the model --------------------------------------------------------- */

typedef struct {
  const SieveSpace *space;
  const OptTpeParams *params;
  guint D;
  Mix *below, *above; /* per decision */
} Model;

static void
model_build(Model *model, const SieveSpace *space, const OptTpeData *data, const OptTpeParams *p)
{
  guint n = opt_tpe_data_size(data), D = data->n_decisions;
  model->space = space;
  model->params = p;
  model->D = D;
  guint n_below = (guint) MIN(ceil(p->gamma * n), (double) p->gamma_max);
  n_below = CLAMP(n_below, 1, n);
  /* The best n_below by tier, then fitness (earlier trials first among
   * equals): an insertion into a short sorted list, O(n n_below) at worst
   * but close to O(n) in practice, where a full sort would cost O(n log n)
   * every ask. */
  const double *y = (const double *) data->y->data, *tier = (const double *) data->tier->data;
#define RANKS_ABOVE(i, j) (tier[i] > tier[j] || (tier[i] == tier[j] && y[i] > y[j]))
  g_autofree guint *top = g_new(guint, n_below);
  guint filled = 0;
  for (guint i = 0; i < n; i++) {
    if (filled == n_below && !RANKS_ABOVE(i, top[filled - 1]))
      continue;
    guint j = filled < n_below ? filled++ : n_below - 1;
    while (j > 0 && RANKS_ABOVE(i, top[j - 1])) {
      top[j] = top[j - 1];
      j--;
    }
    top[j] = i;
  }
#undef RANKS_ABOVE
  g_autofree gboolean *is_below = g_new0(gboolean, n);
  for (guint i = 0; i < n_below; i++)
    is_below[top[i]] = TRUE;
  g_autofree guint *below = g_new(guint, n), *above = g_new(guint, n);
  guint nb = 0, na = 0;
  for (guint i = 0; i < n; i++) {
    if (is_below[i])
      below[nb++] = i;
    else
      above[na++] = i;
  }
  model->below = g_new0(Mix, D);
  model->above = g_new0(Mix, D);
  for (guint d = 0; d < D; d++) {
    const SieveDecision *dec = sieve_space_decision(space, d);
    mix_build(&model->below[d], data, below, nb, d, dec, p, D);
    mix_build(&model->above[d], data, above, na, d, dec, p, D);
  }
}

static void
model_free(Model *model)
{
  for (guint d = 0; d < model->D; d++) {
    mix_free(&model->below[d]);
    mix_free(&model->above[d]);
  }
  g_free(model->below);
  g_free(model->above);
}

/* Joint log-density of the active decisions of g under a multivariate
 * mixture (every Mix of the group shares n and w).  The values and
 * decisions are gathered first: this is the inner loop of multivariate
 * TPE (candidates x observations x decisions). */
static double
joint_log(const Model *model, const Mix *mixes, const SieveGenotype *g)
{
  guint n = mixes[0].n, active = 0;
  double v[model->D], terms[n];
  guint idx[model->D];
  const SieveDecision *dec[model->D];
  for (guint d = 0; d < model->D; d++) {
    double x = sieve_genotype_get(g, d);
    if (isnan(x))
      continue;
    v[active] = x;
    dec[active] = sieve_space_decision(model->space, d);
    idx[active++] = d;
  }
  /* Only categorical decisions, and few enough that products of kernel
   * probabilities (each >= smooth / (1 + choices smooth)) cannot underflow:
   * sum the mixture directly, without a log and an exp per kernel. */
  gboolean categorical = active <= 24;
  for (guint a = 0; a < active && categorical; a++)
    categorical = dec[a]->kind == SIEVE_DECISION_CATEGORICAL;
  if (categorical) {
    double sum = 0;
    for (guint k = 0; k < n; k++) {
      double p = mixes[0].w[k];
      for (guint a = 0; a < active; a++) {
        const Mix *m = &mixes[idx[a]];
        gint c = m->choice[k];
        p *= c < 0 ? m->p_uniform : c == (gint) v[a] ? m->p_hit : m->p_miss;
      }
      sum += p;
    }
    return log(sum);
  }
  double best = -INFINITY;
  for (guint k = 0; k < n; k++) {
    double t = mixes[0].log_w[k];
    for (guint a = 0; a < active; a++)
      t += kernel_log(&mixes[idx[a]], k, dec[a], v[a]);
    terms[k] = t;
    best = MAX(best, t);
  }
  double sum = 0;
  for (guint k = 0; k < n; k++)
    sum += exp(terms[k] - best);
  return best + log(sum);
}

static double
score(const Model *model, const SieveGenotype *g)
{
  if (model->params->multivariate)
    return joint_log(model, model->below, g) - joint_log(model, model->above, g);
  double s = 0;
  for (guint d = 0; d < model->D; d++) {
    double v = sieve_genotype_get(g, d);
    if (!isnan(v)) {
      const SieveDecision *dec = sieve_space_decision(model->space, d);
      s += mix_log(&model->below[d], dec, v) - mix_log(&model->above[d], dec, v);
    }
  }
  return s;
}

/* One candidate drawn from l(x): decisions in order, each only where the
 * values drawn for its ancestors make it active. */
static SieveGenotype *
draw_candidate(const Model *model, SieveRng *rng)
{
  SieveGenotype *g = sieve_genotype_new(model->space);
  guint k = model->params->multivariate ? draw_index(model->below[0].w, model->below[0].n, rng) : 0;
  for (guint d = 0; d < model->D; d++) {
    if (!sieve_space_is_active(model->space, g, d))
      continue;
    const SieveDecision *dec = sieve_space_decision(model->space, d);
    double v = model->params->multivariate ? kernel_draw(&model->below[d], k, dec, rng)
                                           : mix_draw(&model->below[d], dec, rng);
    sieve_genotype_set(g, d, v);
  }
  return g;
}

/* Univariate TPE as Optuna runs it: for each active decision in turn, the
 * best of n_candidates draws by l/g of that decision alone. */
static SieveGenotype *
univariate_best(const Model *model, SieveRng *rng)
{
  SieveGenotype *g = sieve_genotype_new(model->space);
  for (guint d = 0; d < model->D; d++) {
    if (!sieve_space_is_active(model->space, g, d))
      continue;
    const SieveDecision *dec = sieve_space_decision(model->space, d);
    double best = NAN, best_score = -INFINITY;
    for (guint c = 0; c < model->params->n_candidates; c++) {
      double v = mix_draw(&model->below[d], dec, rng);
      double s = mix_log(&model->below[d], dec, v) - mix_log(&model->above[d], dec, v);
      if (isnan(best) || s > best_score) {
        best = v;
        best_score = s;
      }
    }
    sieve_genotype_set(g, d, best);
  }
  return g;
}

static gboolean
unseen(const SieveSpace *space, const OptSeen *seen, const SieveGenotype *g)
{
  /* A draw that is not a member of the space counts as one already made. */
  if (!opt_member(space, g))
    return FALSE;
  if (seen == NULL)
    return TRUE;
  return !opt_seen_has_genotype(seen, g);
}

typedef struct {
  SieveGenotype *g;
  double s;
  guint draw;
} Scored;

/* Best score first; the earlier draw first among equals. */
static int
compare_scored(const void *a, const void *b)
{
  const Scored *x = a, *y = b;
  if (x->s != y->s)
    return x->s > y->s ? -1 : 1;
  return x->draw < y->draw ? -1 : 1;
}

SieveGenotype *
opt_tpe_suggest(const SieveSpace *space, const OptTpeData *data, const OptTpeParams *params, SieveRng *rng,
                const OptSeen *seen)
{
  g_return_val_if_fail(opt_tpe_data_size(data) > 0, NULL);
  Model model;
  model_build(&model, space, data, params);
  SieveGenotype *result = NULL;
  if (!params->multivariate) {
    result = univariate_best(&model, rng);
    if (!unseen(space, seen, result))
      g_clear_pointer(&result, sieve_genotype_free);
  }
  /* Joint candidates ranked by l/g: the multivariate proposal, and the
   * fallback when the univariate one was proposed before.  Rounds of more
   * draws follow while every candidate was seen. */
  guint draws = params->n_candidates;
  /* Univariate scores cost O(decisions) per candidate and the rounds grow
   * fourfold; multivariate ones cost O(observations x decisions), so its
   * rounds stay the same size to bound the time of an ask. */
  guint growth = params->multivariate ? 1 : 4;
  for (guint round = 0; round < 4 && result == NULL; round++, draws *= growth) {
    g_autofree Scored *cands = g_new(Scored, draws);
    for (guint c = 0; c < draws; c++) {
      cands[c].g = draw_candidate(&model, rng);
      cands[c].s = score(&model, cands[c].g);
      if (isnan(cands[c].s))
        cands[c].s = -INFINITY;
      cands[c].draw = c;
    }
    qsort(cands, draws, sizeof(Scored), compare_scored);
    for (guint c = 0; c < draws; c++) {
      if (result == NULL && unseen(space, seen, cands[c].g))
        result = g_steal_pointer(&cands[c].g);
      else
        sieve_genotype_free(cands[c].g);
    }
  }
  model_free(&model);
  return result;
}
