"""Dense features: numeric sequences, word vectors, a synthetic task and the cold start.

The four rows of issue 42's targets, side by side in one run:

1. ``dense``: ``--tokens`` tokens x ``--dims`` dense values, ``--labels``
   labels, ``--iters`` iterations: fit from a list of 2-D arrays against the
   same values handed over as CSR (the route before dense blocks), time and
   peak memory above the input, and the seconds per iteration against two
   numpy matrix products of the same shapes (``X @ W.T`` and ``X.T @ G``, the
   limit of a dense objective).
2. ``conll``: CoNLL-2002 Spanish, the sklearn-crfsuite tutorial's dicts alone
   against the dicts plus a ``--vector-dims`` vector per token (vectors learned
   from esp.train + esp.testa by :func:`skcrf.features.learn_word_vectors`),
   joined by :class:`skcrf.features.SequenceUnion`, or put in each token's
   dict as ``f["vec"] = emb[word]``; and sklearn-crfsuite with
   the same vectors as float features ``v0``, ``v1``, ... Both skcrf rows
   time the dicts' making too (sklearn-crfsuite's does not): the ratios are
   conservative for skcrf. ``--vector-dims 300`` gives the memory row.
   ``conll-memory``: peak memory only, at ``--memory-dims`` (300): the
   union's fit from raw sentences (float64 and float32 blocks) against
   sklearn-crfsuite's with the same values as float features, its dicts made
   sentence by sentence while CRFsuite reads them (a list of 8,323 sentences
   of 300-float dicts alone would hold gigabytes of Python objects).
3. ``synthetic``: :func:`skcrf.datasets.make_sequence_classification`; the CRF
   (after a per-token StandardScaler), a per-token LogisticRegression and
   hmmlearn's GaussianHMM supervised by counting (if installed).
4. ``online``: the online solvers (sgd, perceptron, passive_aggressive, arow)
   for ``--online-epochs`` epochs, each fitted on dense values given as a list
   of arrays (the dense block) and as the same values in CSR, beside
   sklearn-crfsuite's l2sgd / ap / pa / arow (settings of bench_trainers.py)
   on the same values as float features: (a) ``--online-tokens`` tokens x
   ``--online-dims`` numeric dims, ``--labels`` labels; (b) with
   ``--online-conll``, CoNLL-2002 esp.train's tutorial dicts plus
   ``--vector-dims`` vectors joined by SequenceUnion (against the union
   handed over as CSR).
5. ``cold``: a fresh process with an empty numba cache fits a toy problem
   given as dicts and the same given as arrays: seconds and numba
   specializations (skcrf's own, then all).

Run: python benchmarks/bench_dense.py [--rows dense conll synthetic online cold]
     [--tokens 200000] [--dims 256] [--train-fraction 1.0]

Targets (issue 42, quiet machine): dense fit <= 0.5x the time and <= 0.6x the
peak memory of CSR; CoNLL with vectors <= 2x the dicts alone and <= 0.2x
sklearn-crfsuite's fit, F1 with vectors >= F1 without; the CRF >= 5 accuracy
points above LogisticRegression. The machine is shared and noisy: compare the
ratios printed by one run, not absolute times across runs.
"""

import argparse
import time
import warnings

import numpy as np
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning
from common import PeakRSS, data_home, sent2features

from skcrf import CRFClassifier, SequenceMatrix, SequenceVectorizer
from skcrf.datasets import load_conll2002, make_sequence_classification
from skcrf.metrics import flat_accuracy_score, span_f1_score


def timed_fit(model, X, y):
    """(seconds, peak MiB above the start) of ``model.fit(X, y)``, warnings silenced."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # max_iter is reached by design
        with PeakRSS() as memory:
            started = time.perf_counter()
            model.fit(X, y)
            seconds = time.perf_counter() - started
    return seconds, memory.mib


def row(label, *cells):
    print(f"{label:44s}" + "".join(f"{cell:>14}" for cell in cells), flush=True)


def check(name, ok):
    return f"{name}: {'met' if ok else 'MISSED'}"


# --- 1. dense values: arrays against the same values as CSR --------------------------

def bench_dense(args):
    n_sequences = max(1, args.tokens // 20)
    X, y = make_sequence_classification(n_sequences, n_features=args.dims,
                                        n_classes=args.labels, length_range=(10, 30),
                                        class_sep=0.3, random_state=0)
    n_tokens = sum(map(len, X))
    print(f"\n[dense] {n_tokens} tokens x {args.dims} dims ({n_tokens * args.dims * 8 / 2**20:.0f}"
          f" MiB of float64), {args.labels} labels, {args.iters} iterations")

    def crf():
        return CRFClassifier(max_iter=args.iters, tol=1e-12, random_state=0)

    arrays = crf()
    arrays_s, arrays_mib = timed_fit(arrays, X, y)
    stacked = np.vstack(X)
    offsets = np.concatenate([[0], np.cumsum([len(x) for x in X])])
    as_csr = SequenceMatrix(sp.csr_matrix(stacked), offsets)
    del stacked
    csr = crf()
    csr_s, csr_mib = timed_fit(csr, as_csr, y)
    del as_csr
    # the limit: the two products a dense objective needs per evaluation
    tokens = np.vstack(X)
    weights = np.random.default_rng(0).normal(size=(args.labels, args.dims))
    started = time.perf_counter()
    for _ in range(5):
        scores = tokens @ weights.T
        tokens.T @ scores
    products = (time.perf_counter() - started) / 5
    row("", "fit (s)", "s / iteration", "peak (MiB)")
    row("list of arrays (dense block)", f"{arrays_s:.2f}",
        f"{arrays_s / max(arrays.n_iter_, 1):.3f}", f"{arrays_mib:.0f}")
    row("same values as CSR", f"{csr_s:.2f}", f"{csr_s / max(csr.n_iter_, 1):.3f}",
        f"{csr_mib:.0f}")
    row("two numpy products of the same shapes", "", f"{products:.3f}", "")
    print("targets: " + ", ".join([
        check("time <= 0.5x CSR", arrays_s <= 0.5 * csr_s),
        check("peak memory <= 0.6x CSR", arrays_mib <= 0.6 * csr_mib)]))


# --- 2. CoNLL-2002 with word vectors ----------------------------------------------

def bench_conll(args):
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import FunctionTransformer

    from skcrf.features import SequenceUnion, WordVectorizer, learn_word_vectors

    home = data_home()
    X_train, y_train = load_conll2002("train", data_home=home)
    X_dev, _ = load_conll2002("testa", data_home=home)
    X_test, y_test = load_conll2002("testb", data_home=home)
    if args.train_fraction < 1.0:
        keep = int(len(X_train) * args.train_fraction)
        X_train, y_train = X_train[:keep], y_train[:keep]
    dims = args.vector_dims
    started = time.perf_counter()
    vectors, vocabulary = learn_word_vectors(list(X_train) + list(X_dev), n_components=dims,
                                             random_state=0)
    print(f"\n[conll] CoNLL-2002 esp: {len(X_train)} training sentences, {dims}-d vectors "
          f"of {len(vocabulary)} words (learned in {time.perf_counter() - started:.1f} s), "
          f"{args.conll_iter} iterations")

    def dicts():
        return make_pipeline(FunctionTransformer(lambda X: [sent2features(s) for s in X]),
                             SequenceVectorizer())

    def vector_part():
        return WordVectorizer(vectors, vocabulary=vocabulary, lowercase=True, norm="l2")

    lookup = vector_part().fit(X_train)
    # the table a user holds (``emb[word]``): one array per word, shared by its
    # tokens, with the union's values (lowercased, l2-normed, OOV row last)
    emb = {word: lookup.vectors_[row] for word, row in lookup.vocabulary_.items()}
    oov = lookup.vectors_[-1]

    def tutorial_dicts_and(sentences, add_vector):
        """The tutorial's dicts, each with ``add_vector(features, its word's vector)`` done."""
        out = []
        for sentence in sentences:
            features = sent2features(sentence)
            for f, token in zip(features, sentence):
                add_vector(f, emb.get(token[0].lower(), oov))
            out.append(features)
        return out

    def dicts_with_vectors(sentences):
        """The tutorial's dicts plus one line: ``f["vec"] = emb[word]``."""
        return tutorial_dicts_and(sentences, lambda f, vector: f.__setitem__("vec", vector))

    models = {
        "skcrf: dicts alone": make_pipeline(dicts(), CRFClassifier(max_iter=args.conll_iter)),
        f"skcrf: dicts with f['vec'] ({dims}-d)": make_pipeline(
            FunctionTransformer(dicts_with_vectors), CRFClassifier(max_iter=args.conll_iter)),
        f"skcrf: dicts + {dims}-d vectors": make_pipeline(
            SequenceUnion([("dicts", dicts()), ("vectors", vector_part())],
                          verbose_feature_names_out=False),
            CRFClassifier(max_iter=args.conll_iter)),
    }
    results = {}
    for name, model in models.items():
        seconds, mib = timed_fit(model, X_train, y_train)
        results[name] = (seconds, mib, span_f1_score(y_test, model.predict(X_test)))
    try:
        import sklearn_crfsuite
    except ImportError:
        sklearn_crfsuite = None
        print("sklearn-crfsuite is not installed: no comparison")
    if sklearn_crfsuite is not None:
        def with_vectors(sentences):
            # CRFsuite takes no vectors: one float feature per dimension
            return tutorial_dicts_and(sentences, lambda f, vector: f.update(
                {f"v{i}": float(v) for i, v in enumerate(vector)}))

        train_dicts, test_dicts = with_vectors(X_train), with_vectors(X_test)
        crfsuite = sklearn_crfsuite.CRF(algorithm="lbfgs", c1=0.1, c2=0.1,
                                        max_iterations=args.conll_iter)
        seconds, mib = timed_fit(crfsuite, train_dicts, y_train)
        results[f"sklearn-crfsuite: + {dims} float features"] = (
            seconds, mib, span_f1_score(y_test, crfsuite.predict(test_dicts)))
        del train_dicts, test_dicts
    row("", "fit (s)", "peak (MiB)", "entity F1")
    for name, (seconds, mib, f1) in results.items():
        row(name, f"{seconds:.1f}", f"{mib:.0f}", f"{f1:.4f}")
    alone, with_vec = results["skcrf: dicts alone"], results[f"skcrf: dicts + {dims}-d vectors"]
    checks = [check("vectors <= 2x dicts alone", with_vec[0] <= 2 * alone[0]),
              check("F1 with vectors >= without", with_vec[2] >= alone[2])]
    suite = results.get(f"sklearn-crfsuite: + {dims} float features")
    if suite is not None:
        checks.append(check("<= 0.2x sklearn-crfsuite", with_vec[0] <= 0.2 * suite[0]))
    print("targets: " + ", ".join(checks))


def bench_conll_memory(args):
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import FunctionTransformer

    from skcrf.features import SequenceUnion, WordVectorizer, learn_word_vectors

    home = data_home()
    X_train, y_train = load_conll2002("train", data_home=home)
    X_dev, _ = load_conll2002("testa", data_home=home)
    X_test, y_test = load_conll2002("testb", data_home=home)
    dims = args.memory_dims
    vectors, vocabulary = learn_word_vectors(list(X_train) + list(X_dev), n_components=dims,
                                             random_state=0)
    print(f"\n[conll-memory] CoNLL-2002 esp, {dims}-d vectors of {len(vocabulary)} words, "
          f"{args.conll_iter} iterations: peak memory of fit above its start")

    def union(dtype):
        return make_pipeline(SequenceUnion([
            ("dicts", make_pipeline(FunctionTransformer(lambda X: [sent2features(s) for s in X]),
                                    SequenceVectorizer())),
            ("vectors", WordVectorizer(vectors, vocabulary=vocabulary, lowercase=True,
                                       norm="l2", dtype=dtype))],
            verbose_feature_names_out=False), CRFClassifier(max_iter=args.conll_iter))

    row("", "fit (s)", "peak (MiB)", "entity F1")
    for dtype in (np.float64, np.float32):
        model = union(dtype)
        seconds, mib = timed_fit(model, X_train, y_train)
        row(f"skcrf: dicts + {dims}-d vectors ({np.dtype(dtype).name})", f"{seconds:.1f}",
            f"{mib:.0f}", f"{span_f1_score(y_test, model.predict(X_test)):.4f}")
        del model
    try:
        import sklearn_crfsuite
    except ImportError:
        print("sklearn-crfsuite is not installed: no comparison")
        return
    lookup = WordVectorizer(vectors, vocabulary=vocabulary, lowercase=True, norm="l2")
    lookup.fit(X_train)

    def float_features(sentences):
        """Each sentence's tutorial dicts plus ``v0``..``v<dims-1>``, made when read."""
        for sentence in sentences:
            features = sent2features(sentence)
            for f, vector in zip(features, lookup.transform([sentence]).dense):
                f.update({f"v{i}": float(v) for i, v in enumerate(vector)})
            yield features

    crfsuite = sklearn_crfsuite.CRF(algorithm="lbfgs", c1=0.1, c2=0.1,
                                    max_iterations=args.conll_iter)
    seconds, mib = timed_fit(crfsuite, float_features(X_train), y_train)
    f1 = span_f1_score(y_test, crfsuite.predict(float_features(X_test)))
    row(f"sklearn-crfsuite: + {dims} float features", f"{seconds:.1f}", f"{mib:.0f}",
        f"{f1:.4f}")


# --- 3. a synthetic numeric task ---------------------------------------------------

def bench_synthetic(args):
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    from skcrf.features import PerTokenTransformer

    X, y = make_sequence_classification(2 * args.synthetic_sequences, n_features=2,
                                        n_classes=3, length_range=(20, 60), stickiness=0.9,
                                        random_state=0)
    half = args.synthetic_sequences
    X_train, y_train, X_test, y_test = X[:half], y[:half], X[half:], y[half:]
    bounds = np.cumsum([len(x) for x in X_test])[:-1]
    print(f"\n[synthetic] make_sequence_classification: {half} training sequences "
          f"({sum(map(len, X_train))} tokens), 3 states, 2 features, stickiness 0.9")
    results = {}
    crf = make_pipeline(PerTokenTransformer(StandardScaler()), CRFClassifier())
    seconds, _ = timed_fit(crf, X_train, y_train)
    results["skcrf CRFClassifier"] = (seconds, crf.predict(X_test))
    logistic = LogisticRegression()
    seconds, _ = timed_fit(logistic, np.vstack(X_train), np.concatenate(y_train))
    results["LogisticRegression (per token)"] = (
        seconds, np.split(logistic.predict(np.vstack(X_test)), bounds))
    try:
        from hmmlearn.hmm import GaussianHMM
    except ImportError:
        print("hmmlearn is not installed: no HMM row")
    else:
        started = time.perf_counter()
        tokens, labels = np.vstack(X_train), np.concatenate(y_train)
        start = np.bincount([q[0] for q in y_train], minlength=3) + 1.0
        moves = np.ones((3, 3))
        for q in y_train:
            np.add.at(moves, (q[:-1], q[1:]), 1.0)
        hmm = GaussianHMM(n_components=3, covariance_type="full", init_params="", params="")
        hmm.n_features = 2
        hmm.startprob_ = start / start.sum()
        hmm.transmat_ = moves / moves.sum(axis=1, keepdims=True)
        hmm.means_ = np.array([tokens[labels == s].mean(axis=0) for s in range(3)])
        hmm.covars_ = np.array([np.cov(tokens[labels == s].T) + 1e-6 * np.eye(2)
                                for s in range(3)])
        seconds = time.perf_counter() - started
        predicted = hmm.predict(np.vstack(X_test), [len(x) for x in X_test])
        results["hmmlearn GaussianHMM (counted)"] = (seconds, np.split(predicted, bounds))
    row("", "fit (s)", "accuracy")
    accuracy = {}
    for name, (seconds, predictions) in results.items():
        accuracy[name] = flat_accuracy_score(y_test, predictions)
        row(name, f"{seconds:.2f}", f"{accuracy[name]:.4f}")
    gap = accuracy["skcrf CRFClassifier"] - accuracy["LogisticRegression (per token)"]
    print("targets: " + check(f"CRF >= LogisticRegression + 5 points ({100 * gap:+.1f})",
                              gap >= 0.05))


# --- 4. the online solvers on dense values ------------------------------------------

def _online_table(title, dense_X, csr_X, float_dicts, y, args):
    """Fit time, peak memory and training accuracy of each online solver on one data set."""
    from bench_trainers import TRAINERS

    try:
        import sklearn_crfsuite
    except ImportError:
        sklearn_crfsuite = None
    print(f"\n[online] {title}, {args.online_epochs} epochs")
    row("", "fit (s)", "peak (MiB)", "train acc.")
    for suite_name, (suite_params, params) in TRAINERS.items():
        fits = [("dense block", dense_X), ("same values as CSR", csr_X)]
        for label, X in fits:  # compiled first: the rows time training only
            with warnings.catch_warnings():  # one epoch of warm-up does not converge
                warnings.simplefilter("ignore", ConvergenceWarning)
                CRFClassifier(max_iter=1, random_state=0, **params).fit(X[:20], y[:20])
        for label, X in fits:
            model = CRFClassifier(max_iter=args.online_epochs, tol=0.0, n_iter_no_change=1000,
                                  random_state=0, **params)
            seconds, mib = timed_fit(model, X, y)
            row(f"skcrf {params['solver']}: {label}", f"{seconds:.2f}", f"{mib:.0f}",
                f"{flat_accuracy_score(y, model.predict(X)):.4f}")
            del model
        if sklearn_crfsuite is not None and float_dicts is not None:
            y_str = [[str(label) for label in labels] for labels in y]  # CRFsuite's are str
            crfsuite = sklearn_crfsuite.CRF(max_iterations=args.online_epochs, **suite_params)
            seconds, mib = timed_fit(crfsuite, float_dicts, y_str)
            row(f"sklearn-crfsuite {suite_name}: float features", f"{seconds:.2f}",
                f"{mib:.0f}",
                f"{flat_accuracy_score(y_str, crfsuite.predict(float_dicts)):.4f}")


def _as_float_dicts(X):
    return [[{f"v{i}": float(v) for i, v in enumerate(token)} for token in x] for x in X]


def bench_online(args):
    n_sequences = max(1, args.online_tokens // 20)
    X, y = make_sequence_classification(n_sequences, n_features=args.online_dims,
                                        n_classes=args.labels, length_range=(10, 30),
                                        class_sep=0.3, random_state=0)
    offsets = np.concatenate([[0], np.cumsum([len(x) for x in X])])
    as_csr = SequenceMatrix(sp.csr_matrix(np.vstack(X)), offsets)
    _online_table(f"{offsets[-1]} tokens x {args.online_dims} dims, {args.labels} labels",
                  X, as_csr, _as_float_dicts(X), y, args)
    if not args.online_conll:
        return
    from sklearn.preprocessing import FunctionTransformer
    from sklearn.pipeline import make_pipeline

    from skcrf.features import SequenceUnion, WordVectorizer, learn_word_vectors
    from skcrf.features.arrays import with_dense_columns

    home = data_home()
    X_train, y_train = load_conll2002("train", data_home=home)
    X_dev, _ = load_conll2002("testa", data_home=home)
    if args.train_fraction < 1.0:
        X_train = X_train[:int(len(X_train) * args.train_fraction)]
        y_train = y_train[:len(X_train)]
    dims = args.vector_dims
    vectors, vocabulary = learn_word_vectors(list(X_train) + list(X_dev), n_components=dims,
                                             random_state=0)
    union = SequenceUnion([
        ("dicts", make_pipeline(FunctionTransformer(lambda X: [sent2features(s) for s in X]),
                                SequenceVectorizer())),
        ("vectors", WordVectorizer(vectors, vocabulary=vocabulary, lowercase=True,
                                   norm="l2"))], verbose_feature_names_out=False)
    joined = union.fit_transform(X_train)
    names = np.concatenate([np.asarray(joined.feature_names, dtype=object),
                            np.asarray(joined.dense_names, dtype=object)])
    as_csr = SequenceMatrix(with_dense_columns(joined), joined.offsets, feature_names=names)
    block = joined.dense
    float_dicts, token = [], 0
    for sentence in X_train:
        features = sent2features(sentence)
        for f in features:
            f.update({f"v{i}": float(v) for i, v in enumerate(block[token])})
            token += 1
        float_dicts.append(features)
    _online_table(f"CoNLL-2002 esp.train ({len(X_train)} sentences): tutorial dicts + "
                  f"{dims}-d vectors", joined, as_csr, float_dicts, y_train, args)


# --- 5. cold start ---------------------------------------------------------------

DENSE_TOY = '''
import numpy as np
rng = np.random.default_rng(0)
X = [[{"w": "Ada", "title": True}, {"w": "Lovelace", "title": True}, {"w": "wrote"}],
     [{"w": "in"}, {"w": "Paris", "title": True}]] * 8
Y = [["B-PER", "I-PER", "O"], ["O", "B-LOC"]] * 8
Y_PARTIAL = [["B-PER", None, "O"], [{"O", "B-LOC"}, "B-LOC"]] * 8
ARRAYS = [rng.normal(size=(len(s), 4)) for s in X]
'''


def bench_cold(args):
    import tempfile

    from bench_compile import CHILD, run_child

    print("\n[cold] a fresh process, an empty numba cache: toy fit + predict + marginals")
    row("", "fit (s)", "total (s)", "skcrf specs", "all specs")
    for label, data, labels in (("dicts (sparse route)", "X", "Y"),
                                ("arrays (dense route)", "ARRAYS", "Y"),
                                ("arrays, partial labels", "ARRAYS", "Y_PARTIAL")):
        code = (CHILD.replace("TOY", DENSE_TOY).replace("MAKE", "CRFClassifier(max_iter=5)")
                .replace("DATA", data).replace("LABELS", labels))
        with tempfile.TemporaryDirectory() as cache:
            figures = run_child(code, cache, SKCRF_COMPILE_AHEAD="0")
        row(label, f"{figures['fit']:.2f}", f"{figures['total']:.2f}", figures["skcrf"],
            figures["all"])


ROWS = {"dense": bench_dense, "conll": bench_conll, "conll-memory": bench_conll_memory,
        "synthetic": bench_synthetic, "online": bench_online, "cold": bench_cold}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", nargs="+", choices=list(ROWS), default=list(ROWS))
    parser.add_argument("--tokens", type=int, default=200_000)
    parser.add_argument("--dims", type=int, default=256)
    parser.add_argument("--labels", type=int, default=10)
    parser.add_argument("--iters", type=int, default=20)
    parser.add_argument("--vector-dims", type=int, default=100)
    parser.add_argument("--conll-iter", type=int, default=50)
    parser.add_argument("--memory-dims", type=int, default=300)
    parser.add_argument("--train-fraction", type=float, default=1.0,
                        help="the first fraction of esp.train only (a quick run)")
    parser.add_argument("--synthetic-sequences", type=int, default=300)
    parser.add_argument("--online-tokens", type=int, default=20_000)
    parser.add_argument("--online-dims", type=int, default=64)
    parser.add_argument("--online-epochs", type=int, default=10)
    parser.add_argument("--online-conll", action="store_true",
                        help="the online row on CoNLL-2002 too (slow)")
    args = parser.parse_args()
    for name in args.rows:
        ROWS[name](args)


if __name__ == "__main__":
    main()
