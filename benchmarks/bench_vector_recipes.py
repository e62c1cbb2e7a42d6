"""Which form of learned word vectors helps a CRF on CoNLL-2002 Spanish NER.

Every row trains the same CRFClassifier (``--iters`` L-BFGS iterations, as
bench_dense's conll row) on the sklearn-crfsuite tutorial's feature dicts,
alone or joined with one form of word vectors learned offline by
:func:`skcrf.features.learn_word_vectors` from unlabeled text: the tokens of
esp.train and of esp.testa (labels unused). esp.testb is read only for the
evaluation. The dicts are vectorized once and every variant's columns are
stacked beside them, so that the rows differ only by the vector part.

Variants (``--variants``, all by default):

- ``dicts``: the dicts alone;
- ``vec-l2``: + each token's 100-d vector scaled to unit length (a dense block);
- ``vec-std``: + the vectors standardized over the training tokens;
- ``vec-l2-x3``, ``vec-l2-x0.3``: + the unit vectors scaled (a weaker or
  stronger penalty on their weights);
- ``vec-window``: + the unit vectors of the token and its two neighbours;
- ``vec-cased``: + unit vectors learned on cased words, looked up cased;
- ``vec-cased-window``: + those, of the token and its two neighbours;
- ``vec-300``, ``vec-50``: + unit vectors of another length;
- ``binary``: + Guo et al.'s binarized vectors (each dimension above the mean
  of its positive values or below the mean of its negative ones, as sparse
  features);
- ``kmeans``: + k-means clusters of the vectors (50, 200, 500) of the token
  and its neighbours (WordClusters, window=1);
- ``kmeans-w0``: the same, of the token alone;
- ``kmeans-fine``: + k-means clusters at (100, 500, 1000, 2000), window 1;
- ``vec-window+kmeans``: the unit vectors of the window and the ``kmeans``
  clusters together;
- ``nested``: + prefixes of one binary tree of the vectors (WordClusters with
  ``nested=True``) at 16, 64, 256, 1024 and 4096 clusters, window 1.

``--train-fraction`` trains on the first part of esp.train only (the vectors
still learn from all the unlabeled text): what vectors add with few labels.

``--seeds`` repeats the cluster rows with other k-means seeds (the vectors
stay those of seed 0): a gain smaller than the spread across seeds is noise.

Run: python benchmarks/bench_vector_recipes.py [--variants dicts kmeans ...]
     [--iters 50] [--seeds 0 1 2]
"""

import argparse
import time

import numpy as np
import scipy.sparse as sp
from common import data_home, fit_and_predict, print_table, sent2features

from skcrf import CRFClassifier, SequenceMatrix, SequenceVectorizer
from skcrf.datasets import load_conll2002
from skcrf.features import WordClusters, WordVectorizer, learn_word_vectors
from skcrf.metrics import span_f1_score


def joined(base, *parts):
    """``base``'s sparse columns beside each part's (a SequenceMatrix or a dense array)."""
    matrices, names, dense = [base.matrix], list(base.feature_names), []
    for part in parts:
        if isinstance(part, SequenceMatrix):
            matrices.append(part.matrix)
            names += list(part.feature_names)
        else:
            dense.append(part)
    block = np.hstack(dense) if dense else None
    return SequenceMatrix(sp.hstack(matrices, format="csr"), base.offsets,
                          feature_names=np.array(names, dtype=object), dense=block)


def neighbour_rows(block, offsets, shift):
    """Each token's row of ``block`` taken from the token ``shift`` away, zeros past the ends."""
    n = block.shape[0]
    sequence = np.repeat(np.arange(len(offsets) - 1), np.diff(offsets))
    source = np.arange(n) + shift
    inside = (source >= 0) & (source < n)
    inside[inside] &= sequence[source[inside]] == sequence[inside]
    out = np.zeros_like(block)
    out[inside] = block[source[inside]]
    return out


def binarized(train_block, blocks):
    """Guo et al. (2014): +1 above the mean positive value of a dimension, -1 below the
    mean negative one, as two sparse columns per dimension."""
    positive = np.array([c[c > 0].mean() if (c > 0).any() else np.inf for c in train_block.T])
    negative = np.array([c[c < 0].mean() if (c < 0).any() else -np.inf for c in train_block.T])
    out = []
    for block in blocks:
        up = sp.csr_matrix((block > positive).astype(np.float64))
        down = sp.csr_matrix((block < negative).astype(np.float64))
        out.append(sp.hstack([up, down], format="csr"))
    d = train_block.shape[1]
    return out, [f"bin{j}=+" for j in range(d)] + [f"bin{j}=-" for j in range(d)]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variants", nargs="+", default=None)
    parser.add_argument("--iters", type=int, default=50)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--train-fraction", type=float, default=1.0,
                        help="train on the first fraction of esp.train only (the vectors "
                             "still learn from all of its text and esp.testa's)")
    args = parser.parse_args()

    home = data_home()
    X_train, y_train = load_conll2002("train", data_home=home)
    X_dev, _ = load_conll2002("testa", data_home=home)
    X_test, y_test = load_conll2002("testb", data_home=home)
    unlabeled = list(X_train) + list(X_dev)
    if args.train_fraction < 1.0:
        keep = int(len(X_train) * args.train_fraction)
        X_train, y_train = X_train[:keep], y_train[:keep]
        print(f"training on the first {keep} sentences of esp.train", flush=True)
    started = time.perf_counter()
    vectorizer = SequenceVectorizer()
    D_train = vectorizer.fit_transform([sent2features(s) for s in X_train])
    D_test = vectorizer.transform([sent2features(s) for s in X_test])
    print(f"dicts vectorized in {time.perf_counter() - started:.1f} s: "
          f"{D_train.n_features} columns", flush=True)

    tables = {}

    def table(dims=100, lowercase=True, window=2):
        key = (dims, lowercase, window)
        if key not in tables:
            started = time.perf_counter()
            tables[key] = learn_word_vectors(unlabeled, n_components=dims, window=window,
                                             lowercase=lowercase, random_state=0)
            print(f"vectors {key}: {len(tables[key][1])} words in "
                  f"{time.perf_counter() - started:.1f} s", flush=True)
        return tables[key]

    def lookup(norm="l2", **kwargs):
        vectors, vocabulary = table(**kwargs)
        vec = WordVectorizer(vectors, vocabulary=vocabulary,
                             lowercase=kwargs.get("lowercase", True), norm=norm)
        vec.fit(X_train)
        return vec.transform(X_train).dense, vec.transform(X_test).dense

    def dense(scale=1.0, window=False, standardize=False, **kwargs):
        train, test = lookup(norm=None if standardize else "l2", **kwargs)
        if standardize:
            mean, std = train.mean(axis=0), train.std(axis=0)
            train, test = (train - mean) / std, (test - mean) / std
        if window:
            train = np.hstack([neighbour_rows(train, D_train.offsets, s) for s in (-1, 0, 1)])
            test = np.hstack([neighbour_rows(test, D_test.offsets, s) for s in (-1, 0, 1)])
        return joined(D_train, scale * train), joined(D_test, scale * test)

    def binary():
        train, test = lookup()
        (b_train, b_test), names = binarized(train, [train, test])
        return (joined(D_train, SequenceMatrix(b_train, D_train.offsets, feature_names=names)),
                joined(D_test, SequenceMatrix(b_test, D_test.offsets, feature_names=names)))

    def clusters(n_clusters, window=1, seed=0, **options):
        vectors, vocabulary = table()
        clusters = WordClusters(vectors, vocabulary=vocabulary, n_clusters=n_clusters,
                                window=window, lowercase=True, random_state=seed, **options)
        C_train = clusters.fit_transform(X_train)
        return joined(D_train, C_train), joined(D_test, clusters.transform(X_test))

    def both(with_vectors, with_clusters):
        """The vectors' dense block beside the clusters' sparse columns."""
        return tuple(SequenceMatrix(c.matrix, c.offsets, feature_names=c.feature_names,
                                    dense=v.dense) for v, c in zip(with_vectors, with_clusters))

    variants = {
        "dicts": lambda seed: (D_train, D_test),
        "vec-l2": lambda seed: dense(),
        "vec-std": lambda seed: dense(standardize=True),
        "vec-l2-x3": lambda seed: dense(scale=3.0),
        "vec-l2-x0.3": lambda seed: dense(scale=0.3),
        "vec-window": lambda seed: dense(window=True),
        "vec-cased": lambda seed: dense(lowercase=False),
        "vec-cased-window": lambda seed: dense(lowercase=False, window=True),
        "vec-300": lambda seed: dense(dims=300),
        "vec-50": lambda seed: dense(dims=50),
        "binary": lambda seed: binary(),
        "kmeans": lambda seed: clusters((50, 200, 500), seed=seed),
        "kmeans-w0": lambda seed: clusters((50, 200, 500), window=0, seed=seed),
        "kmeans-fine": lambda seed: clusters((100, 500, 1000, 2000), seed=seed),
        "nested": lambda seed: clusters((16, 64, 256, 1024, 4096), seed=seed, nested=True),
        "vec-window+kmeans": lambda seed: both(dense(window=True),
                                               clusters((50, 200, 500), seed=seed)),
    }
    seeded = {"kmeans", "kmeans-w0", "kmeans-fine", "nested", "vec-window+kmeans"}
    results = {}
    for name in args.variants or list(variants):
        for seed in (args.seeds if name in seeded else [0]):
            label = name if name not in seeded or len(args.seeds) == 1 else f"{name}/{seed}"
            started = time.perf_counter()
            train, test = variants[name](seed)
            build = time.perf_counter() - started
            model = CRFClassifier(max_iter=args.iters)
            y_pred, fit_s, _, mib = fit_and_predict(model, train, y_train, test)
            f1 = span_f1_score(y_test, y_pred)
            results[label] = {"entity F1": f1, "fit (s)": fit_s, "features (s)": build,
                              "iterations": model.n_iter_}
            print(f"{label:16s} F1 {f1:.4f}  fit {fit_s:6.1f} s  features {build:5.1f} s  "
                  f"({model.n_iter_} iterations)", flush=True)
    print_table(f"CoNLL-2002 esp.testb, {args.iters} iterations (transposed below)",
                {k: v for k, v in results.items()},
                lambda key, value: f"{value:12.4f}" if key == "entity F1" else f"{value:12.1f}")


if __name__ == "__main__":
    main()
