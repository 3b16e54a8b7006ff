/* sieve: the report's SVG marks: axes with nice ticks, points, lines, and
 * the colours they are drawn in. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "report/report-private.h"

/* Okabe & Ito (2008), "Color Universal Design": distinguishable with every
 * common colour-vision deficiency.  Black first, for the main series. */
const char *const sieve__report_palette[8] = {"#000000", "#E69F00", "#56B4E9", "#009E73",
                                              "#F0E442", "#0072B2", "#D55E00", "#CC79A7"};

void
sieve__report_ramp(double t, char out[8])
{
  /* Stops of cividis (Nuñez, Anderton & Renslow 2018), made to read alike
   * with normal and deficient colour vision; linear between them. */
  static const guint8 stops[5][3] = {{0, 34, 78}, {65, 77, 107}, {124, 123, 120}, {188, 175, 111}, {254, 232, 56}};
  if (!isfinite(t))
    t = 0;
  t = CLAMP(t, 0.0, 1.0) * 4;
  guint k = MIN((guint) t, 3u);
  double f = t - k;
  guint rgb[3];
  for (guint c = 0; c < 3; c++)
    rgb[c] = (guint) lround(stops[k][c] + f * (stops[k + 1][c] - stops[k][c]));
  g_snprintf(out, 8, "#%02x%02x%02x", rgb[0], rgb[1], rgb[2]);
}

void
sieve__report_append_value(GString *out, double value)
{
  /* Four significant digits for a reader; the exact values are in the
   * store (sieve export).  g_ascii_formatd: '.' whatever the locale. */
  if (isnan(value)) {
    g_string_append(out, "–");
    return;
  }
  char buf[G_ASCII_DTOSTR_BUF_SIZE];
  g_string_append(out, g_ascii_formatd(buf, sizeof buf, "%.4g", value));
}

void
sieve__report_append_escaped(GString *out, const char *text)
{
  g_autofree char *escaped = g_markup_escape_text(text ? text : "", -1);
  g_string_append(out, escaped);
}

void
sieve__svg_range(const double *values, gsize n, gsize stride, double *lo, double *hi)
{
  double a = INFINITY, b = -INFINITY;
  for (gsize i = 0; i < n; i++) {
    double v = values[i * stride];
    if (isfinite(v)) {
      a = MIN(a, v);
      b = MAX(b, v);
    }
  }
  if (!isfinite(a)) {
    *lo = 0;
    *hi = 1;
    return;
  }
  /* Values near DBL_MAX (a penalty an evaluator reports) are finite but
   * their difference or a pad added to them is not: spans are computed on
   * halves, and the padded ends stay finite. */
  /* Ends a few float steps apart (0.3 and 0.1 + 0.2) are one value: a span
   * that small would give ticks closer than the doubles can tell apart. */
  if (b / 2 - a / 2 <= MAX(fabs(a), fabs(b)) * 1e-9) {
    double pad = a == 0 && b == 0 ? 1 : MAX(fabs(a), fabs(b)) * 0.05;
    a = MAX(a - pad, -G_MAXDOUBLE);
    b = MIN(b + pad, G_MAXDOUBLE);
  }
  double pad = (b / 2 - a / 2) * 0.08;
  *lo = MAX(a - pad, -G_MAXDOUBLE);
  *hi = MIN(b + pad, G_MAXDOUBLE);
}

double
sieve__report_unit(double v, double lo, double hi)
{
  /* On halves: hi - lo overflows for ends of opposite sign near DBL_MAX. */
  return hi > lo ? (v / 2 - lo / 2) / (hi / 2 - lo / 2) : 0.5;
}

double
sieve__svg_x(const SieveSvgPlot *plot, double x)
{
  double span = plot->width - plot->left - plot->right;
  return plot->left + sieve__report_unit(x, plot->x0, plot->x1) * span;
}

double
sieve__svg_y(const SieveSvgPlot *plot, double y)
{
  double span = plot->height - plot->top - plot->bottom;
  return plot->height - plot->bottom - sieve__report_unit(y, plot->y0, plot->y1) * span;
}

/* nice_step gives about five; more than this means the range was degenerate. */
#define MAX_TICKS 32

/* A step of 1, 2 or 5 times a power of ten giving about five ticks over
 * [lo, hi] (halved: hi - lo may overflow). */
static double
nice_step(double lo, double hi)
{
  double raw = (hi / 2 - lo / 2) / 2.5;
  double power = pow(10, floor(log10(raw)));
  double f = raw / power;
  return (f < 1.5 ? 1 : f < 3.5 ? 2 : f < 7.5 ? 5 : 10) * power;
}

/* The i-th tick from first.  i * step alone overflows on an axis from
 * -DBL_MAX to DBL_MAX (the positive ticks were lost): then on halves, which
 * overflow only past DBL_MAX, where the axis ends anyway. */
static double
tick_at(double first, double step, int i)
{
  double v = first + i * step;
  return isfinite(v) ? v : 2 * (first / 2 + i * (step / 2));
}

static void
append_number(GString *out, double v)
{
  char buf[G_ASCII_DTOSTR_BUF_SIZE];
  g_string_append(out, g_ascii_formatd(buf, sizeof buf, "%.1f", v));
}

void
sieve__svg_begin(GString *out, SieveSvgPlot *plot, const char *id, const char *title, const char *x_label,
                 const char *y_label)
{
  if (plot->left == 0 && plot->bottom == 0) {
    plot->left = 64;
    plot->right = 16;
    plot->top = 12;
    plot->bottom = 44;
  }
  g_string_append(out, "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"plot\" id=\"");
  sieve__report_append_escaped(out, id);
  g_string_append_printf(out, "\" width=\"%g\" height=\"%g\" viewBox=\"0 0 %g %g\" role=\"img\"><title>", plot->width,
                         plot->height, plot->width, plot->height);
  sieve__report_append_escaped(out, title);
  g_string_append(out, "</title>\n");
  double xa = plot->left, xb = plot->width - plot->right;
  double ya = plot->top, yb = plot->height - plot->bottom;
  g_string_append_printf(out, "<path class=\"axis\" d=\"M%g %gV%gH%g\"/>\n", xa, ya, yb, xb);
  /* Ticks: nice values inside the range, labelled with 4 digits. */
  /* Ticks are counted, not stepped until past the end: a step below the
   * spacing of the doubles there would never get past it. */
  double step = nice_step(plot->x0, plot->x1), first = ceil(plot->x0 / step) * step;
  for (int i = 0; i < MAX_TICKS; i++) {
    double v = tick_at(first, step, i);
    if (!isfinite(v) || v > plot->x1 + step * 1e-9)
      break;
    double px = sieve__svg_x(plot, v);
    g_string_append(out, "<path class=\"tick\" d=\"M");
    append_number(out, px);
    g_string_append_printf(out, " %gv5\"/><text class=\"tl\" x=\"", yb);
    append_number(out, px);
    g_string_append_printf(out, "\" y=\"%g\" text-anchor=\"middle\">", yb + 17);
    sieve__report_append_value(out, fabs(v) < step * 1e-9 ? 0 : v);
    g_string_append(out, "</text>\n");
  }
  step = nice_step(plot->y0, plot->y1);
  first = ceil(plot->y0 / step) * step;
  for (int i = 0; i < MAX_TICKS; i++) {
    double v = tick_at(first, step, i);
    if (!isfinite(v) || v > plot->y1 + step * 1e-9)
      break;
    double py = sieve__svg_y(plot, v);
    g_string_append_printf(out, "<path class=\"grid\" d=\"M%g ", xa);
    append_number(out, py);
    g_string_append_printf(out, "H%g\"/><text class=\"tl\" x=\"%g\" y=\"", xb, xa - 6);
    append_number(out, py + 4);
    g_string_append(out, "\" text-anchor=\"end\">");
    sieve__report_append_value(out, fabs(v) < step * 1e-9 ? 0 : v);
    g_string_append(out, "</text>\n");
  }
  g_string_append_printf(out, "<text class=\"al\" x=\"%g\" y=\"%g\" text-anchor=\"middle\">", (xa + xb) / 2,
                         plot->height - 6);
  sieve__report_append_escaped(out, x_label);
  g_string_append_printf(out, "</text>\n<text class=\"al\" transform=\"translate(14 %g) rotate(-90)\" "
                              "text-anchor=\"middle\">", (ya + yb) / 2);
  sieve__report_append_escaped(out, y_label);
  g_string_append(out, "</text>\n");
}

void
sieve__svg_end(GString *out)
{
  g_string_append(out, "</svg>\n");
}

void
sieve__svg_point(GString *out, const SieveSvgPlot *plot, double x, double y, const char *cls, const char *tip)
{
  g_string_append(out, "<circle class=\"pt");
  if (cls != NULL && cls[0])
    g_string_append_printf(out, " %s", cls);
  g_string_append(out, "\" cx=\"");
  append_number(out, sieve__svg_x(plot, x));
  g_string_append(out, "\" cy=\"");
  append_number(out, sieve__svg_y(plot, y));
  g_string_append(out, "\" r=\"3\">");
  if (tip != NULL) {
    g_string_append(out, "<title>");
    sieve__report_append_escaped(out, tip);
    g_string_append(out, "</title>");
  }
  g_string_append(out, "</circle>\n");
}

void
sieve__svg_line(GString *out, const SieveSvgPlot *plot, const double *xs, const double *ys, guint n, const char *cls)
{
  g_string_append_printf(out, "<polyline class=\"%s\" points=\"", cls);
  gboolean first = TRUE;
  for (guint i = 0; i < n; i++) {
    if (!isfinite(xs[i]) || !isfinite(ys[i]))
      continue;
    if (!first)
      g_string_append_c(out, ' ');
    append_number(out, sieve__svg_x(plot, xs[i]));
    g_string_append_c(out, ',');
    append_number(out, sieve__svg_y(plot, ys[i]));
    first = FALSE;
  }
  g_string_append(out, "\"/>\n");
}
