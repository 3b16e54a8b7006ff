/* sieve: the report area: a study read from its store, the figures computed
 * from it, and one self-contained HTML page with inline SVG plots.
 * Not installed: not part of the plugin ABI.
 *
 *   g_autoptr(SieveStore) store = sieve_store_open("study.sieve", SIEVE_STORE_READ, &error);
 *   g_autoptr(SieveSpace) space = sieve_report_space_new(store, registry, NULL);  // may be NULL
 *   g_autoptr(SieveReport) report = sieve_report_new(store, space, &error);
 *   g_autofree char *html = sieve_report_to_html(report, NULL);
 *
 * The report area sits above the engine and below the Lua host: it reads a
 * store (never writes one), rebuilds the study's space from the stored
 * config to read genotypes' decisions and draw networks, and knows nothing
 * of how the study ran.  report-data.c reads, report-stats.c and
 * report-pareto.c compute, report-svg.c draws axes and marks,
 * report-network.c draws one candidate, report-html.c lays the page out.
 */
#pragma once

#include <glib.h>
#include <sieve/result.h>
#include <sieve/space.h>
#include <sieve/text.h>
#include <sieve/store.h>
#include <sieve/registry.h>
#include "engine/engine-private.h"

G_BEGIN_DECLS

/* ==== the study, read (report-data.c) ==== */

/* Points drawn in one scatter plot before the report thins them out (every
 * k-th trial, plus every trial that improved the best so far or lies on the
 * Pareto front); the plot says so when it does.  Lines (best so far) use
 * every trial.  Keeps a 100,000-trial report under 5 MB and quick to draw. */
#define SIEVE_REPORT_MAX_POINTS 2000
/* Lines of the parallel-coordinates plot and configurations joined across
 * fidelities, past which the same thinning applies. */
#define SIEVE_REPORT_MAX_LINES 400

typedef struct {
  char *metric;
  gboolean maximize;
} SieveReportObjective;

/* A zero-cost proxy stored in the study (the screen stage's scores or the
 * proxy evaluator's metrics) against the primary objective, over the
 * evaluated trials that have both. */
typedef struct {
  char *name;
  guint n;         /* pairs */
  double spearman; /* NAN when n < 2 or a side is constant */
  double kendall;  /* tau-b; NAN likewise */
} SieveReportProxy;

/* How much of the objective's variance one decision explains. */
typedef struct {
  guint decision; /* index in the space */
  guint groups;   /* levels (categories, or quantile bins of a number) seen */
  double eta2;    /* SS_between / SS_total, in [0, 1]; NAN when undefined */
} SieveReportImportance;

typedef struct _SieveReport SieveReport;
struct _SieveReport {
  char *path;       /* the store */
  GPtrArray *trials; /* SieveTrial (owned), in number order */
  /* From the store's meta and stored config; NULL where absent. */
  char *name, *created, *seed, *space_name, *optimizer_name, *evaluator_name, *pipeline, *budget;
  /* The proxies the screen stage names (NULL without a screen stage; empty
   * when it names none and scores its defaults). */
  GHashTable *screen_proxies;
  guint64 budget_evaluations; /* 0: none */
  guint top;                  /* rows of the top table (the config's report.top, else 20) */
  SieveReportObjective *objectives; /* n_objectives, the first primary */
  guint n_objectives;
  /* Outcome counts by SieveStatus. */
  guint counts[SIEVE_STATUS_REJECTED + 1];
  guint distinct;         /* distinct hashes among the evaluated (ok, failed, pruned) */
  double evaluation_s;    /* summed cost of the evaluated (ok, failed and pruned) trials */
  double mean_ok_s;       /* mean cost of an ok trial, NAN when none */
  double saved_s;         /* cache hits times mean_ok_s */
  double t0;              /* the first trial's start (unix s), NAN when none */
  double elapsed_s;       /* the study's own time, summed over its runs (meta elapsed_s, what budget.seconds
                           * counts), NAN when the store has none */
  double wall_s;          /* first start to last finish, pauses between runs included; NAN when none finished */
  /* Per trial (index = position in trials): the primary objective as
   * reported, NAN where the trial has none (pending, failed, screened). */
  double *objective;
  gint best;              /* index of the best ok trial, -1 when none */
  /* The ok trials with an objective, best first by the incumbent rule, as
   * the summary of `sieve run` ranks them (sieve_trials_rank): when the
   * trials ran at several fidelities (by_fidelity) each configuration
   * once, at the highest fidelity it reached.  ranked_mask[i]: trial i is
   * in it: the sample of the figures that compare trials' values (proxies,
   * importance, parallel coordinates). */
  GArray *ranked;         /* guint */
  gboolean *ranked_mask;
  gboolean by_fidelity;
  /* Pareto front over the first two objectives (n_objectives >= 2): indexes
   * of the trials a front is drawn from (sieve_trials_pareto_points: at the
   * highest fidelity reached, a lower rung is no rival), and those not
   * dominated. */
  GArray *pareto_points;  /* guint */
  GArray *pareto_front;   /* guint, sorted by the first objective, best first */
  GArray *proxies;        /* SieveReportProxy */
  /* Rebuilt space (nullable, borrowed) and why not, when it is not. */
  const SieveSpace *space;
  char *space_note;
  /* Decisions of each trial's genotype (n_trials x n_decisions, NAN where
   * inactive or not parsed), or NULL without a space. */
  double *decisions;
  guint n_decisions;
  GArray *importance;     /* SieveReportImportance, largest first */
};

/* Reads the whole study in store (any state: running, finished, empty) and
 * computes every figure.  space (nullable) must outlive the report; with it
 * the decisions are read and networks drawn. (transfer full) */
SIEVE_INTERNAL_API SieveReport *sieve_report_new(SieveStore *store, const SieveSpace *space, GError **error);
SIEVE_INTERNAL_API void sieve_report_free(SieveReport *report);
/* The study's space rebuilt from the config stored with it (its plugin and
 * options; relative paths against the config's folder), from registry's
 * components.  NULL with error when that is not possible (a Lua script's
 * space, a missing plugin): the report is made without it. (transfer full) */
SIEVE_INTERNAL_API SieveSpace *sieve_report_space_new(SieveStore *store, SieveRegistry *registry, GError **error);
/* The folder a stored study's relative paths (a space's file, lua.load
 * scripts) are read against: the config's, absolute; NULL when the store
 * does not say. (transfer full) */
SIEVE_INTERNAL_API char *sieve_report_study_dir(SieveStore *store);
/* The config's folder as the store keeps it (meta config_dir) when it is
 * an absolute path to a folder on this machine, else NULL. (transfer full) */
SIEVE_INTERNAL_API char *sieve_report_config_dir(SieveStore *store);
/* Both at once, as the commands do: the space rebuilt from registry when it
 * can be (into *space, which the caller frees after the report; NULL when
 * not, and the report's space_note says why), then the report.
 * (transfer full) */
SIEVE_INTERNAL_API SieveReport *sieve_report_load(SieveStore *store, SieveRegistry *registry, SieveSpace **space,
                                                  GError **error);
/* The value of metric of trial i, NAN when it has none. */
double sieve__report_metric(const SieveReport *report, guint i, const char *metric);
/* For g_array_sort_with_data / g_qsort_with_data over trial indices (guint),
 * data the report: by the primary objective, best first, then by number. */
gint sieve__report_compare_objective(gconstpointer a, gconstpointer b, gpointer data);
/* Whether the metric is a zero-cost proxy's score. */
gboolean sieve__report_is_proxy(const SieveReport *report, const char *metric);

G_DEFINE_AUTOPTR_CLEANUP_FUNC(SieveReport, sieve_report_free)

/* ==== statistics (report-stats.c) ==== */

/* Spearman's rank correlation (Spearman 1904): Pearson's over average ranks
 * (ties share the mean rank).  NAN for n < 2 or a constant side. */
SIEVE_INTERNAL_API double sieve_report_spearman(const double *x, const double *y, guint n);
/* Kendall's tau-b (Kendall 1945, ties in either variable accounted), in
 * O(n log n) by Knight's merge-sort count of discordant pairs (Knight 1966).
 * NAN for n < 2 or a constant side. */
SIEVE_INTERNAL_API double sieve_report_kendall(const double *x, const double *y, guint n);
/* Average ranks (1-based) of values[0..n) into ranks. */
void sieve__report_ranks(const double *values, guint n, double *ranks);
/* One-way analysis of variance's eta squared, SS_between / SS_total, of
 * values grouped by group[i] (0 .. n_groups-1).  NAN when SS_total is 0 or
 * n < 2. */
SIEVE_INTERNAL_API double sieve_report_eta_squared(const double *values, const guint *group, guint n, guint n_groups);

/* ==== the Pareto front (report-pareto.c) ==== */

/* Marks in on_front the points (n x 2 values, both oriented larger-is-
 * better) that no other point dominates (at least as good in both, better
 * in one); equal points do not dominate each other.  O(n log n). */
SIEVE_INTERNAL_API void sieve_report_pareto_2d(const double *values, guint n, gboolean *on_front);

/* ==== SVG marks (report-svg.c) ==== */

typedef struct {
  double x0, x1, y0, y1; /* data ranges shown */
  double width, height;  /* pixels, margins included */
  double left, right, top, bottom; /* margins */
} SieveSvgPlot;

/* A plot of width x height with axes, nice ticks and their labels (units in
 * the labels: "evaluation time (s)").  Opens <svg>; close with
 * sieve__svg_end. id names the plot for links and tests; title is read by
 * screen readers and shown on hover. */
void sieve__svg_begin(GString *out, SieveSvgPlot *plot, const char *id, const char *title, const char *x_label,
                      const char *y_label);
void sieve__svg_end(GString *out);
/* Data to pixels. */
double sieve__svg_x(const SieveSvgPlot *plot, double x);
/* Where v lies in [lo, hi] (0 at lo, 1 at hi; 0.5 when hi <= lo), without
 * overflow for ends near DBL_MAX. */
double sieve__report_unit(double v, double lo, double hi);
double sieve__svg_y(const SieveSvgPlot *plot, double y);
/* The finite range of values[0..n) (stride apart), padded by 4% on each side;
 * [0, 1] when there is none. */
void sieve__svg_range(const double *values, gsize n, gsize stride, double *lo, double *hi);
/* One data point, class "pt" plus cls, with a tooltip (nullable). */
void sieve__svg_point(GString *out, const SieveSvgPlot *plot, double x, double y, const char *cls, const char *tip);
/* A polyline through the finite points, class cls. */
void sieve__svg_line(GString *out, const SieveSvgPlot *plot, const double *xs, const double *ys, guint n,
                     const char *cls);
/* Appends value for a reader: %.4g, '.' as the decimal point. */
void sieve__report_append_value(GString *out, double value);
/* Appends text escaped for HTML and XML. */
void sieve__report_append_escaped(GString *out, const char *text);
/* The Okabe-Ito colour-blind-safe palette (Okabe & Ito 2008), 8 colours. */
extern const char *const sieve__report_palette[8];
/* A colour of the cividis-like sequential ramp for t in [0, 1], as #rrggbb
 * (a blue-to-yellow ramp that reads the same to most colour-blind eyes). */
void sieve__report_ramp(double t, char out[8]);

/* ==== one candidate's network (report-network.c) ==== */

/* Appends a drawing of trial i's network: the cell DAG for NAS-Bench-201
 * arch strings (nodes and labelled edges), a layer list for other spaces
 * that build networks, the decisions for spaces that do not; parameters and
 * MACs where the space builds it. */
void sieve__report_network(GString *out, const SieveReport *report, guint i);

/* ==== the page (report-html.c) ==== */

typedef struct {
  /* Served by `sieve serve`: a live section (progress, running trials) and
   * a script that polls `status_path` and reloads when trials finish. */
  gboolean live;
  const char *status_path;
  /* Refresh seconds for readers without scripting (live only). */
  guint refresh_s;
} SieveReportOptions;

/* The whole page. options nullable. (transfer full) */
SIEVE_INTERNAL_API char *sieve_report_to_html(const SieveReport *report, const SieveReportOptions *options);
/* The live state of a study as one JSON object: counts, finished trials,
 * best, the progress line, the trials running (number, genotype, stage,
 * seconds since they started). (transfer full) */
SIEVE_INTERNAL_API char *sieve_report_status_json(const SieveReport *report);
/* "[12/300] best 0.913 (trial 7), 3 cached, 2 screened": the progress
 * line as `sieve run` prints it in a log. (transfer full) */
SIEVE_INTERNAL_API char *sieve_report_progress_line(const SieveReport *report);
/* Reads store, builds the page and writes it to path atomically (a viewer
 * reloading it never sees half a page). */
SIEVE_INTERNAL_API gboolean sieve_report_write(SieveStore *store, const SieveSpace *space, const char *path,
                                               GError **error);

G_END_DECLS
