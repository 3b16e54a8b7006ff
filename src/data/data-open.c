/* sieve: datasets by name, found in the usual places.
 *
 * The image sets are looked for in $SIEVE_DATA_DIR/<name> and then
 * /usr/share/datasets/<name> (where Debian's dataset-fashion-mnist puts its
 * files), unless the caller names the folder.
 */
#include <string.h>

#include "data/data-private.h"

#define KNOWN_DATASETS "fashion-mnist, mnist, cifar10, cifar100, csv:<path>"

/* Xiao, Rasul and Vollgraf, "Fashion-MNIST" (2017), table 1. */
static const char *const fashion_mnist_classes[] = {"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
                                                    "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot", NULL};

/* The folder of a named set: the caller's, or the first of the defaults
 * that exists.  NULL + error listing where it looked. (transfer full) */
static char *
find_dir(const char *name, const char *dir, GError **error)
{
  if (dir != NULL)
    return g_strdup(dir);
  g_autoptr(GPtrArray) tried = g_ptr_array_new_with_free_func(g_free);
  const char *env = g_getenv("SIEVE_DATA_DIR");
  if (env != NULL && *env != '\0')
    g_ptr_array_add(tried, g_build_filename(env, name, NULL));
  g_ptr_array_add(tried, g_build_filename("/usr/share/datasets", name, NULL));
  for (guint i = 0; i < tried->len; i++)
    if (g_file_test(g_ptr_array_index(tried, i), G_FILE_TEST_IS_DIR))
      return g_strdup(g_ptr_array_index(tried, i));
  g_ptr_array_add(tried, NULL);
  g_autofree char *list = g_strjoinv(", ", (char **) tried->pdata);
  g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_NOT_FOUND,
              "dataset %s not found: no folder %s (set $SIEVE_DATA_DIR or give the folder)", name, list);
  return NULL;
}

/* The first of the candidate file names that exists in dir. (transfer full) */
static char *
find_file(const char *dataset, const char *what, const char *dir, const char *const *candidates, GError **error)
{
  for (guint i = 0; candidates[i] != NULL; i++) {
    char *path = g_build_filename(dir, candidates[i], NULL);
    if (g_file_test(path, G_FILE_TEST_EXISTS))
      return path;
    g_free(path);
  }
  g_autofree char *list = g_strjoinv(", ", (char **) candidates);
  g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_NOT_FOUND, "%s: no %s in %s (looked for %s)", dataset, what, dir,
              list);
  return NULL;
}

static SieveDataset *
open_idx(const char *name, const char *dir, const char *split, GError **error)
{
  g_autofree char *folder = find_dir(name, dir, error);
  if (folder == NULL)
    return NULL;
  /* LeCun's names, gzipped as published or unpacked, and the dotted
   * spelling some mirrors use. */
  const char *prefix = strcmp(split, "train") == 0 ? "train" : "t10k";
  g_autofree char *i1 = g_strdup_printf("%s-images-idx3-ubyte.gz", prefix);
  g_autofree char *i2 = g_strdup_printf("%s-images-idx3-ubyte", prefix);
  g_autofree char *i3 = g_strdup_printf("%s-images.idx3-ubyte", prefix);
  g_autofree char *l1 = g_strdup_printf("%s-labels-idx1-ubyte.gz", prefix);
  g_autofree char *l2 = g_strdup_printf("%s-labels-idx1-ubyte", prefix);
  g_autofree char *l3 = g_strdup_printf("%s-labels.idx1-ubyte", prefix);
  const char *images[] = {i1, i2, i3, NULL}, *labels[] = {l1, l2, l3, NULL};
  g_autofree char *what_i = g_strdup_printf("%s images", split);
  g_autofree char *what_l = g_strdup_printf("%s labels", split);
  g_autofree char *images_path = find_file(name, what_i, folder, images, error);
  if (images_path == NULL)
    return NULL;
  g_autofree char *labels_path = find_file(name, what_l, folder, labels, error);
  if (labels_path == NULL)
    return NULL;
  SieveDataset *ds = sieve_dataset_load_idx(images_path, labels_path, error);
  if (ds != NULL && strcmp(name, "fashion-mnist") == 0)
    ds->class_names = g_strdupv((char **) fashion_mnist_classes);
  return ds;
}

/* Class names from the text file that comes with the CIFAR binaries (one per
 * line); NULL when it is missing or does not list n names. (transfer full) */
static char **
read_class_names(const char *path, guint n)
{
  g_autofree char *text = NULL;
  if (!g_file_get_contents(path, &text, NULL, NULL))
    return NULL;
  g_autoptr(GStrvBuilder) builder = g_strv_builder_new();
  g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
  guint count = 0;
  for (guint i = 0; lines[i] != NULL; i++) {
    g_strstrip(lines[i]);
    if (*lines[i] == '\0')
      continue;
    g_strv_builder_add(builder, lines[i]);
    count++;
  }
  g_auto(GStrv) names = g_strv_builder_end(builder);
  return count == n ? g_steal_pointer(&names) : NULL;
}

static SieveDataset *
open_cifar(const char *name, const char *dir, const char *split, guint n_classes, GError **error)
{
  g_autofree char *root = find_dir(name, dir, error);
  if (root == NULL)
    return NULL;
  /* The folder the archive unpacks to, inside root, or root itself. */
  const char *sub = n_classes == 10 ? "cifar-10-batches-bin" : "cifar-100-binary";
  g_autofree char *inside = g_build_filename(root, sub, NULL);
  const char *folder = g_file_test(inside, G_FILE_TEST_IS_DIR) ? inside : root;
  gboolean train = strcmp(split, "train") == 0;

  g_autoptr(GPtrArray) paths = g_ptr_array_new_with_free_func(g_free);
  if (n_classes == 10 && train)
    for (int k = 1; k <= 5; k++) {
      g_autofree char *base = g_strdup_printf("data_batch_%d.bin", k);
      g_ptr_array_add(paths, g_build_filename(folder, base, NULL));
    }
  else
    g_ptr_array_add(paths, g_build_filename(folder, n_classes == 10 ? "test_batch.bin" : train ? "train.bin" : "test.bin",
                                            NULL));
  SieveDataset *ds = sieve_dataset_load_cifar((const char *const *) paths->pdata, paths->len, n_classes, error);
  if (ds == NULL)
    return NULL;
  g_autofree char *meta = g_build_filename(folder, n_classes == 10 ? "batches.meta.txt" : "fine_label_names.txt", NULL);
  ds->class_names = read_class_names(meta, n_classes);
  return ds;
}

SieveDataset *
sieve_dataset_open(const char *name, const char *dir, const char *split, GError **error)
{
  g_return_val_if_fail(name != NULL && split != NULL, NULL);
  g_return_val_if_fail(error == NULL || *error == NULL, NULL);

  gboolean csv = g_str_has_prefix(name, "csv:");
  gboolean known = csv || strcmp(name, "fashion-mnist") == 0 || strcmp(name, "mnist") == 0 ||
                   strcmp(name, "cifar10") == 0 || strcmp(name, "cifar100") == 0;
  if (!known) {
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_NOT_FOUND, "unknown dataset '%s'; known: " KNOWN_DATASETS, name);
    return NULL;
  }
  if (strcmp(split, "train") != 0 && strcmp(split, "test") != 0) {
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_NOT_FOUND, "%s: unknown split '%s', expected train or test", name,
                split);
    return NULL;
  }

  SieveDataset *ds;
  if (csv) {
    const char *path = name + 4;
    if (*path == '\0') {
      g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_NOT_FOUND, "dataset 'csv:' needs a file name after the colon");
      return NULL;
    }
    if (strcmp(split, "train") != 0) {
      g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_NOT_FOUND,
                  "%s has no test split: a CSV file is one set of examples, read as the train split", name);
      return NULL;
    }
    g_autofree char *full = dir != NULL && !g_path_is_absolute(path) ? g_build_filename(dir, path, NULL)
                                                                      : g_strdup(path);
    ds = sieve_dataset_load_csv(full, NULL, error);
  } else if (strcmp(name, "cifar10") == 0 || strcmp(name, "cifar100") == 0) {
    ds = open_cifar(name, dir, split, strcmp(name, "cifar10") == 0 ? 10 : 100, error);
  } else {
    ds = open_idx(name, dir, split, error);
  }
  if (ds == NULL)
    return NULL;
  g_free(ds->name);
  ds->name = g_strdup_printf("%s/%s", name, split);
  return ds;
}
