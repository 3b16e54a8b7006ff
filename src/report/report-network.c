/* sieve: one candidate drawn for the report: the cell DAG of a
 * NAS-Bench-201 arch string, a layer list for other networks, the decisions
 * of a hyper-parameter genotype. */
#include <math.h>
#include <string.h>

#include <sieve/graph.h>
#include "report/report-private.h"

/* Layers listed before the rest of a long network is only counted. */
#define MAX_LAYERS 40

typedef struct {
  guint from, to;
  char *op;
} Edge;

/* The edges of "|op~0|+|op~0|op~1|+...": node k+1 (k = group) receives
 * one edge from each earlier node j named "op~j" (Dong & Yang 2020's
 * cell). FALSE when text is not such a string. */
static gboolean
parse_cell(const char *text, GArray *edges, guint *n_nodes)
{
  if (text == NULL || text[0] != '|')
    return FALSE;
  g_auto(GStrv) groups = g_strsplit(text, "+", -1);
  guint n_groups = g_strv_length(groups);
  for (guint k = 0; k < n_groups; k++) {
    g_auto(GStrv) tokens = g_strsplit(groups[k], "|", -1);
    for (guint t = 0; tokens[t]; t++) {
      if (tokens[t][0] == '\0')
        continue;
      const char *tilde = strrchr(tokens[t], '~');
      char *end = NULL;
      guint64 from = tilde ? g_ascii_strtoull(tilde + 1, &end, 10) : 0;
      if (tilde == NULL || end == tilde + 1 || *end != '\0' || from > k)
        return FALSE;
      Edge e = {(guint) from, k + 1, g_strndup(tokens[t], tilde - tokens[t])};
      g_array_append_val(edges, e);
    }
  }
  *n_nodes = n_groups + 1;
  return edges->len > 0;
}

static void
clear_edge(gpointer data)
{
  g_free(((Edge *) data)->op);
}

/* A colour per operation name, stable across drawings: the palette (black
 * left out, it is the nodes') by first appearance in a fixed list. */
static const char *
op_colour(const char *op)
{
  static const char *const known[] = {"nor_conv_3x3", "nor_conv_1x1", "avg_pool_3x3", "skip_connect"};
  for (guint i = 0; i < G_N_ELEMENTS(known); i++)
    if (strcmp(op, known[i]) == 0)
      return sieve__report_palette[i == 0 ? 5 : i == 1 ? 6 : i == 2 ? 3 : 1];
  return sieve__report_palette[7];
}

static void
draw_cell(GString *out, GArray *edges, guint n_nodes)
{
  double step = 120, width = 40 + step * (n_nodes - 1), height = 40 + 28 * n_nodes;
  double base = height - 22;
  g_string_append_printf(out, "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"cell\" width=\"%g\" height=\"%g\" "
                              "viewBox=\"0 0 %g %g\" role=\"img\"><title>cell: %u nodes, %u edges</title>\n",
                         width, height, width, height, n_nodes, edges->len);
  for (guint e = 0; e < edges->len; e++) {
    const Edge *edge = &g_array_index(edges, Edge, e);
    double x0 = 20 + step * edge->from, x1 = 20 + step * edge->to;
    /* Longer edges arc higher, so that no two share a path. */
    double peak = base - 26 * (edge->to - edge->from) - 6;
    gboolean none = strcmp(edge->op, "none") == 0;
    g_string_append_printf(out, "<g class=\"edge\"><path d=\"M%g %g Q%g %g %g %g\" fill=\"none\" stroke=\"%s\" "
                                "stroke-width=\"2\"%s/><text x=\"%g\" y=\"%g\" text-anchor=\"middle\" class=\"el\">",
                           x0, base, (x0 + x1) / 2, 2 * peak - base, x1, base, none ? "#999999" : op_colour(edge->op),
                           none ? " stroke-dasharray=\"4 3\"" : "", (x0 + x1) / 2, peak - 3);
    sieve__report_append_escaped(out, edge->op);
    g_string_append(out, "</text></g>\n");
  }
  for (guint k = 0; k < n_nodes; k++)
    g_string_append_printf(out, "<g class=\"node\"><circle cx=\"%g\" cy=\"%g\" r=\"11\" fill=\"#ffffff\" "
                                "stroke=\"#000000\"/><text x=\"%g\" y=\"%g\" text-anchor=\"middle\">%u</text></g>\n",
                           20 + step * k, base, 20 + step * k, base + 4, k);
  g_string_append(out, "</svg>\n");
}

static void
list_layers(GString *out, const SieveGraph *graph)
{
  g_string_append(out, "<table class=\"layers\"><thead><tr><th>#</th><th>operation</th><th>output (C×H×W)</th>"
                       "<th>parameters</th></tr></thead><tbody>\n");
  guint shown = 0, live = 0;
  for (guint i = 0; i < sieve_graph_n_nodes(graph); i++) {
    if (!sieve_graph_node_live(graph, i))
      continue;
    live++;
    if (shown >= MAX_LAYERS)
      continue;
    const SieveGraphNode *node = sieve_graph_node(graph, i);
    g_string_append_printf(out, "<tr><td>%u</td><td>", i);
    sieve__report_append_escaped(out, sieve_op_kind_name(node->kind));
    if (node->label) {
      g_string_append(out, " <small>");
      sieve__report_append_escaped(out, node->label);
      g_string_append(out, "</small>");
    }
    g_string_append_printf(out, "</td><td>%u×%u×%u</td><td>%" G_GUINT64_FORMAT "</td></tr>\n", node->shape.c,
                           node->shape.h, node->shape.w, sieve_graph_node_params(graph, i));
    shown++;
  }
  g_string_append(out, "</tbody></table>\n");
  if (live > shown)
    g_string_append_printf(out, "<p class=\"note\">the first %u of %u layers</p>\n", shown, live);
}

void
sieve__report_network(GString *out, const SieveReport *report, guint i)
{
  const SieveTrial *t = report->trials->pdata[i];
  g_autoptr(GArray) edges = g_array_new(FALSE, FALSE, sizeof(Edge));
  g_array_set_clear_func(edges, clear_edge);
  guint n_nodes = 0;
  gboolean cell = parse_cell(t->genotype, edges, &n_nodes);
  if (cell)
    draw_cell(out, edges, n_nodes);

  g_autoptr(SieveGraph) graph = NULL;
  g_autoptr(GError) error = NULL;
  if (report->space != NULL && sieve_space_can_build(report->space)) {
    g_autoptr(SieveGenotype) g = sieve_space_parse(report->space, t->genotype, &error);
    if (g != NULL)
      graph = sieve_space_build(report->space, g, &error);
  }
  if (graph != NULL) {
    g_string_append_printf(out, "<p class=\"net\">%" G_GUINT64_FORMAT " parameters, %" G_GUINT64_FORMAT
                                " multiply-accumulates per example</p>\n",
                           sieve_graph_params(graph), sieve_graph_macs(graph));
    if (!cell)
      list_layers(out, graph);
  } else if (error != NULL) {
    g_string_append(out, "<p class=\"note\">network not built: ");
    sieve__report_append_escaped(out, error->message);
    g_string_append(out, "</p>\n");
  }
  if (!cell && graph == NULL) {
    /* A hyper-parameter genotype: its decisions are its whole description. */
    g_string_append(out, "<ul class=\"decisions\">");
    g_auto(GStrv) parts = g_strsplit(t->genotype, ",", -1);
    for (guint p = 0; parts[p]; p++) {
      g_string_append(out, "<li>");
      sieve__report_append_escaped(out, parts[p]);
      g_string_append(out, "</li>");
    }
    g_string_append(out, "</ul>\n");
  }
}
