/* The NAS-Bench-101 cell as a graph: pruning, the graph hash, the channel
 * split (nb101-cell.h). */
#include <string.h>

#include <sieve/abi.h>

#include "nb101-cell.h"

const char *const nb101_op_names[NB101_N_OPS + 1] = {
  "conv3x3-bn-relu", "conv1x1-bn-relu", "maxpool3x3", NULL,
};

guint
nb101_cell_edges(const Nb101Cell *cell)
{
  guint edges = 0;
  for (guint i = 0; i < cell->n; i++)
    edges += (guint) __builtin_popcount(cell->succ[i]);
  return edges;
}

gboolean
nb101_cell_prune(const Nb101Cell *raw, Nb101Cell *out, GError **error)
{
  guint n = raw->n;
  g_return_val_if_fail(n >= 2 && n <= NB101_MAX_VERTICES, FALSE);
  /* Forward from the input, backward from the output; vertices are in
   * topological order, so one pass each way suffices. */
  guint from_input = 1u << 0, to_output = 1u << (n - 1);
  for (guint i = 0; i < n; i++)
    if (from_input & (1u << i))
      from_input |= raw->succ[i];
  for (guint i = n - 1; i-- > 0;)
    if (raw->succ[i] & to_output)
      to_output |= 1u << i;
  guint keep = from_input & to_output;
  if (!(keep & (1u << (n - 1))) || !(keep & 1u)) {
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_PARSE,
                "the cell is disconnected: no path leads from its input (vertex 0) to its output (vertex %u)",
                n - 1);
    return FALSE;
  }
  guint index[NB101_MAX_VERTICES], m = 0;
  for (guint v = 0; v < n; v++)
    index[v] = (keep & (1u << v)) ? m++ : G_MAXUINT;
  Nb101Cell c = {.n = m};
  for (guint v = 0; v < n; v++) {
    if (index[v] == G_MAXUINT)
      continue;
    c.op[index[v]] = raw->op[v];
    for (guint w = v + 1; w < n; w++)
      if (nb101_cell_has_edge(raw, v, w) && index[w] != G_MAXUINT)
        c.succ[index[v]] |= 1u << index[w];
  }
  guint edges = nb101_cell_edges(&c);
  if (edges > NB101_MAX_EDGES) {
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_PARSE,
                "the cell has %u edges on paths from its input to its output; NAS-Bench-101 allows at most %d",
                edges, NB101_MAX_EDGES);
    return FALSE;
  }
  *out = c;
  return TRUE;
}

/* ---- graph_util.hash_module ------------------------------------------- */

typedef char Hex[33];

static void
md5_hex(GChecksum *md5, const char *text, Hex out)
{
  g_checksum_reset(md5);
  g_checksum_update(md5, (const guchar *) text, (gssize) strlen(text));
  memcpy(out, g_checksum_get_string(md5), 33);
}

static int
compare_hex(const void *a, const void *b)
{
  return strcmp(*(const char *const *) a, *(const char *const *) b);
}

/* ''.join(sorted(hashes of the vertices in mask)) */
static void
append_sorted(GString *out, const Hex *hashes, guint n, guint mask)
{
  const char *list[NB101_MAX_VERTICES];
  guint k = 0;
  for (guint w = 0; w < n; w++)
    if (mask & (1u << w))
      list[k++] = hashes[w];
  qsort(list, k, sizeof list[0], compare_hex);
  for (guint i = 0; i < k; i++)
    g_string_append_len(out, list[i], 32);
}

/* The Python texts the benchmark hashes are reproduced exactly: str() of an
 * (out-degree, in-degree, label) tuple, then '|'-joined sorted neighbour
 * hashes, then str() of the sorted list of vertex hashes. */
void
nb101_cell_fingerprint(const Nb101Cell *cell, guint8 digest[16])
{
  guint n = cell->n;
  guint pred[NB101_MAX_VERTICES] = {0};
  for (guint i = 0; i < n; i++)
    for (guint j = i + 1; j < n; j++)
      if (nb101_cell_has_edge(cell, i, j))
        pred[j] |= 1u << i;
  g_autoptr(GChecksum) md5 = g_checksum_new(G_CHECKSUM_MD5);
  g_autoptr(GString) text = g_string_sized_new(512);
  Hex hashes[NB101_MAX_VERTICES], next[NB101_MAX_VERTICES];
  for (guint v = 0; v < n; v++) {
    int label = v == 0 ? -1 : v == n - 1 ? -2 : (int) cell->op[v];
    g_string_printf(text, "(%d, %d, %d)", __builtin_popcount(cell->succ[v]), __builtin_popcount(pred[v]), label);
    md5_hex(md5, text->str, hashes[v]);
  }
  /* As many rounds as vertices, as the benchmark does. */
  for (guint round = 0; round < n; round++) {
    for (guint v = 0; v < n; v++) {
      g_string_truncate(text, 0);
      append_sorted(text, hashes, n, pred[v]);
      g_string_append_c(text, '|');
      append_sorted(text, hashes, n, cell->succ[v]);
      g_string_append_c(text, '|');
      g_string_append_len(text, hashes[v], 32);
      md5_hex(md5, text->str, next[v]);
    }
    memcpy(hashes, next, sizeof hashes);
  }
  const char *list[NB101_MAX_VERTICES];
  for (guint v = 0; v < n; v++)
    list[v] = hashes[v];
  qsort(list, n, sizeof list[0], compare_hex);
  g_string_assign(text, "[");
  for (guint v = 0; v < n; v++)
    g_string_append_printf(text, "%s'%s'", v ? ", " : "", list[v]);
  g_string_append_c(text, ']');
  g_checksum_reset(md5);
  g_checksum_update(md5, (const guchar *) text->str, (gssize) text->len);
  gsize len = 16;
  g_checksum_get_digest(md5, digest, &len);
}

/* ---- model_builder.compute_vertex_channels ----------------------------- */

gboolean
nb101_cell_channels(const Nb101Cell *cell, guint in_channels, guint out_channels,
                    guint channels[NB101_MAX_VERTICES], GError **error)
{
  guint n = cell->n;
  memset(channels, 0, sizeof(guint) * NB101_MAX_VERTICES);
  channels[0] = in_channels;
  channels[n - 1] = out_channels;
  if (n == 2)
    return TRUE;
  /* The output's in-degree without the input: it splits the channels. */
  guint fan_in = 0;
  for (guint v = 1; v < n - 1; v++)
    fan_in += nb101_cell_has_edge(cell, v, n - 1);
  g_assert(fan_in > 0); /* a pruned cell with interior vertices feeds its output from one */
  guint interior = out_channels / fan_in, correction = out_channels % fan_in;
  if (interior == 0) {
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_GRAPH,
                "%u output channels cannot be split among the %u vertices that feed the cell's output", out_channels,
                fan_in);
    return FALSE;
  }
  /* The first `correction` vertices feeding the output take one more. */
  for (guint v = 1; v < n - 1; v++)
    if (nb101_cell_has_edge(cell, v, n - 1)) {
      channels[v] = interior;
      if (correction > 0) {
        channels[v]++;
        correction--;
      }
    }
  /* The others take the most of their successors, going backwards. */
  for (guint v = n - 2; v-- > 1;)
    if (!nb101_cell_has_edge(cell, v, n - 1))
      for (guint w = v + 1; w < n - 1; w++)
        if (nb101_cell_has_edge(cell, v, w))
          channels[v] = MAX(channels[v], channels[w]);
  return TRUE;
}
