/* sieve: the report page: one self-contained HTML file (inline CSS, SVG
 * and a few lines of script for sorting and the live view; nothing fetched
 * from elsewhere), readable with scripting off. */
#include <math.h>
#include <string.h>

#include "report/report-private.h"
#include "base/base-private.h"

/* Rows of the Pareto front's table and of the failures' table. */
#define MAX_FRONT_ROWS 50
#define MAX_REASONS 20
/* Decisions drawn as axes of the parallel coordinates. */
#define MAX_AXES 12

static const char style[] =
    "body{font:14px/1.45 system-ui,sans-serif;margin:0 auto;max-width:1100px;padding:0 16px 40px;color:#111}"
    "h1{font-size:22px;margin:18px 0 4px}h2{font-size:17px;margin:28px 0 6px;border-bottom:1px solid #ccc}"
    "table{border-collapse:collapse;margin:6px 0}td,th{padding:2px 8px;text-align:left;vertical-align:top}"
    "th{border-bottom:1px solid #999}tbody tr:nth-child(even){background:#f4f4f4}td.n{text-align:right}"
    "table.sortable th{cursor:pointer}dl.meta{display:grid;grid-template-columns:max-content auto;gap:1px 14px}"
    "dt{color:#555}dd{margin:0}.note{color:#555;font-size:13px}.plots{display:flex;flex-wrap:wrap;gap:10px}"
    "svg text{font:11px system-ui,sans-serif}.al{font-size:12px}.axis{stroke:#000;fill:none}"
    ".tick{stroke:#000}.grid{stroke:#e4e4e4}.pt{fill:#000;fill-opacity:.55}.pt.cached{fill:#fff;stroke:#0072B2;"
    "stroke-width:1.3;fill-opacity:1}.pt.failed{fill:#fff;stroke:#D55E00;stroke-width:1.5;fill-opacity:1}"
    ".pt.front{fill:#D55E00;fill-opacity:1}.pt.dominated{fill-opacity:.25}.best{fill:none;stroke:#E69F00;"
    "stroke-width:2}.frontline{fill:none;stroke:#D55E00;stroke-width:1.5}.rung{fill:none;stroke:#56B4E9;"
    "stroke-opacity:.6}.pc{fill:none;stroke-opacity:.55}.bar{fill:#0072B2}.bar.cached{fill:#56B4E9}"
    ".bar.screened{fill:#009E73}.bar.failed{fill:#D55E00}.bar.pruned{fill:#CC79A7}.bar.pending{fill:#999}"
    ".pt.pruned{fill:#fff;stroke:#CC79A7;stroke-width:1.5;fill-opacity:1}code,td.g{font:12px monospace;"
    "word-break:break-all}details summary{cursor:pointer}.k{display:inline-block;width:10px;height:10px;"
    "margin:0 4px 0 10px;border-radius:5px}#live{border:1px solid #0072B2;padding:6px 10px;margin-top:10px}";

/* Sorting the top table by a column (numbers by data-v), and the live
 * view's polling: small enough to read at a glance. */
static const char sort_script[] =
    "document.querySelectorAll('table.sortable th').forEach(function(th,c){th.addEventListener('click',function(){"
    "var b=th.closest('table').tBodies[0],r=Array.from(b.rows),d=th.dataset.d=th.dataset.d=='1'?'-1':'1';"
    "r.sort(function(x,y){var u=x.cells[c].dataset.v,v=y.cells[c].dataset.v;u=u===undefined?x.cells[c].textContent:"
    "+u;v=v===undefined?y.cells[c].textContent:+v;return (u<v?-1:u>v?1:0)*d;});r.forEach(function(x){b.appendChild(x)"
    "});});});";

static void
append_count(GString *out, const char *label, double value, const char *cls)
{
  g_string_append_printf(out, "<dt>%s</dt><dd%s>", label, cls ? cls : "");
  sieve__report_append_value(out, value);
  g_string_append(out, "</dd>");
}

static void
append_meta(GString *out, const char *label, const char *value)
{
  if (value == NULL)
    return;
  g_string_append_printf(out, "<dt>%s</dt><dd>", label);
  sieve__report_append_escaped(out, value);
  g_string_append(out, "</dd>");
}

static const char *
objective_name(const SieveReport *report)
{
  return report->n_objectives ? report->objectives[0].metric : "objective";
}

/* Text from the store (a metric's name, a stage) escaped for a printf
 * into markup: every name a study's config or evaluator chose is
 * untrusted text. (transfer full) */
static char *
escaped(const char *text)
{
  return g_markup_escape_text(text ? text : "", -1);
}

static const SieveTrial *
trial_at(const SieveReport *report, guint i)
{
  return report->trials->pdata[i];
}

/* ---- header ------------------------------------------------------------- */

static void
section_header(GString *out, const SieveReport *report)
{
  g_string_append(out, "<section id=\"header\"><h1>study ");
  sieve__report_append_escaped(out, report->name ? report->name : "(unnamed)");
  g_string_append(out, "</h1><dl class=\"meta\">");
  append_meta(out, "store", report->path);
  append_meta(out, "space", report->space_name);
  append_meta(out, "optimizer", report->optimizer_name);
  append_meta(out, "evaluator", report->evaluator_name);
  append_meta(out, "pipeline", report->pipeline);
  if (report->n_objectives > 0) {
    GString *text = g_string_new(NULL);
    for (guint k = 0; k < report->n_objectives; k++)
      g_string_append_printf(text, "%s%s (%s)", k ? ", " : "", report->objectives[k].metric,
                             report->objectives[k].maximize ? "maximize" : "minimize");
    append_meta(out, report->n_objectives > 1 ? "objectives" : "objective", text->str);
    g_string_free(text, TRUE);
  }
  /* The config stored is the last run's: a resume may have changed it. */
  append_meta(out, "budget (the last run's)", report->budget);
  append_meta(out, "seed", report->seed);
  append_meta(out, "created", report->created);
  /* The study's own time (a resumed study's pauses are not in it), then the
   * span the trials cover, which includes them. */
  g_string_append(out, "<dt>elapsed (s)</dt><dd id=\"elapsed\">");
  sieve__report_append_value(out, report->elapsed_s);
  g_string_append(out, "</dd><dt>wall span, first start to last finish (s)</dt><dd id=\"wall-span\">");
  sieve__report_append_value(out, report->wall_s);
  g_string_append(out, "</dd><dt>evaluation time (s)</dt><dd id=\"evaluation-time\">");
  sieve__report_append_value(out, report->evaluation_s);
  g_string_append(out, "</dd>");
  append_count(out, "trials", report->trials->len, " id=\"count-trials\"");
  static const char *const names[] = {"pending", "ok", "failed", "screened", "cached", "pruned", "rejected"};
  for (guint s = 0; s < G_N_ELEMENTS(names); s++) {
    g_autofree char *attr = g_strdup_printf(" id=\"count-%s\"", names[s]);
    append_count(out, names[s], report->counts[s], attr);
  }
  if (report->best >= 0) {
    g_autofree char *metric = escaped(report->objectives[0].metric);
    g_string_append_printf(out, "<dt>best %s</dt><dd id=\"best\" data-trial=\"%u\">",
                           metric, trial_at(report, report->best)->number >= 0
                                                              ? (guint) trial_at(report, report->best)->number : 0);
    sieve__report_append_value(out, report->objective[report->best]);
    g_string_append_printf(out, " (trial %" G_GINT64_FORMAT ")</dd>", trial_at(report, report->best)->number);
  }
  g_string_append(out, "</dl>");
  if (report->space_note != NULL) {
    g_string_append(out, "<p class=\"note\">");
    sieve__report_append_escaped(out, report->space_note);
    g_string_append(out, "</p>");
  }
  g_string_append(out, "</section>\n");
}

/* ---- the funnel --------------------------------------------------------- */

static void
section_funnel(GString *out, const SieveReport *report)
{
  guint n = report->trials->len;
  const guint *c = report->counts;
  struct {
    const char *label, *cls;
    guint count;
  } stages[] = {
      {"proposals", "", n},
      {"answered by dedupe", "cached", c[SIEVE_STATUS_CACHED]},
      {"rejected by a constraint", "screened", c[SIEVE_STATUS_REJECTED]},
      {"screened out", "screened", c[SIEVE_STATUS_SCREENED]},
      /* A pruned trial counts as an evaluation (its time was spent until
       * the pruner stopped it), as `sieve run`'s summary counts it. */
      {"evaluated", "", c[SIEVE_STATUS_OK] + c[SIEVE_STATUS_FAILED] + c[SIEVE_STATUS_PRUNED]},
      {"failed", "failed", c[SIEVE_STATUS_FAILED]},
      {"pruned", "pruned", c[SIEVE_STATUS_PRUNED]},
      {"pending", "pending", c[SIEVE_STATUS_PENDING]},
  };
  g_string_append(out, "<section id=\"funnel\"><h2>The sieve: where the proposals went</h2>\n");
  double width = 640, row = 26, label = 150;
  g_string_append_printf(out, "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"plot\" id=\"funnel-plot\" "
                              "width=\"%g\" height=\"%g\" role=\"img\"><title>proposals by outcome</title>\n",
                         width, row * G_N_ELEMENTS(stages) + 8);
  for (guint s = 0; s < G_N_ELEMENTS(stages); s++) {
    double share = n ? (double) stages[s].count / n : 0;
    double y = 4 + s * row;
    g_string_append_printf(out, "<text x=\"%g\" y=\"%g\" text-anchor=\"end\">%s</text>", label - 8, y + 15,
                           stages[s].label);
    g_string_append_printf(out, "<rect class=\"bar %s\" data-count=\"%u\" x=\"%g\" y=\"%g\" width=\"%.1f\" "
                                "height=\"%g\"><title>%s: %u</title></rect>",
                           stages[s].cls, stages[s].count, label, y, MAX(share * (width - label - 110), 0.5), row - 6,
                           stages[s].label, stages[s].count);
    g_string_append_printf(out, "<text x=\"%.1f\" y=\"%g\">%u (%.1f%%)</text>\n",
                           label + MAX(share * (width - label - 110), 0.5) + 6, y + 15, stages[s].count, 100 * share);
  }
  g_string_append(out, "</svg>\n<p>");
  if (c[SIEVE_STATUS_CACHED] > 0) {
    g_string_append_printf(out, "Dedupe answered %u proposals from the cache: about ", c[SIEVE_STATUS_CACHED]);
    sieve__report_append_value(out, report->saved_s);
    g_string_append(out, " s of evaluation saved (cache hits times the mean evaluation time, ");
    sieve__report_append_value(out, report->mean_ok_s);
    g_string_append(out, " s). ");
  }
  if (report->distinct > 0)
    g_string_append_printf(out, "%u distinct hashes among the evaluated. ", report->distinct);
  g_string_append(out, "Shares are of all proposals.</p></section>\n");
}

/* ---- thinning ----------------------------------------------------------- */

/* Keeps every candidate when there are at most cap, else every k-th
 * (k = ceil(len / cap)) and every special one; the kept are marked in keep.
 * Returns k (1 when nothing was left out). */
static guint
thin(const GArray *candidates, const gboolean *special, guint cap, gboolean *keep)
{
  guint len = candidates->len;
  guint k = len <= cap ? 1 : (len + cap - 1) / cap;
  for (guint r = 0; r < len; r++)
    keep[r] = r % k == 0 || (special && special[r]);
  return k;
}

static guint
count_kept(const gboolean *keep, guint n)
{
  guint kept = 0;
  for (guint r = 0; r < n; r++)
    kept += keep[r];
  return kept;
}

static void
thinned_note(GString *out, guint kept, guint total, guint k, const char *what, const char *also)
{
  if (k <= 1)
    return;
  g_string_append_printf(out, "<p class=\"note thinned\">Showing %u of %u %s: every %u-th%s%s (more than %u points "
                              "are thinned so that the page stays small and fast).</p>\n",
                         kept, total, what, k, also ? ", and every " : "", also ? also : "", SIEVE_REPORT_MAX_POINTS);
}

/* ---- optimization history ------------------------------------------------ */

/* The value trial i is drawn at: the objective of an ok or cached trial;
 * for a pruned one its last reported value, stored as the objective's
 * metric, at the step (and fidelity) it reached.  A pruned value is drawn
 * apart and never joins the best so far (it is never the incumbent). */
static double
history_value(const SieveReport *report, guint i)
{
  if (trial_at(report, i)->status == SIEVE_STATUS_PRUNED && report->n_objectives > 0)
    return sieve__report_metric(report, i, report->objectives[0].metric);
  return report->objective[i];
}

static void
history_plot(GString *out, const SieveReport *report, const GArray *shown, const gboolean *keep, gboolean by_time)
{
  const SieveReportObjective *o = &report->objectives[0];
  guint n = shown->len;
  g_autofree double *xs = g_new(double, n + 1);
  g_autofree double *ys = g_new(double, n + 1);
  for (guint r = 0; r < n; r++) {
    guint i = g_array_index(shown, guint, r);
    const SieveTrial *t = trial_at(report, i);
    xs[r] = by_time ? t->finished - report->t0 : (double) t->number;
    ys[r] = history_value(report, i);
  }
  SieveSvgPlot plot = {.width = 520, .height = 320};
  sieve__svg_range(xs, n, 1, &plot.x0, &plot.x1);
  sieve__svg_range(ys, n, 1, &plot.y0, &plot.y1);
  g_autofree char *y_label = g_strdup_printf("%s (%s)", o->metric, o->maximize ? "higher is better" : "lower is better");
  sieve__svg_begin(out, &plot, by_time ? "history-time" : "history-trial",
                   by_time ? "objective against time" : "objective against trial number",
                   by_time ? "time since the study started (s)" : "trial number", y_label);
  /* The incumbent over the ranked trials in the order they finished (the best
   * at the highest fidelity reached, as the engine keeps it): a step line
   * with a corner at each change (exact at any study size). */
  GArray *bx = g_array_new(FALSE, FALSE, sizeof(double)), *by = g_array_new(FALSE, FALSE, sizeof(double));
  double best = NAN, best_f = NAN, last_x = NAN;
  for (guint r = 0; r < n; r++) {
    guint i = g_array_index(shown, guint, r);
    if (!sieve_trial_is_ranked(trial_at(report, i)) || !isfinite(ys[r]) || !isfinite(xs[r]))
      continue;
    last_x = xs[r];
    if (sieve_incumbent_better(trial_at(report, i)->fidelity, ys[r], best_f, best, o->maximize)) {
      best_f = trial_at(report, i)->fidelity;
      if (!isnan(best)) {
        g_array_append_val(bx, xs[r]);
        g_array_append_val(by, best);
      }
      best = ys[r];
      g_array_append_val(bx, xs[r]);
      g_array_append_val(by, best);
    }
  }
  if (bx->len > 0) {
    g_array_append_val(bx, last_x);
    g_array_append_val(by, best);
    sieve__svg_line(out, &plot, (double *) bx->data, (double *) by->data, bx->len, "best");
  }
  g_array_unref(bx);
  g_array_unref(by);
  for (guint r = 0; r < n; r++) {
    if (!keep[r] || !isfinite(xs[r]))
      continue;
    const SieveTrial *t = trial_at(report, g_array_index(shown, guint, r));
    g_autoptr(GString) tip = g_string_new(NULL);
    g_string_printf(tip, "trial %" G_GINT64_FORMAT " %s: ", t->number, sieve_status_to_string(t->status));
    if (t->status == SIEVE_STATUS_FAILED) {
      g_string_append(tip, t->reason ? t->reason : "failed");
      /* Failed trials have no value: drawn on the bottom edge. */
      sieve__svg_point(out, &plot, xs[r], plot.y0, "failed", tip->str);
    } else if (t->status == SIEVE_STATUS_PRUNED) {
      sieve__report_append_value(tip, ys[r]);
      if (isfinite(t->fidelity)) {
        g_string_append(tip, " at fidelity ");
        sieve__report_append_value(tip, t->fidelity);
      }
      g_string_append_printf(tip, " (%s)\n%s", t->reason ? t->reason : "pruned", t->genotype);
      sieve__svg_point(out, &plot, xs[r], ys[r], "pruned", tip->str);
    } else {
      sieve__report_append_value(tip, ys[r]);
      if (t->cached_from >= 0)
        g_string_append_printf(tip, " (result of trial %" G_GINT64_FORMAT ")", t->cached_from);
      g_string_append_printf(tip, "\n%s", t->genotype);
      sieve__svg_point(out, &plot, xs[r], ys[r], t->status == SIEVE_STATUS_CACHED ? "cached" : "ok", tip->str);
    }
  }
  sieve__svg_end(out);
}

static void
section_history(GString *out, const SieveReport *report)
{
  /* The trials with something to draw: a value (ok, cached with the
   * reused value, or pruned with its last value) or a failure; in the order
   * they finished for the time plot's best-so-far line, which trial order
   * also is for one worker. */
  g_autoptr(GArray) shown = g_array_new(FALSE, FALSE, sizeof(guint));
  for (guint i = 0; i < report->trials->len; i++) {
    const SieveTrial *t = trial_at(report, i);
    if (t->status == SIEVE_STATUS_FAILED || isfinite(history_value(report, i)))
      g_array_append_val(shown, i);
  }
  if (shown->len == 0 || report->n_objectives == 0)
    return;
  /* Changes of the incumbent are always drawn. */
  g_autofree gboolean *special = g_new0(gboolean, shown->len);
  const SieveReportObjective *o = &report->objectives[0];
  double best = NAN, best_f = NAN;
  for (guint r = 0; r < shown->len; r++) {
    guint i = g_array_index(shown, guint, r);
    double v = report->objective[i];
    if (sieve_trial_is_ranked(trial_at(report, i)) && isfinite(v) &&
        sieve_incumbent_better(trial_at(report, i)->fidelity, v, best_f, best, o->maximize)) {
      best = v;
      best_f = trial_at(report, i)->fidelity;
      special[r] = TRUE;
    }
  }
  g_autofree gboolean *keep = g_new(gboolean, shown->len);
  guint k = thin(shown, special, SIEVE_REPORT_MAX_POINTS, keep);
  g_string_append(out, "<section id=\"history\"><h2>Optimization history</h2>\n<p class=\"legend\">"
                       "<span class=\"k\" style=\"background:#000\"></span>ok "
                       "<span class=\"k\" style=\"border:1.5px solid #0072B2\"></span>answered from the cache "
                       "<span class=\"k\" style=\"border:1.5px solid #D55E00\"></span>failed (on the bottom edge) ");
  if (report->counts[SIEVE_STATUS_PRUNED] > 0)
    g_string_append(out, "<span class=\"k\" style=\"border:1.5px solid #CC79A7\"></span>pruned (its last value, at "
                         "the step it was stopped; never the best) ");
  g_string_append(out, "<span class=\"k\" style=\"background:#E69F00;border-radius:0;height:3px\"></span>best so far"
                       "</p>\n");
  if (report->by_fidelity)
    g_string_append(out, "<p class=\"note\">The trials ran at several fidelities: the best so far is the best at the "
                         "highest fidelity reached so far (a value at a lower rung is no rival), as `sieve run` keeps "
                         "it.</p>\n");
  thinned_note(out, count_kept(keep, shown->len), shown->len, k, "trials", "trial that improved the best so far");
  g_string_append(out, "<div class=\"plots\">\n");
  history_plot(out, report, shown, keep, FALSE);
  if (isfinite(report->t0))
    history_plot(out, report, shown, keep, TRUE);
  g_string_append(out, "</div>");
  g_autofree char *metric = escaped(o->metric);
  guint infinite = 0;
  for (guint i = 0; i < report->trials->len; i++)
    infinite += isinf(history_value(report, i));
  if (infinite > 0)
    g_string_append_printf(out, "<p class=\"note\" id=\"off-scale\">%u trials with an infinite %s are off the scale "
                                "and not drawn.</p>",
                           infinite, metric);
  if (report->counts[SIEVE_STATUS_SCREENED] > 0)
    g_string_append_printf(out, "<p class=\"note\">%u screened-out proposals have no %s and are not drawn.</p>",
                           report->counts[SIEVE_STATUS_SCREENED], metric);
  g_string_append(out, "</section>\n");
}

/* ---- the Pareto front ---------------------------------------------------- */

static void
section_pareto(GString *out, const SieveReport *report)
{
  if (report->n_objectives < 2 || report->pareto_points->len == 0)
    return;
  const SieveReportObjective *a = &report->objectives[0], *b = &report->objectives[1];
  guint n = report->pareto_points->len;
  g_autofree double *xy = g_new(double, 2 * n);
  g_autofree gboolean *front = g_new0(gboolean, n);
  g_autoptr(GHashTable) on_front = g_hash_table_new(NULL, NULL);
  for (guint f = 0; f < report->pareto_front->len; f++)
    g_hash_table_add(on_front, GUINT_TO_POINTER(g_array_index(report->pareto_front, guint, f) + 1));
  for (guint p = 0; p < n; p++) {
    guint i = g_array_index(report->pareto_points, guint, p);
    xy[2 * p] = sieve__report_metric(report, i, a->metric);
    xy[2 * p + 1] = sieve__report_metric(report, i, b->metric);
    front[p] = g_hash_table_contains(on_front, GUINT_TO_POINTER(i + 1));
  }
  g_autofree gboolean *keep = g_new(gboolean, n);
  guint k = thin(report->pareto_points, front, SIEVE_REPORT_MAX_POINTS, keep);
  g_autofree char *a_name = escaped(a->metric), *b_name = escaped(b->metric);
  g_string_append_printf(out, "<section id=\"pareto\"><h2>Pareto front</h2>\n<p>%u non-dominated of %u evaluated "
                              "trials over %s (%s) and %s (%s), highlighted; dominated trials are faded.</p>\n",
                         report->pareto_front->len, n, a_name, a->maximize ? "maximize" : "minimize", b_name,
                         b->maximize ? "maximize" : "minimize");
  double top = trial_at(report, g_array_index(report->pareto_points, guint, 0))->fidelity;
  if (report->by_fidelity)
    g_string_append_printf(out, "<p class=\"note\">The trials ran at several fidelities: the front is over the %u at "
                                "the highest reached (%g); a value at a lower rung is no rival.</p>\n",
                           n, isnan(top) ? INFINITY : top);
  thinned_note(out, count_kept(keep, n), n, k, "trials", "trial on the front");
  SieveSvgPlot plot = {.width = 620, .height = 380};
  sieve__svg_range(xy, n, 2, &plot.x0, &plot.x1);
  sieve__svg_range(xy + 1, n, 2, &plot.y0, &plot.y1);
  sieve__svg_begin(out, &plot, "pareto-plot", "Pareto front", a->metric, b->metric);
  guint nf = report->pareto_front->len;
  g_autofree double *fx = g_new(double, nf + 1);
  g_autofree double *fy = g_new(double, nf + 1);
  for (guint f = 0; f < nf; f++) {
    guint i = g_array_index(report->pareto_front, guint, f);
    fx[f] = sieve__report_metric(report, i, a->metric);
    fy[f] = sieve__report_metric(report, i, b->metric);
  }
  sieve__svg_line(out, &plot, fx, fy, nf, "frontline");
  for (guint p = 0; p < n; p++) {
    if (!keep[p])
      continue;
    g_autoptr(GString) tip = g_string_new(NULL);
    const SieveTrial *t = trial_at(report, g_array_index(report->pareto_points, guint, p));
    g_string_printf(tip, "trial %" G_GINT64_FORMAT ": %s ", t->number, a->metric);
    sieve__report_append_value(tip, xy[2 * p]);
    g_string_append_printf(tip, ", %s ", b->metric);
    sieve__report_append_value(tip, xy[2 * p + 1]);
    g_string_append_printf(tip, "\n%s", t->genotype);
    sieve__svg_point(out, &plot, xy[2 * p], xy[2 * p + 1], front[p] ? "front" : "dominated", tip->str);
  }
  sieve__svg_end(out);
  g_string_append_printf(out, "<table id=\"pareto-table\"><thead><tr><th>trial</th><th>%s</th><th>%s</th>"
                              "<th>genotype</th></tr></thead><tbody>\n", a_name, b_name);
  for (guint f = 0; f < nf && f < MAX_FRONT_ROWS; f++) {
    guint i = g_array_index(report->pareto_front, guint, f);
    g_string_append_printf(out, "<tr><td class=\"n\">%" G_GINT64_FORMAT "</td><td class=\"n\">",
                           trial_at(report, i)->number);
    sieve__report_append_value(out, fx[f]);
    g_string_append(out, "</td><td class=\"n\">");
    sieve__report_append_value(out, fy[f]);
    g_string_append(out, "</td><td class=\"g\">");
    sieve__report_append_escaped(out, trial_at(report, i)->genotype);
    g_string_append(out, "</td></tr>\n");
  }
  g_string_append(out, "</tbody></table>\n");
  if (nf > MAX_FRONT_ROWS)
    g_string_append_printf(out, "<p class=\"note\">... and %u more (sieve export lists every trial)</p>\n",
                           nf - MAX_FRONT_ROWS);
  g_string_append(out, "</section>\n");
}

/* ---- fidelity ------------------------------------------------------------ */

static void
section_fidelity(GString *out, const SieveReport *report)
{
  g_autoptr(GArray) shown = g_array_new(FALSE, FALSE, sizeof(guint));
  g_autoptr(GHashTable) levels = g_hash_table_new(g_double_hash, g_double_equal);
  g_autoptr(GArray) level_values = g_array_new(FALSE, FALSE, sizeof(double));
  for (guint i = 0; i < report->trials->len; i++) {
    const SieveTrial *t = trial_at(report, i);
    if (!sieve_trial_is_ranked(t) || !isfinite(t->fidelity) || !isfinite(report->objective[i]))
      continue;
    g_array_append_val(shown, i);
    g_array_append_val(level_values, t->fidelity);
  }
  for (guint r = 0; r < level_values->len; r++)
    g_hash_table_add(levels, &g_array_index(level_values, double, r));
  if (g_hash_table_size(levels) < 2)
    return;
  guint n = shown->len;
  const SieveReportObjective *o = &report->objectives[0];
  /* A configuration's rungs: its trials by genotype, in fidelity order. */
  g_autoptr(GHashTable) configs = g_hash_table_new_full(g_str_hash, g_str_equal, NULL, (GDestroyNotify) g_array_unref);
  g_autoptr(GPtrArray) order = g_ptr_array_new();
  for (guint r = 0; r < n; r++) {
    const SieveTrial *t = trial_at(report, g_array_index(shown, guint, r));
    GArray *rungs = g_hash_table_lookup(configs, t->genotype);
    if (rungs == NULL) {
      rungs = g_array_new(FALSE, FALSE, sizeof(guint));
      g_hash_table_insert(configs, t->genotype, rungs);
      g_ptr_array_add(order, rungs);
    }
    g_array_append_val(rungs, r);
  }
  g_autofree double *xs = g_new(double, n);
  g_autofree double *ys = g_new(double, n);
  for (guint r = 0; r < n; r++) {
    guint i = g_array_index(shown, guint, r);
    xs[r] = trial_at(report, i)->fidelity;
    ys[r] = report->objective[i];
  }
  g_autofree gboolean *keep = g_new(gboolean, n);
  guint k = thin(shown, NULL, SIEVE_REPORT_MAX_POINTS, keep);
  guint multi = 0;
  for (guint c = 0; c < order->len; c++)
    multi += ((GArray *) order->pdata[c])->len >= 2;
  guint line_step = multi <= SIEVE_REPORT_MAX_LINES ? 1 : (multi + SIEVE_REPORT_MAX_LINES - 1) / SIEVE_REPORT_MAX_LINES;
  g_string_append_printf(out, "<section id=\"fidelity\"><h2>Objective against fidelity</h2>\n<p>%u evaluations at "
                              "%u fidelities; lines join the rungs of each of the %u configurations evaluated at "
                              "more than one%s.</p>\n",
                         n, g_hash_table_size(levels), multi,
                         line_step > 1 ? " (a sample of them: every k-th, past " G_STRINGIFY(SIEVE_REPORT_MAX_LINES) ")" : "");
  thinned_note(out, count_kept(keep, n), n, k, "evaluations", NULL);
  SieveSvgPlot plot = {.width = 620, .height = 360};
  sieve__svg_range(xs, n, 1, &plot.x0, &plot.x1);
  sieve__svg_range(ys, n, 1, &plot.y0, &plot.y1);
  sieve__svg_begin(out, &plot, "fidelity-plot", "objective against fidelity", "fidelity (the evaluator's budget unit)",
                   o->metric);
  g_autofree double *lx = g_new(double, n);
  g_autofree double *ly = g_new(double, n);
  for (guint c = 0, m = 0; c < order->len; c++) {
    GArray *rungs = order->pdata[c];
    if (rungs->len < 2 || m++ % line_step != 0)
      continue;
    for (guint j = 0; j < rungs->len; j++) {
      lx[j] = xs[g_array_index(rungs, guint, j)];
      ly[j] = ys[g_array_index(rungs, guint, j)];
    }
    /* Rungs are evaluated in increasing fidelity; sort anyway (insertion). */
    for (guint j = 1; j < rungs->len; j++)
      for (guint q = j; q > 0 && lx[q - 1] > lx[q]; q--) {
        double tx = lx[q], ty = ly[q];
        lx[q] = lx[q - 1];
        ly[q] = ly[q - 1];
        lx[q - 1] = tx;
        ly[q - 1] = ty;
      }
    sieve__svg_line(out, &plot, lx, ly, rungs->len, "rung");
  }
  for (guint r = 0; r < n; r++) {
    if (!keep[r])
      continue;
    const SieveTrial *t = trial_at(report, g_array_index(shown, guint, r));
    g_autoptr(GString) tip = g_string_new(NULL);
    g_string_printf(tip, "trial %" G_GINT64_FORMAT " at fidelity ", t->number);
    sieve__report_append_value(tip, xs[r]);
    g_string_append(tip, ": ");
    sieve__report_append_value(tip, ys[r]);
    sieve__svg_point(out, &plot, xs[r], ys[r], "ok", tip->str);
  }
  sieve__svg_end(out);
  g_string_append(out, "</section>\n");
}

/* ---- proxies ------------------------------------------------------------- */

static void
section_proxies(GString *out, const SieveReport *report)
{
  if (report->proxies->len == 0)
    return;
  g_autofree char *objective = escaped(objective_name(report));
  g_string_append_printf(out, "<section id=\"proxies\"><h2>Zero-cost proxies against %s</h2>\n<p>Each proxy stored "
                              "in this study (the screen stage's scores, or the proxy evaluator's), against %s of the "
                              "evaluated trials that have both: Spearman's rank correlation ρ and Kendall's τ-b, over "
                              "n pairs.</p>\n<table id=\"proxy-table\"><thead><tr><th>proxy</th><th>n</th>"
                              "<th>Spearman ρ</th><th>Kendall τ</th></tr></thead><tbody>\n",
                         objective, objective);
  for (guint p = 0; p < report->proxies->len; p++) {
    const SieveReportProxy *proxy = &g_array_index(report->proxies, SieveReportProxy, p);
    g_string_append(out, "<tr><td>");
    sieve__report_append_escaped(out, proxy->name);
    g_string_append_printf(out, "</td><td class=\"n\">%u</td><td class=\"n spearman\">", proxy->n);
    sieve__report_append_value(out, proxy->spearman);
    g_string_append(out, "</td><td class=\"n kendall\">");
    sieve__report_append_value(out, proxy->kendall);
    g_string_append(out, "</td></tr>\n");
  }
  g_string_append(out, "</tbody></table>\n<div class=\"plots\">\n");
  g_autoptr(GArray) rows = g_array_new(FALSE, FALSE, sizeof(guint));
  for (guint p = 0; p < report->proxies->len; p++) {
    const SieveReportProxy *proxy = &g_array_index(report->proxies, SieveReportProxy, p);
    if (proxy->n == 0)
      continue;
    g_array_set_size(rows, 0);
    for (guint i = 0; i < report->trials->len; i++)
      if (report->ranked_mask[i] && isfinite(report->objective[i]) &&
          isfinite(sieve__report_metric(report, i, proxy->name)))
        g_array_append_val(rows, i);
    guint n = rows->len;
    g_autofree double *xs = g_new(double, n);
    g_autofree double *ys = g_new(double, n);
    for (guint r = 0; r < n; r++) {
      guint i = g_array_index(rows, guint, r);
      xs[r] = sieve__report_metric(report, i, proxy->name);
      ys[r] = report->objective[i];
    }
    g_autofree gboolean *keep = g_new(gboolean, n);
    guint k = thin(rows, NULL, SIEVE_REPORT_MAX_POINTS, keep);
    g_string_append(out, "<figure>");
    SieveSvgPlot plot = {.width = 340, .height = 260};
    sieve__svg_range(xs, n, 1, &plot.x0, &plot.x1);
    sieve__svg_range(ys, n, 1, &plot.y0, &plot.y1);
    g_autofree char *id = g_strdup_printf("proxy-%s", proxy->name);
    g_autofree char *x_label = g_strdup_printf("%s (score)", proxy->name);
    sieve__svg_begin(out, &plot, id, id, x_label, objective_name(report));
    for (guint r = 0; r < n; r++)
      if (keep[r]) {
        g_autofree char *tip = g_strdup_printf("trial %" G_GINT64_FORMAT, trial_at(report, g_array_index(rows, guint, r))->number);
        sieve__svg_point(out, &plot, xs[r], ys[r], "ok", tip);
      }
    sieve__svg_end(out);
    g_string_append(out, "<figcaption>");
    sieve__report_append_escaped(out, proxy->name);
    g_string_append(out, ": ρ = ");
    sieve__report_append_value(out, proxy->spearman);
    g_string_append(out, ", τ = ");
    sieve__report_append_value(out, proxy->kendall);
    g_string_append_printf(out, ", n = %u", n);
    if (k > 1)
      g_string_append_printf(out, " (%u drawn: every %u-th)", count_kept(keep, n), k);
    g_string_append(out, "</figcaption></figure>\n");
  }
  g_string_append(out, "</div></section>\n");
}

/* ---- decision importance ------------------------------------------------- */

static void
parallel_coordinates(GString *out, const SieveReport *report)
{
  guint d = MIN(report->n_decisions, MAX_AXES);
  g_autoptr(GArray) rows = g_array_new(FALSE, FALSE, sizeof(guint));
  for (guint i = 0; i < report->trials->len; i++)
    if (report->ranked_mask[i] && isfinite(report->objective[i]))
      g_array_append_val(rows, i);
  guint n = rows->len;
  const SieveReportObjective *o = &report->objectives[0];
  g_autofree gboolean *keep = g_new(gboolean, n + 1);
  guint k = thin(rows, NULL, SIEVE_REPORT_MAX_LINES, keep);
  double lo = INFINITY, hi = -INFINITY;
  for (guint r = 0; r < n; r++) {
    double v = report->objective[g_array_index(rows, guint, r)];
    lo = MIN(lo, v);
    hi = MAX(hi, v);
  }
  double left = 40, right = 90, top = 30, bottom = 40, height = 300;
  double width = left + right + 110.0 * d;
  double span = height - top - bottom;
  g_autofree char *thinned = k > 1 ? g_strdup_printf(" drawn of %u: every %u-th", n, k) : g_strdup("");
  g_autofree char *metric = escaped(o->metric);
  g_string_append_printf(out, "<p>Parallel coordinates: one line per evaluated %s (%u of them%s), one axis per decision "
                              "(its range, choices in order from the bottom) and %s on the right; the colour goes "
                              "from dark blue (worst) to yellow (best).</p>\n",
                         report->by_fidelity ? "configuration, at the highest fidelity it reached" : "trial",
                         count_kept(keep, n), thinned, metric);
  g_string_append_printf(out, "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"plot\" id=\"parallel-plot\" "
                              "width=\"%g\" height=\"%g\" role=\"img\"><title>parallel coordinates</title>\n",
                         width, height);
  g_autofree double *px = g_new(double, d + 1);
  g_autofree double *py = g_new(double, d + 1);
  for (guint r = 0; r < n; r++) {
    if (!keep[r])
      continue;
    guint i = g_array_index(rows, guint, r);
    for (guint a = 0; a <= d; a++) {
      double t;
      if (a == d) {
        t = sieve__report_unit(report->objective[i], lo, hi);
      } else {
        const SieveDecision *decision = sieve_space_decision(report->space, a);
        double v = report->decisions[(gsize) i * report->n_decisions + a];
        if (!isfinite(v))
          t = -0.06; /* inactive: just below the axis */
        else if (decision->kind == SIEVE_DECISION_CATEGORICAL)
          t = decision->n_choices > 1 ? v / (decision->n_choices - 1) : 0.5;
        else if (decision->log && decision->low > 0)
          t = (log(v) - log(decision->low)) / (log(decision->high) - log(decision->low));
        else
          t = decision->high > decision->low ? (v - decision->low) / (decision->high - decision->low) : 0.5;
      }
      px[a] = left + 110.0 * a;
      py[a] = top + span * (1 - t);
    }
    double quality = hi > lo ? sieve__report_unit(report->objective[i], lo, hi) : 1;
    char colour[8];
    sieve__report_ramp(o->maximize ? quality : 1 - quality, colour);
    g_string_append_printf(out, "<polyline class=\"pc\" stroke=\"%s\" points=\"", colour);
    for (guint a = 0; a <= d; a++)
      g_string_append_printf(out, "%s%.1f,%.1f", a ? " " : "", px[a], py[a]);
    g_string_append(out, "\"/>\n");
  }
  for (guint a = 0; a <= d; a++) {
    double x = left + 110.0 * a;
    g_string_append_printf(out, "<path class=\"axis\" d=\"M%g %gV%g\"/><text x=\"%g\" y=\"%g\" "
                                "text-anchor=\"middle\" class=\"al\">",
                           x, top, top + span, x, top - 10);
    sieve__report_append_escaped(out, a == d ? o->metric : sieve_space_decision(report->space, a)->name);
    g_string_append(out, "</text>");
    if (a == d) {
      g_string_append_printf(out, "<text x=\"%g\" y=\"%g\">", x + 4, top + 4);
      sieve__report_append_value(out, hi);
      g_string_append_printf(out, "</text><text x=\"%g\" y=\"%g\">", x + 4, top + span);
      sieve__report_append_value(out, lo);
      g_string_append(out, "</text>");
    }
    g_string_append(out, "\n");
  }
  g_string_append(out, "</svg>\n");
  if (report->n_decisions > d)
    g_string_append_printf(out, "<p class=\"note\">The first %u of %u decisions are drawn.</p>\n", d,
                           report->n_decisions);
}

static void
section_importance(GString *out, const SieveReport *report)
{
  if (report->importance->len == 0)
    return;
  g_autofree char *objective = escaped(objective_name(report));
  g_string_append_printf(out, "<section id=\"importance\"><h2>Decision importance</h2>\n<p>Method: for each "
                              "decision separately, the share of the variance of %s over the evaluated %s that "
                              "its levels explain (η², the between-group sum of squares over the total, of a one-way "
                              "analysis of variance; a number decision is cut into up to 8 quantile bins, an inactive "
                              "one is a level of its own). It is a main-effect estimate, simpler than fANOVA "
                              "(Hutter et al. 2014): interactions are not separated, and because an optimizer "
                              "samples decisions together the shares need not sum to 1.</p>\n",
                         objective,
                         report->by_fidelity ? "configurations (each at the highest fidelity it reached)" : "trials");
  double row = 22, label = 170, width = 620;
  g_string_append_printf(out, "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"plot\" id=\"importance-plot\" "
                              "width=\"%g\" height=\"%g\" role=\"img\"><title>decision importance (η²)</title>\n",
                         width, row * report->importance->len + 28);
  for (guint r = 0; r < report->importance->len; r++) {
    const SieveReportImportance *imp = &g_array_index(report->importance, SieveReportImportance, r);
    double y = 4 + r * row, v = isnan(imp->eta2) ? 0 : imp->eta2;
    g_string_append_printf(out, "<text x=\"%g\" y=\"%g\" text-anchor=\"end\">", label - 8, y + 14);
    sieve__report_append_escaped(out, sieve_space_decision(report->space, imp->decision)->name);
    g_string_append_printf(out, "</text><rect class=\"bar\" x=\"%g\" y=\"%g\" width=\"%.1f\" height=\"%g\">"
                                "<title>η² ",
                           label, y, MAX(v * (width - label - 60), 0.5), row - 6);
    sieve__report_append_value(out, imp->eta2);
    g_string_append_printf(out, " over %u levels</title></rect><text x=\"%.1f\" y=\"%g\">", imp->groups,
                           label + MAX(v * (width - label - 60), 0.5) + 5, y + 14);
    sieve__report_append_value(out, imp->eta2);
    g_string_append(out, "</text>\n");
  }
  g_string_append_printf(out, "<text x=\"%g\" y=\"%g\" class=\"al\">share of the variance of ",
                         label, row * report->importance->len + 22);
  g_string_append(out, objective);
  g_string_append(out, " explained (η², 0 to 1)</text></svg>\n");
  parallel_coordinates(out, report);
  g_string_append(out, "</section>\n");
}

/* ---- the top trials ------------------------------------------------------ */

static void
cell_value(GString *out, double v)
{
  if (isfinite(v)) {
    char buf[G_ASCII_DTOSTR_BUF_SIZE];
    g_string_append_printf(out, "<td class=\"n\" data-v=\"%s\">", g_ascii_dtostr(buf, sizeof buf, v));
  } else {
    g_string_append(out, "<td class=\"n\" data-v=\"-1e308\">");
  }
  sieve__report_append_value(out, v);
  g_string_append(out, "</td>");
}

static void
section_top(GString *out, const SieveReport *report)
{
  const GArray *ranked = report->ranked;
  if (ranked->len == 0)
    return;
  guint n = MIN(report->top, ranked->len);
  /* Columns: the objectives, then other metrics of the best trial (up to
   * six in all), as the summary `sieve run` prints. */
  g_autoptr(GPtrArray) columns = g_ptr_array_new();
  for (guint k = 0; k < report->n_objectives; k++)
    g_ptr_array_add(columns, report->objectives[k].metric);
  const SieveResult *first = trial_at(report, g_array_index(ranked, guint, 0))->result;
  for (guint m = 0; m < sieve_result_n_metrics(first) && columns->len < 6; m++) {
    const char *name = sieve_result_metric_name(first, m);
    gboolean listed = FALSE;
    for (guint c = 0; c < columns->len && !listed; c++)
      listed = strcmp(columns->pdata[c], name) == 0;
    if (!listed && strcmp(name, SIEVE_SCREEN_SCORE) != 0)
      g_ptr_array_add(columns, (gpointer) name);
  }
  /* Cache hits each evaluated trial answered. */
  g_autoptr(GHashTable) hits = g_hash_table_new(g_int64_hash, g_int64_equal);
  for (guint i = 0; i < report->trials->len; i++) {
    const SieveTrial *t = trial_at(report, i);
    if (t->status == SIEVE_STATUS_CACHED && t->cached_from >= 0) {
      guint count = GPOINTER_TO_UINT(g_hash_table_lookup(hits, &t->cached_from));
      g_hash_table_insert(hits, (gpointer) &t->cached_from, GUINT_TO_POINTER(count + 1));
    }
  }
  g_autofree char *objective = escaped(objective_name(report));
  g_string_append_printf(out, "<section id=\"top\"><h2>Top %u %s by %s%s</h2>\n<p class=\"note\">Click a column "
                              "to sort; open a genotype to see its network.</p>\n<table id=\"top-table\" "
                              "class=\"sortable\"><thead><tr><th>rank</th><th>trial</th>",
                         n, report->by_fidelity ? "configurations" : "trials", objective,
                         report->by_fidelity ? " at the highest fidelity each reached (higher fidelity first)" : "");
  /* A metric named as one of the table's own columns is told apart, as
   * the CSV export names it metric.NAME. */
  static const char *const own[] = {"rank", "trial", "fidelity", "cost (s)", "cache hits", "screen score", "genotype"};
  for (guint c = 0; c < columns->len; c++) {
    gboolean clash = FALSE;
    for (guint k = 0; k < G_N_ELEMENTS(own); k++)
      clash = clash || strcmp(columns->pdata[c], own[k]) == 0;
    g_string_append(out, clash ? "<th>metric." : "<th>");
    sieve__report_append_escaped(out, columns->pdata[c]);
    g_string_append(out, "</th>");
  }
  g_string_append(out, "<th>fidelity</th><th>cost (s)</th><th>cache hits</th><th>screen score</th><th>genotype</th>"
                       "</tr></thead><tbody>\n");
  for (guint r = 0; r < n; r++) {
    guint i = g_array_index(ranked, guint, r);
    const SieveTrial *t = trial_at(report, i);
    g_string_append_printf(out, "<tr><td class=\"n\" data-v=\"%u\">%u</td><td class=\"n\" data-v=\"%" G_GINT64_FORMAT
                                "\">%" G_GINT64_FORMAT "</td>",
                           r + 1, r + 1, t->number, t->number);
    for (guint c = 0; c < columns->len; c++)
      cell_value(out, sieve__report_metric(report, i, columns->pdata[c]));
    cell_value(out, t->fidelity);
    cell_value(out, sieve_result_get_cost(t->result));
    guint h = GPOINTER_TO_UINT(g_hash_table_lookup(hits, &t->number));
    g_string_append_printf(out, "<td class=\"n\" data-v=\"%u\">%u</td>", h, h);
    cell_value(out, sieve__report_metric(report, i, SIEVE_SCREEN_SCORE));
    g_string_append(out, "<td class=\"g\"><details><summary>");
    sieve__report_append_escaped(out, t->genotype);
    g_string_append(out, "</summary>");
    sieve__report_network(out, report, i);
    g_string_append(out, "</details></td></tr>\n");
  }
  g_string_append(out, "</tbody></table></section>\n");
}

/* ---- failures ------------------------------------------------------------ */

typedef struct {
  const char *reason;
  guint count;
  gint64 first;
} Reason;

static gint
compare_reason(gconstpointer a, gconstpointer b)
{
  const Reason *x = a, *y = b;
  if (x->count != y->count)
    return x->count > y->count ? -1 : 1;
  return x->first < y->first ? -1 : 1;
}

static void
section_failures(GString *out, const SieveReport *report)
{
  if (report->counts[SIEVE_STATUS_FAILED] == 0)
    return;
  g_autoptr(GHashTable) index = g_hash_table_new(g_str_hash, g_str_equal);
  g_autoptr(GArray) reasons = g_array_new(FALSE, FALSE, sizeof(Reason));
  for (guint i = 0; i < report->trials->len; i++) {
    const SieveTrial *t = trial_at(report, i);
    if (t->status != SIEVE_STATUS_FAILED)
      continue;
    const char *reason = t->reason ? t->reason : "(no reason given)";
    gpointer at;
    if (g_hash_table_lookup_extended(index, reason, NULL, &at)) {
      g_array_index(reasons, Reason, GPOINTER_TO_UINT(at)).count++;
    } else {
      g_hash_table_insert(index, (gpointer) reason, GUINT_TO_POINTER(reasons->len));
      Reason r = {reason, 1, t->number};
      g_array_append_val(reasons, r);
    }
  }
  g_array_sort(reasons, compare_reason);
  guint failed = report->counts[SIEVE_STATUS_FAILED];
  g_string_append_printf(out, "<section id=\"failures\"><h2>Failed trials</h2>\n<p>%u evaluation%s failed, for "
                              "%u reason%s.</p><table id=\"failure-table\"><thead><tr><th>trials</th><th>first</th>"
                              "<th>reason</th></tr></thead><tbody>\n",
                         failed, failed == 1 ? "" : "s", reasons->len, reasons->len == 1 ? "" : "s");
  for (guint r = 0; r < reasons->len && r < MAX_REASONS; r++) {
    const Reason *reason = &g_array_index(reasons, Reason, r);
    g_string_append_printf(out, "<tr><td class=\"n\">%u</td><td class=\"n\">%" G_GINT64_FORMAT "</td><td>",
                           reason->count, reason->first);
    sieve__report_append_escaped(out, reason->reason);
    g_string_append(out, "</td></tr>\n");
  }
  g_string_append(out, "</tbody></table></section>\n");
}

/* ---- the live view ------------------------------------------------------- */

char *
sieve_report_progress_line(const SieveReport *report)
{
  const guint *c = report->counts;
  GString *line = g_string_new(NULL);
  g_string_append_printf(line, "[%u", c[SIEVE_STATUS_OK] + c[SIEVE_STATUS_FAILED] + c[SIEVE_STATUS_PRUNED]);
  if (report->budget_evaluations > 0)
    g_string_append_printf(line, "/%" G_GUINT64_FORMAT, report->budget_evaluations);
  g_string_append(line, "]");
  if (report->best >= 0) {
    g_string_append_printf(line, " best %s ", report->objectives[0].metric);
    sieve__report_append_value(line, report->objective[report->best]);
    g_string_append_printf(line, " (trial %" G_GINT64_FORMAT ")", trial_at(report, report->best)->number);
  }
  g_string_append_printf(line, ", %u failed, %u cached, %u screened, %u running", c[SIEVE_STATUS_FAILED],
                         c[SIEVE_STATUS_CACHED], c[SIEVE_STATUS_SCREENED], c[SIEVE_STATUS_PENDING]);
  if (c[SIEVE_STATUS_PRUNED] > 0)
    g_string_append_printf(line, ", %u pruned", c[SIEVE_STATUS_PRUNED]);
  if (c[SIEVE_STATUS_REJECTED] > 0)
    g_string_append_printf(line, ", %u rejected", c[SIEVE_STATUS_REJECTED]);
  return g_string_free(line, FALSE);
}

char *
sieve_report_status_json(const SieveReport *report)
{
  static const char *const names[] = {"pending", "ok", "failed", "screened", "cached", "pruned", "rejected"};
  GString *out = g_string_new("{\"trials\":");
  g_string_append_printf(out, "%u,\"finished\":%u,\"counts\":{", report->trials->len,
                         report->trials->len - report->counts[SIEVE_STATUS_PENDING]);
  for (guint s = 0; s < G_N_ELEMENTS(names); s++)
    g_string_append_printf(out, "%s\"%s\":%u", s ? "," : "", names[s], report->counts[s]);
  g_string_append(out, "},\"best\":");
  if (report->best >= 0) {
    g_string_append_printf(out, "{\"trial\":%" G_GINT64_FORMAT ",\"value\":", trial_at(report, report->best)->number);
    sieve_json_append_double(out, report->objective[report->best]);
    g_string_append(out, "}");
  } else {
    g_string_append(out, "null");
  }
  g_autofree char *progress = sieve_report_progress_line(report);
  g_string_append(out, ",\"progress\":");
  sieve_json_append_string(out, progress);
  g_string_append(out, ",\"running\":[");
  gboolean first = TRUE;
  for (guint i = 0; i < report->trials->len; i++) {
    const SieveTrial *t = trial_at(report, i);
    if (t->status != SIEVE_STATUS_PENDING)
      continue;
    g_string_append_printf(out, "%s{\"trial\":%" G_GINT64_FORMAT ",\"genotype\":", first ? "" : ",", t->number);
    sieve_json_append_string(out, t->genotype);
    g_string_append(out, ",\"stage\":");
    sieve_json_append_string(out, t->stage ? t->stage : "proposed");
    g_string_append(out, "}");
    first = FALSE;
  }
  g_string_append(out, "]}");
  return g_string_free(out, FALSE);
}

static void
section_live(GString *out, const SieveReport *report, const SieveReportOptions *options)
{
  g_autofree char *progress = sieve_report_progress_line(report);
  g_string_append(out, "<section id=\"live\"><strong>live</strong> <span id=\"progress\">");
  sieve__report_append_escaped(out, progress);
  g_string_append_printf(out, "</span> <span class=\"note\" id=\"live-note\">(refreshes as trials finish)</span>\n"
                              "<table id=\"running\"><thead><tr><th>running trial</th><th>stage</th><th>genotype</th>"
                              "</tr></thead><tbody>");
  for (guint i = 0; i < report->trials->len; i++) {
    const SieveTrial *t = trial_at(report, i);
    if (t->status != SIEVE_STATUS_PENDING)
      continue;
    g_autofree char *stage = escaped(t->stage ? t->stage : "proposed");
    g_string_append_printf(out, "<tr><td class=\"n\">%" G_GINT64_FORMAT "</td><td>%s</td><td class=\"g\">", t->number,
                           stage);
    sieve__report_append_escaped(out, t->genotype);
    g_string_append(out, "</td></tr>");
  }
  g_string_append(out, "</tbody></table>\n");
  /* Poll the status; redraw the whole page only when a trial finished, the
   * progress line and running trials otherwise. */
  g_string_append_printf(out, "<script>(function(){var seen=%u;function poll(){fetch('%s',{cache:'no-store'})"
                              ".then(function(r){return r.json();}).then(function(s){if(s.finished!=seen){"
                              "location.reload();return;}document.getElementById('progress').textContent=s.progress;"
                              "var b=document.querySelector('#running tbody');b.textContent='';s.running.forEach("
                              "function(t){var r=b.insertRow(),c;c=r.insertCell();c.textContent=t.trial;c.className="
                              "'n';r.insertCell().textContent=t.stage;c=r.insertCell();c.textContent=t.genotype;"
                              "c.className='g';});}).catch(function(){document.getElementById('live-note')"
                              ".textContent='(server not answering)';}).finally(function(){setTimeout(poll,%u);});}"
                              "setTimeout(poll,%u);})();</script></section>\n",
                         report->trials->len - report->counts[SIEVE_STATUS_PENDING],
                         options->status_path ? options->status_path : "/status", 1000u, 1000u);
}

/* ---- the page ------------------------------------------------------------ */

char *
sieve_report_to_html(const SieveReport *report, const SieveReportOptions *options)
{
  static const SieveReportOptions defaults = {0};
  if (options == NULL)
    options = &defaults;
  GString *out = g_string_sized_new(64 * 1024);
  g_string_append(out, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
                       "<meta name=\"viewport\" content=\"width=device-width,initial-scale=1\"><title>sieve report: ");
  sieve__report_append_escaped(out, report->name ? report->name : report->path);
  g_string_append(out, "</title>");
  if (options->live)
    g_string_append_printf(out, "<noscript><meta http-equiv=\"refresh\" content=\"%u\"></noscript>",
                           options->refresh_s ? options->refresh_s : 5);
  g_string_append_printf(out, "<style>%s</style></head><body>\n", style);
  section_header(out, report);
  if (options->live)
    section_live(out, report, options);
  if (report->trials->len == 0) {
    g_string_append(out, "<section id=\"empty\"><p>No trials yet: this study has not proposed anything.</p>"
                         "</section>\n");
  } else {
    section_funnel(out, report);
    section_history(out, report);
    section_pareto(out, report);
    section_fidelity(out, report);
    section_proxies(out, report);
    section_importance(out, report);
    section_top(out, report);
    section_failures(out, report);
  }
  g_autofree char *path = escaped(report->path);
  g_string_append_printf(out, "<footer class=\"note\"><p>Written by sieve %s from %s. Plots keep every point up to %u "
                              "per plot and thin out the rest, saying so where they do.</p></footer>\n",
                         sieve_version_string(), path, SIEVE_REPORT_MAX_POINTS);
  g_string_append_printf(out, "<script>%s</script>\n</body></html>\n", sort_script);
  return g_string_free(out, FALSE);
}

gboolean
sieve_report_write(SieveStore *store, const SieveSpace *space, const char *path, GError **error)
{
  g_autoptr(SieveReport) report = sieve_report_new(store, space, error);
  if (report == NULL)
    return FALSE;
  g_autofree char *html = sieve_report_to_html(report, NULL);
  return sieve__file_write(path, html, strlen(html), FALSE, error);
}
