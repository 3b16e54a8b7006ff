/* sieve plugin: a MobileNet-style block space in the manner of ProxylessNAS
 * (Cai et al., "ProxylessNAS: Direct Neural Architecture Search on Target
 * Task and Hardware", ICLR 2019), FBNet (Wu et al., CVPR 2019) and
 * MobileNetV3 (Howard et al., "Searching for MobileNetV3", ICCV 2019).
 *
 * The skeleton is fixed (mobilenet-network.c): a stem, a fixed first block,
 * stages of block positions, a head.  Each block position is one decision,
 * s<stage>b<block>: an MBConv with one of the kernels x expansions (default
 * {3,5,7} x {3,6}), or, for every position after a stage's first, `skip`
 * (the stage is that much shallower: ProxylessNAS's zero op on a residual
 * block).  Where the options make them decisions, every block that is not
 * skipped also chooses squeeze-and-excitation (s<i>b<j>_se: no, yes) and its
 * activation (s<i>b<j>_act: relu, hard_swish).
 *
 * Genotype text: the stages in order, separated by '/', each stage's block
 * positions separated by ',', each position either `skip` or
 * `k<kernel>_e<expansion>`, followed by `_se` when it has SE and `_hs` when
 * it uses hard-swish (these two suffixes only where they are decisions):
 *
 *   k3_e6,skip,k5_e3_se,skip/k7_e6_hs,k3_e3,skip,skip/...
 *
 * Skips in different positions of one stage give the same network; the
 * structural hash sees that and the dedupe stage trains it once.
 */
#include <math.h>
#include <string.h>

#include <sieve/abi.h>
#include <sieve/component.h>
#include <sieve/graph.h>
#include <sieve/options.h>
#include <sieve/plugin.h>
#include <sieve/space.h>
#include <sieve/text.h>

#include "mobilenet-network.h"

static const char *const mode_se[] = {"search", "on", "off", NULL};
static const char *const mode_act[] = {"search", "relu", "hard_swish", NULL};

/* Defaults: ProxylessNAS's stages (channels 24, 40, 80, 96, 192, 320; at
 * most 4 blocks each, 1 in the last) with the first stride and the stem's
 * stride 1 for 32x32 and 28x28 inputs (extents 32, 16, 8, 8, 4, 4 and 28,
 * 14, 7, 7, 4, 4); ImageNet's setting is stem_stride 2 and a first stride 2. */
static const SieveOptionSpec mb_options[] = {
  SIEVE_OPTION_INT("in_channels", "3", 1, 4096, "channels of the input images"),
  SIEVE_OPTION_INT("size", "32", 4, 65536, "input height and width (32 for CIFAR, 28 for (Fashion-)MNIST, 224 for ImageNet)"),
  SIEVE_OPTION_INT("classes", "10", 2, 1000000, "outputs of the final linear layer"),
  SIEVE_OPTION_INT("stem_channels", "32", 1, 65536, "output channels of the stem's 3x3 convolution (before the width multiplier)"),
  SIEVE_OPTION_INT("stem_stride", "1", 1, 4, "stride of the stem (2 for ImageNet-sized inputs)"),
  SIEVE_OPTION_INT("first_channels", "16", 0, 65536,
                   "output channels of the fixed MBConv(k3, e1) block after the stem (before the width multiplier); 0: no such block"),
  SIEVE_OPTION_STRING("stages", "24:1:4,40:2:4,80:2:4,96:1:4,192:2:4,320:1:1",
                      "the stages as channels:stride:max_blocks, comma-separated (channels before the width multiplier; "
                      "stride of the stage's first block)"),
  SIEVE_OPTION_INT("last_channels", "1280", 0, 1000000,
                   "output channels of the 1x1 convolution before pooling (scaled by the width multiplier when it is above 1); 0: none"),
  SIEVE_OPTION_FLOAT("width", "1.0", 0.01, 16, "width multiplier: every channel count times it, rounded to a multiple of 8 as MobileNetV2 does"),
  SIEVE_OPTION_STRING("kernels", "3,5,7", "depthwise kernel sizes to choose from (odd), comma-separated"),
  SIEVE_OPTION_STRING("expansions", "3,6", "expansion ratios to choose from, comma-separated"),
  SIEVE_OPTION_CHOICE("se", "search", mode_se,
                      "squeeze-and-excitation per block: a decision (search), always (on) or never (off)"),
  SIEVE_OPTION_CHOICE("activation", "search", mode_act,
                      "the blocks' activation: a decision per block (search), or relu or hard_swish everywhere"),
  SIEVE_OPTION_END,
};

typedef enum { MODE_SEARCH, MODE_ON, MODE_OFF } Mode; /* activation: ON = relu, OFF = hard_swish */

typedef struct {
  MbSkeleton sk;
  MbOp *ops;
  guint n_ops;
  char **op_names;   /* "k3_e6", ...; NULL-terminated */
  char **skip_names; /* "skip", then op_names */
  Mode se, act;
  guint n_blocks;
  gint *dec_op, *dec_se, *dec_act; /* per block position: decision indices (-1: none) */
} Mobilenet;

static void
mb_destroy(gpointer instance)
{
  Mobilenet *self = instance;
  if (!self)
    return;
  g_free(self->sk.stages);
  g_free(self->ops);
  g_strfreev(self->op_names);
  g_strfreev(self->skip_names);
  g_free(self->dec_op);
  g_free(self->dec_se);
  g_free(self->dec_act);
  g_free(self);
}

/* "a,b,c" of integers in [lo, hi]; FALSE + an error on the option. */
static gboolean
parse_uints(const SieveOptions *options, const char *name, guint lo, guint hi, GArray *out, GError **error)
{
  const char *text = sieve_options_get_string(options, name);
  g_auto(GStrv) parts = g_strsplit(text, ",", -1);
  for (guint i = 0; parts[i]; i++) {
    g_autofree char *p = g_strstrip(g_strdup(parts[i]));
    guint64 v;
    if (!g_ascii_string_to_unsigned(p, 10, lo, hi, &v, NULL)) {
      sieve_options_set_error(options, name, error, "%s: item %u '%s' is not an integer in %u..%u", name, i + 1, p, lo,
                              hi);
      return FALSE;
    }
    guint u = (guint)v;
    for (guint k = 0; k < out->len; k++)
      if (g_array_index(out, guint, k) == u) {
        sieve_options_set_error(options, name, error, "%s: %u is listed twice", name, u);
        return FALSE;
      }
    g_array_append_val(out, u);
  }
  if (out->len == 0) {
    sieve_options_set_error(options, name, error, "%s: needs at least one value", name);
    return FALSE;
  }
  return TRUE;
}

static gboolean
parse_stages(Mobilenet *self, const SieveOptions *options, double width, GError **error)
{
  const char *text = sieve_options_get_string(options, "stages");
  g_auto(GStrv) parts = g_strsplit(text, ",", -1);
  guint n = g_strv_length(parts);
  if (n == 0 || text[0] == '\0') {
    sieve_options_set_error(options, "stages", error, "stages: needs at least one channels:stride:max_blocks");
    return FALSE;
  }
  self->sk.stages = g_new0(MbStage, n);
  self->sk.n_stages = n;
  for (guint i = 0; i < n; i++) {
    g_auto(GStrv) f = g_strsplit(parts[i], ":", -1);
    guint64 v[3];
    static const char *const what[] = {"channels", "stride", "max_blocks"};
    static const guint64 hi[] = {65536, 4, 64};
    if (g_strv_length(f) != 3) {
      sieve_options_set_error(options, "stages", error, "stages: stage %u '%s' is not channels:stride:max_blocks", i + 1,
                              parts[i]);
      return FALSE;
    }
    for (guint k = 0; k < 3; k++) {
      g_autofree char *p = g_strstrip(g_strdup(f[k]));
      if (!g_ascii_string_to_unsigned(p, 10, 1, hi[k], &v[k], NULL)) {
        sieve_options_set_error(options, "stages", error, "stages: stage %u: %s '%s' is not an integer in 1..%u", i + 1,
                                what[k], p, (guint)hi[k]);
        return FALSE;
      }
    }
    self->sk.stages[i] = (MbStage){mb_make_divisible(v[0] * width, 8), (guint)v[1], (guint)v[2]};
    self->n_blocks += (guint)v[2];
  }
  return TRUE;
}

static void
add_decisions(Mobilenet *self, SieveSpace *space)
{
  static const char *const yes_no[] = {"no", "yes"};
  static const char *const acts[] = {"relu", "hard_swish"};
  self->dec_op = g_new(gint, self->n_blocks);
  self->dec_se = g_new(gint, self->n_blocks);
  self->dec_act = g_new(gint, self->n_blocks);
  guint k = 0;
  for (guint i = 0; i < self->sk.n_stages; i++)
    for (guint j = 0; j < self->sk.stages[i].max_blocks; j++, k++) {
      g_autofree char *name = g_strdup_printf("s%ub%u", i + 1, j + 1);
      gboolean can_skip = j > 0;
      guint d = can_skip ? sieve_space_add_categorical(space, name, self->n_ops + 1, (const char *const *)self->skip_names)
                         : sieve_space_add_categorical(space, name, self->n_ops, (const char *const *)self->op_names);
      self->dec_op[k] = (gint)d;
      /* Active for every choice but skip (index 0 where there is one). */
      guint64 all = self->n_ops + can_skip >= 64 ? G_MAXUINT64 : (G_GUINT64_CONSTANT(1) << (self->n_ops + can_skip)) - 1;
      guint64 mask = can_skip ? all & ~G_GUINT64_CONSTANT(1) : all;
      self->dec_se[k] = self->dec_act[k] = -1;
      if (self->se == MODE_SEARCH) {
        g_autofree char *n = g_strdup_printf("%s_se", name);
        self->dec_se[k] = (gint)sieve_space_add_categorical(space, n, 2, yes_no);
        if (can_skip)
          sieve_space_set_condition(space, self->dec_se[k], d, mask);
      }
      if (self->act == MODE_SEARCH) {
        g_autofree char *n = g_strdup_printf("%s_act", name);
        self->dec_act[k] = (gint)sieve_space_add_categorical(space, n, 2, acts);
        if (can_skip)
          sieve_space_set_condition(space, self->dec_act[k], d, mask);
      }
    }
}

/* The option table validated the value: it is one of the choices. */
static guint
choice_index(const char *const *choices, const char *value)
{
  guint i = 0;
  while (choices[i] && g_strcmp0(choices[i], value) != 0)
    i++;
  return i;
}

static gpointer
mb_create(SieveSpace *space, const SieveOptions *options, GError **error)
{
  Mobilenet *self = g_new0(Mobilenet, 1);
  double width = sieve_options_get_double(options, "width");
  self->sk.in_channels = sieve_options_get_int(options, "in_channels");
  self->sk.size = sieve_options_get_int(options, "size");
  self->sk.classes = sieve_options_get_int(options, "classes");
  self->sk.stem_channels = mb_make_divisible(sieve_options_get_int(options, "stem_channels") * width, 8);
  self->sk.stem_stride = sieve_options_get_int(options, "stem_stride");
  guint first = sieve_options_get_int(options, "first_channels");
  self->sk.first_channels = first ? mb_make_divisible(first * width, 8) : 0;
  guint last = sieve_options_get_int(options, "last_channels");
  /* MobileNetV2 widens the last layer only for multipliers above 1. */
  self->sk.last_channels = last ? mb_make_divisible(last * MAX(1.0, width), 8) : 0;
  self->se = (Mode)choice_index(mode_se, sieve_options_get_string(options, "se"));
  self->act = (Mode)choice_index(mode_act, sieve_options_get_string(options, "activation"));
  g_autoptr(GArray) kernels = g_array_new(FALSE, FALSE, sizeof(guint));
  g_autoptr(GArray) expansions = g_array_new(FALSE, FALSE, sizeof(guint));
  if (!parse_stages(self, options, width, error) || !parse_uints(options, "kernels", 1, 15, kernels, error) ||
      !parse_uints(options, "expansions", 1, 64, expansions, error)) {
    mb_destroy(self);
    return NULL;
  }
  for (guint i = 0; i < kernels->len; i++)
    if (g_array_index(kernels, guint, i) % 2 == 0) {
      sieve_options_set_error(options, "kernels", error, "kernels: %u is even; a depthwise kernel k pads k/2 and must be odd",
                              g_array_index(kernels, guint, i));
      mb_destroy(self);
      return NULL;
    }
  self->n_ops = kernels->len * expansions->len;
  if (self->n_ops + 1 > 64) {
    sieve_options_set_error(options, "kernels", error, "%u kernels x %u expansions is more than 63 choices per block",
                            kernels->len, expansions->len);
    mb_destroy(self);
    return NULL;
  }
  self->ops = g_new(MbOp, self->n_ops);
  self->op_names = g_new0(char *, self->n_ops + 1);
  self->skip_names = g_new0(char *, self->n_ops + 2);
  self->skip_names[0] = g_strdup("skip");
  for (guint a = 0, o = 0; a < kernels->len; a++)
    for (guint e = 0; e < expansions->len; e++, o++) {
      self->ops[o] = (MbOp){g_array_index(kernels, guint, a), g_array_index(expansions, guint, e)};
      self->op_names[o] = g_strdup_printf("k%u_e%u", self->ops[o].kernel, self->ops[o].expansion);
      self->skip_names[o + 1] = g_strdup(self->op_names[o]);
    }
  add_decisions(self, space);
  return self;
}

/* The blocks of a genotype; FALSE + error on a value out of range. */
static gboolean
blocks_of(const Mobilenet *self, const SieveGenotype *genotype, MbBlock *blocks, GError **error)
{
  guint k = 0;
  for (guint i = 0; i < self->sk.n_stages; i++)
    for (guint j = 0; j < self->sk.stages[i].max_blocks; j++, k++) {
      guint n = self->n_ops + (j > 0);
      double v = sieve_genotype_get(genotype, self->dec_op[k]);
      if (!(v >= 0 && v < n && v == (guint)v)) {
        g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_GRAPH, "mobilenet: decision s%ub%u has value %g, expected 0..%u",
                    i + 1, j + 1, v, n - 1);
        return FALSE;
      }
      guint o = (guint)v;
      MbBlock *b = &blocks[k];
      *b = (MbBlock){0};
      if (j > 0 && o == 0) {
        b->skip = TRUE;
        continue;
      }
      const MbOp *op = &self->ops[o - (j > 0)];
      b->kernel = op->kernel;
      b->expansion = op->expansion;
      b->se = self->se == MODE_ON || (self->se == MODE_SEARCH && sieve_genotype_get(genotype, self->dec_se[k]) == 1);
      b->hard_swish = self->act == MODE_OFF ||
                      (self->act == MODE_SEARCH && sieve_genotype_get(genotype, self->dec_act[k]) == 1);
    }
  return TRUE;
}

static SieveGraph *
mb_build(gpointer instance, const SieveSpace *space, const SieveGenotype *genotype, GError **error)
{
  const Mobilenet *self = instance;
  g_autofree MbBlock *blocks = g_new(MbBlock, self->n_blocks);
  if (!blocks_of(self, genotype, blocks, error))
    return NULL;
  g_autofree char *name = sieve_space_format(space, genotype);
  return mb_network_build(&self->sk, blocks, name, error);
}

static char *
mb_format(gpointer instance, const SieveSpace *space, const SieveGenotype *genotype)
{
  const Mobilenet *self = instance;
  g_autofree MbBlock *blocks = g_new(MbBlock, self->n_blocks);
  g_return_val_if_fail(blocks_of(self, genotype, blocks, NULL), NULL);
  GString *out = g_string_new(NULL);
  guint k = 0;
  for (guint i = 0; i < self->sk.n_stages; i++)
    for (guint j = 0; j < self->sk.stages[i].max_blocks; j++, k++) {
      if (k > 0)
        g_string_append_c(out, j == 0 ? '/' : ',');
      const MbBlock *b = &blocks[k];
      if (b->skip) {
        g_string_append(out, "skip");
        continue;
      }
      g_string_append_printf(out, "k%u_e%u", b->kernel, b->expansion);
      if (self->se == MODE_SEARCH && b->se)
        g_string_append(out, "_se");
      if (self->act == MODE_SEARCH && b->hard_swish)
        g_string_append(out, "_hs");
    }
  return g_string_free(out, FALSE);
}

G_GNUC_PRINTF(2, 3)
static void
parse_error(GError **error, const char *format, ...)
{
  va_list args;
  va_start(args, format);
  g_autofree char *message = g_strdup_vprintf(format, args);
  va_end(args);
  g_set_error_literal(error, SIEVE_ERROR, SIEVE_ERROR_PARSE, message);
}

/* One block token [p, end) at block j of stage i; sets the genotype's values. */
static gboolean
parse_block(const Mobilenet *self, SieveGenotype *g, guint k, guint i, guint j, const char *text, const char *p,
            const char *end, GError **error)
{
  guint at = sieve_text_char_number(text, p);
  g_autofree char *tok = g_strndup(p, end - p);
  if (strcmp(tok, "skip") == 0) {
    if (j == 0) {
      parse_error(error,
                  "block s%ub1 at character %u: the first block of a stage cannot be skip (it sets the stage's "
                  "channels and stride)",
                  i + 1, at);
      return FALSE;
    }
    sieve_genotype_set(g, self->dec_op[k], 0);
    return TRUE;
  }
  /* k<K>_e<E>[_se][_hs] */
  gboolean se = FALSE, hs = FALSE;
  gsize len = strlen(tok);
  if (len > 3 && g_str_has_suffix(tok, "_hs")) {
    hs = TRUE;
    tok[len -= 3] = '\0';
  }
  if (len > 3 && g_str_has_suffix(tok, "_se")) {
    se = TRUE;
    tok[len -= 3] = '\0';
  }
  gint o = -1;
  for (guint q = 0; q < self->n_ops; q++)
    if (strcmp(tok, self->op_names[q]) == 0)
      o = (gint)q;
  if (o < 0) {
    g_autofree char *list = g_strjoinv(", ", self->op_names);
    g_autofree char *whole = g_strndup(p, end - p);
    parse_error(error, "block s%ub%u at character %u: '%s' is not %s%s (expected skip or one of %s, then _se, _hs)",
                i + 1, j + 1, at, whole, j ? "skip or " : "", "an MBConv of this space", list);
    return FALSE;
  }
  if ((se && self->se != MODE_SEARCH) || (hs && self->act != MODE_SEARCH)) {
    parse_error(error, "block s%ub%u at character %u: the suffix %s is not a decision in this space (option %s: %s)",
                i + 1, j + 1, at, se && self->se != MODE_SEARCH ? "_se" : "_hs",
                se && self->se != MODE_SEARCH ? "se" : "activation",
                se && self->se != MODE_SEARCH ? mode_se[self->se] : mode_act[self->act]);
    return FALSE;
  }
  sieve_genotype_set(g, self->dec_op[k], o + (j > 0));
  if (self->dec_se[k] >= 0)
    sieve_genotype_set(g, self->dec_se[k], se);
  if (self->dec_act[k] >= 0)
    sieve_genotype_set(g, self->dec_act[k], hs);
  return TRUE;
}

static SieveGenotype *
mb_parse(gpointer instance, const SieveSpace *space, const char *text, GError **error)
{
  const Mobilenet *self = instance;
  g_autoptr(SieveGenotype) g = sieve_genotype_new(space);
  const char *p = text;
  guint k = 0;
  for (guint i = 0; i < self->sk.n_stages; i++) {
    guint nb = self->sk.stages[i].max_blocks;
    for (guint j = 0; j < nb; j++, k++) {
      const char *end = p;
      while (*end && *end != ',' && *end != '/')
        end++;
      if (end == p) {
        parse_error(error, "expected block s%ub%u at character %u, got %s", i + 1, j + 1, sieve_text_char_number(text, p),
                    *p ? (*p == ',' ? "','" : "'/'") : "the end of the text");
        return NULL;
      }
      if (!parse_block(self, g, k, i, j, text, p, end, error))
        return NULL;
      p = end;
      gboolean last_block = j + 1 == nb, last_stage = i + 1 == self->sk.n_stages;
      char want = !last_block ? ',' : !last_stage ? '/' : '\0';
      if (*p != want) {
        guint at = sieve_text_char_number(text, p);
        if (want == ',')
          parse_error(error, "stage %u has %u block positions, the text gives %u (at character %u: expected ',')", i + 1,
                      nb, j + 1, at);
        else if (want == '/')
          parse_error(error, "stage %u has %u block positions, the text gives more (at character %u: expected '/')",
                      i + 1, nb, at);
        else
          parse_error(error, "the space has %u stages; unexpected '%c' at character %u after the last block", self->sk.n_stages,
                      *p, at);
        return NULL;
      }
      if (*p)
        p++;
    }
  }
  return g_steal_pointer(&g);
}

/* The functional hash's scale: 16x16 inputs (extents down to 2x2 with the
 * default strides), a quarter of the width (every stage at its 8-channel
 * floor or a little above) and a narrow head. */
static const char *const mb_probe_options[] = {"size=16", "width=0.25", "last_channels=32", NULL};

static const SieveSpaceClass mb_class = {
  .create = mb_create,
  .destroy = mb_destroy,
  .format = mb_format,
  .parse = mb_parse,
  .build = mb_build,
  .probe_options = mb_probe_options,
};

static const SieveComponentInfo mb_info = {
  .kind = SIEVE_KIND_SPACE,
  .name = "mobilenet",
  .summary = "MobileNet-style blocks (ProxylessNAS/FBNet/MobileNetV3): per block MBConv kernel x expansion, SE, "
             "hard-swish, or skip",
  .options = mb_options,
  .klass = &mb_class,
};

static gboolean
mb_init(SieveRegistry *registry, GError **error)
{
  return sieve_registry_add(registry, &mb_info, error);
}

SIEVE_PLUGIN_DEFINE("mobilenet", "0.1.0", "A MobileNet-style block search space", "MIT", mb_init);
