"""Hostile model files: every estimator type, edited with a recomputed checksum.

Shared by ``tests/test_hostile_models.py`` and the child processes it runs
the edited models' predictions in (a crash there must not take the test
session down). An edit changes one array's shape, dtype or a value, or one
number of the description; the file keeps a valid size and checksum, so
the loader's own checks are all that stand between it and the kernels.

An edited model is either refused by ``load_model`` with a ValueError naming
the file, or it predicts correctly: :func:`check_predictions` compares its
Viterbi labelling's probability and its marginals with brute force over
every labelling, computed from the loaded weights in numpy.
"""

import io
import json
import sys
import traceback
import warnings

import numpy as np
import scipy.sparse as sp

from tests import _model_files as model_files

_WORDS = ["Pedro", "vive", "en", "Madrid", "Ana", "viaja", "a", "La", "Paz", "Luis",
          "trabaja", "Quito", ".", "es", "grande", "y", "con", "el"]


def _sentences(seed, n=24):
    """Short sentences of (word, POS) tokens and IOB2 tags, with enough distinct features
    that the vocabulary is stored in bulk (as arrays), as in any real model."""
    rng = np.random.default_rng(seed)
    tokens, tags = [], []
    for _ in range(n):
        length = int(rng.integers(2, 6))
        words = [_WORDS[k] for k in rng.integers(0, len(_WORDS), size=length)]
        tokens.append([(w, "NP" if w.istitle() else "X") for w in words])
        sentence_tags, inside = [], False
        for w in words:
            if w.istitle():
                sentence_tags.append("I-PER" if inside and rng.random() < 0.5 else
                                     ("B-PER" if rng.random() < 0.6 else "B-LOC"))
                inside = True
            else:
                sentence_tags.append("O")
                inside = False
        tags.append(sentence_tags)
    return tokens, tags


TOKENS, TAGS = _sentences(0)
# what predictions run on: short, so brute force over all labellings is cheap
TEST_TOKENS = [sentence[:5] for sentence in _sentences(1, n=4)[0]]


def dicts(tokens, tree=False):
    out = []
    for sentence in tokens:
        out.append([{"w": word.lower(), "pos": pos, "title": word.istitle(),
                     "suffix": word[-2:], "len": len(word) / 4,
                     **({"__parent__": -1 if i == 0 else i - 1} if tree else {})}
                    for i, (word, pos) in enumerate(sentence)])
    return out


def int_tags(tags):
    return [[{"O": 0, "B-PER": 7, "I-PER": 8, "B-LOC": -3}[t] for t in s] for s in tags]


def _models():
    """(name, fitted model, input of the test sequences) of every estimator type."""
    from sklearn.pipeline import make_pipeline

    from skcrf import (CRFClassifier, CRFClassifierCV, SemiMarkovCRF, SequenceHasher,
                       SequenceVectorizer, TokenFeaturizer, TreeCRF)
    from skcrf.compat import CRF

    common = dict(alpha=0.1, max_iter=15, n_jobs=1)
    X, Xtree = dicts(TOKENS), dicts(TOKENS, tree=True)
    plain = [["O" if t == "O" else t[2:] for t in s] for s in TAGS]
    cases = [
        ("chain", CRFClassifier(**common).fit(X, TAGS), "dicts"),
        ("chain-int-labels", CRFClassifier(**common).fit(X, int_tags(TAGS)), "dicts"),
        ("chain-bio", CRFClassifier(allowed_transitions="bio", **common).fit(X, TAGS), "dicts"),
        ("chain-order2", CRFClassifier(order=2, **common).fit(X, TAGS), "dicts"),
        ("chain-transition-features",
         CRFClassifier(transition_features=["pos="], **common).fit(X, TAGS), "dicts"),
        ("chain-cv", CRFClassifierCV(alphas=[0.1, 1.0], cv=2, max_iter=15, n_jobs=1)
         .fit(X, TAGS), "dicts"),
        ("semimarkov", SemiMarkovCRF(**common).fit(X, TAGS), "dicts"),
        ("semimarkov-plain", SemiMarkovCRF(scheme="plain", **common).fit(X, plain), "dicts"),
        ("semimarkov-order2", SemiMarkovCRF(order=2, **common).fit(X, TAGS), "dicts"),
        ("tree", TreeCRF(**common).fit(Xtree, TAGS), "tree"),
        ("compat", CRF(max_iterations=15, c1=0.05, c2=0.05).fit(X, TAGS), "dicts"),
        ("pipeline", make_pipeline(TokenFeaturizer(window=1), SequenceVectorizer(),
                                   CRFClassifier(**common)).fit(TOKENS, TAGS), "tokens"),
        # issue 43: the online solvers' state (SGD with L1 and averages over an order-2
        # chain's patterns, AROW's covariances), a pruned lattice's pruner, a hasher
        ("chain-online-sgd", CRFClassifier(solver="sgd", order=2, l1_ratio=0.5, average=True,
                                           eta0=0.05, alpha=0.1, max_iter=3, n_jobs=1,
                                           random_state=0).fit(X, TAGS), "dicts"),
        ("chain-online-arow", CRFClassifier(solver="arow", max_iter=3, n_jobs=1,
                                            random_state=0).fit(X, TAGS), "dicts"),
        ("chain-pruned", CRFClassifier(order=2, prune_threshold=1e-3, **common).fit(X, TAGS),
         "dicts"),
        ("hasher-pipeline", make_pipeline(SequenceHasher(n_features=64),
                                          CRFClassifier(solver="perceptron", max_iter=3,
                                                        n_jobs=1, random_state=0))
         .fit(X, TAGS), "dicts"),
        # issue 43, item 31: a wide hashed input, of which the model keeps the used
        # columns (feature_columns_), with an online solver's state over them
        ("hasher-wide-pipeline", make_pipeline(SequenceHasher(n_features=2 ** 20),
                                               CRFClassifier(solver="sgd", max_iter=3,
                                                             n_jobs=1, random_state=0))
         .fit(X, TAGS), "dicts"),
        *_gazetteer_models(common),
        ("vectorizer", SequenceVectorizer().fit(X), "dicts"),
        ("featurizer", TokenFeaturizer(window=2, prefixes=(1, 3)), "tokens"),
    ]
    return cases


def _gazetteer_models(common):
    """A featurizer with a gazetteer file, alone and in a pipeline (issue 43, items 6 and 12).

    The file is gone once they are fitted: their model files carry the entries,
    and a loaded model that opened the path would fail (not a ValueError).
    """
    import tempfile
    from pathlib import Path

    from sklearn.pipeline import make_pipeline

    from skcrf import CRFClassifier, SequenceVectorizer, TokenFeaturizer

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "places.tsv"
        path.write_text("Madrid\tLOC\nLa Paz\tLOC\nQuito\tLOC\tCITY\nPedro\tPER\n"
                        "Ana\tPER\nLuis Quito\tPER\n", encoding="utf-8")
        featurizer = TokenFeaturizer(window=1, gazetteer=str(path)).fit(TOKENS)
        pipeline = make_pipeline(TokenFeaturizer(gazetteer=str(path)), SequenceVectorizer(),
                                 CRFClassifier(**common)).fit(TOKENS, TAGS)
    return [("gazetteer-featurizer", featurizer, "tokens"),
            ("gazetteer-pipeline", pipeline, "tokens")]


def test_input(kind):
    if kind == "tokens":
        return TEST_TOKENS
    return dicts(TEST_TOKENS, tree=kind == "tree")


def saved_models():
    """name -> (file bytes, input kind) of every estimator type."""
    from skcrf import save_model

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cases = _models()
    saved = {}
    for name, model, kind in cases:
        buffer = io.BytesIO()
        save_model(model, buffer)
        saved[name] = (buffer.getvalue(), kind)
    return saved


# --- edits ------------------------------------------------------------------------------------

_BAD_NUMBERS = [np.nan, np.inf, -np.inf, 1e300, -1e300, -10.0**9, 10.0**6, 2.0**31, -1.0, 0.0,
                0.5, 3.0]


def _npy(array):
    buffer = io.BytesIO()
    np.lib.format.write_array(buffer, array, allow_pickle=False)
    return buffer.getvalue()


def _array_edits(array, rng):
    """Ways to damage one array: (what, new array) pairs, one of each kind that applies."""
    edits = []
    if array.ndim and array.shape[0]:
        edits += [("cut to one row", array[:1]), ("last row dropped", array[:-1]),
                  ("a row added", np.concatenate([array, array[:1]])),
                  ("emptied", array[:0])]
    if array.ndim >= 2:
        edits += [("transposed", np.ascontiguousarray(array.T)),
                  ("last column dropped", np.ascontiguousarray(array[..., :-1])),
                  ("flattened", array.ravel())]
    edits.append(("an axis added", array[np.newaxis]))
    if array.ndim == 0:
        edits.append(("made 1-D", array.reshape(1)))
    for dtype in (np.float32, np.int64, np.int32, np.bool_, np.complex128, np.uint8,
                  array.dtype.newbyteorder(">")):
        try:
            edits.append((f"as {np.dtype(dtype)}", array.astype(dtype)))
        except (TypeError, ValueError):
            pass
    if array.size:
        flat_index = int(rng.integers(array.size))
        where = np.unravel_index(flat_index, array.shape)
        for value in _BAD_NUMBERS + [float(rng.normal() * 10)]:
            changed = array.copy()
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    changed[where] = (value if changed.dtype.kind in "fc" else
                                      not changed[where] if changed.dtype.kind == "b" else
                                      np.array(value).astype(changed.dtype)
                                      if np.isfinite(value) else 0)
            except (OverflowError, ValueError, TypeError):
                continue
            if changed.dtype.kind in "fc" or not np.array_equal(changed, array):
                edits.append((f"[{where}] = {value!r}", changed))
        if array.dtype.kind in "iu":
            for value in (-1, -(10**9), 10**6, int(array.max()) + 1, 2**31 - 1):
                changed = array.copy()
                try:
                    changed[where] = value
                except OverflowError:
                    continue
                edits.append((f"[{where}] = {value}", changed))
    return edits


def _json_sites(node, path=()):
    """Paths of the numbers (not bools) and str values in a description's model tree."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key in ("$type", "ref", "ids", "class"):
                continue
            yield from _json_sites(value, path + (key,))
    elif isinstance(node, list):
        for k, value in enumerate(node):
            yield from _json_sites(value, path + (k,))
    elif isinstance(node, (int, float, str)) and not isinstance(node, bool):
        yield path


def _json_values(value, rng):
    if isinstance(value, str):
        return ["", "plain", "IOB2", "x" * 3, 1]
    if isinstance(value, float):
        return [value * 2, -value, 0.0, 1e308, "nan", None]
    return [value + 1, value - 1, 0, -1, -(10**9), 10**6, 10**18, 2**64, 1.5, None, "1"]


def _set(tree, path, value):
    for key in path[:-1]:
        tree = tree[key]
    tree[path[-1]] = value


def edited_files(data, rng, count, always=None):
    """``count`` random edits of the model file ``data``: (what, bytes) pairs.

    With ``always`` (a str), every edit whose description holds it is among
    them (a state the random draw would otherwise reach a few times only).
    """
    header, payload = model_files.split(data)
    contents = model_files.members(payload)
    tree = json.loads(contents["model.json"])
    candidates = []
    for name, member in contents.items():
        if name.endswith(".npy"):
            array = np.lib.format.read_array(io.BytesIO(member), allow_pickle=False)
            for what, changed in _array_edits(array, rng):
                candidates.append((f"{name} {what}", {name: _npy(changed)}))
    for path in _json_sites(tree["model"]):
        original = tree["model"]
        for key in path:
            original = original[key]
        for value in _json_values(original, rng):
            candidates.append((f"model{''.join(f'[{k!r}]' for k in path)} = {value!r}",
                               ("json", path, value)))
    forced = [k for k, (what, _) in enumerate(candidates) if always and always in what]
    rest = np.setdiff1d(np.arange(len(candidates)), forced)
    drawn = rng.choice(rest, size=max(0, min(count - len(forced), rest.shape[0])),
                       replace=False)
    for k in sorted(forced + drawn.tolist()):
        what, change = candidates[k]
        new_contents = dict(contents)
        if isinstance(change, tuple):
            edited = json.loads(contents["model.json"])
            _set(edited["model"], change[1], change[2])
            new_contents["model.json"] = json.dumps(edited).encode()
        else:
            new_contents.update(change)
        yield what, model_files.model_file(header, model_files.archive(new_contents))


# --- what a loaded model must predict (run in a child process) ---------------------------------

def _final_step(model, X):
    """The CRF estimator of ``model`` and what it takes (None for a transformer)."""
    from sklearn.pipeline import Pipeline

    from skcrf.compat import CRF
    from skcrf.compat._crf import _sequences

    if isinstance(model, Pipeline):
        return model[-1], model[:-1].transform(X)
    if isinstance(model, CRF):
        return model.estimator_, model.vectorizer_.transform(_sequences(X))
    if hasattr(model, "predict"):
        return model, X
    return None, X


def _oracle(crf, features, offsets):
    """Brute force from the loaded weights: (log Z, best score, marginals or None)."""
    from skcrf import SemiMarkovCRF, TreeCRF
    from tests import (naive, naive_chain2, naive_edges, naive_patterns, naive_semimarkov,
                       naive_tree)

    x = sp.csr_matrix((features.data if features.data is not None
                       else np.ones(features.indices.shape[0]), features.indices,
                       features.indptr), shape=(features.indptr.shape[0] - 1,
                                                features.n_features)).toarray()
    with np.errstate(all="ignore"):
        # each token's scores less their maximum: the same probabilities, and a huge
        # score (one weight of 1e300) does not round the others away in the sums
        unary = x @ crf.coef_.T
        unary -= unary.max(axis=1, keepdims=True, initial=-np.inf)
        if isinstance(crf, TreeCRF):
            log_z, marginals, _, _, best = naive_tree.enumerate_batch(
                unary, crf.transition_coef_, crf.root_coef_, features.parents, offsets)
            return log_z, best, marginals
        if isinstance(crf, SemiMarkovCRF) and "label_patterns_" in vars(crf):
            return _semimarkov_patterns_oracle(crf, x, unary, offsets)
        if isinstance(crf, SemiMarkovCRF):
            log_z, *_, best = naive_semimarkov.enumerate_batch(
                unary, x @ crf.first_coef_.T, x @ crf.last_coef_.T, crf.length_coef_,
                crf.transition_coef_, crf.start_coef_, crf.end_coef_, offsets)
            return log_z, best, None
        T, start, end = crf.transition_coef_, crf.start_coef_, crf.end_coef_
        edge_coef = getattr(crf, "transition_feature_coef_", None)
        if edge_coef is not None:
            n_classes = T.shape[0]
            edges = T + (x @ edge_coef.toarray()).reshape(-1, n_classes, n_classes)
            edges -= edges.max(axis=(1, 2), keepdims=True)
            log_z, marginals, _, _, best = naive_edges.enumerate_edge_batch(
                unary, edges, start, end, offsets)
        elif hasattr(crf, "label_patterns_"):
            out = naive_patterns.enumerate_batch(unary, T, crf.label_patterns_,
                                                 crf.pattern_coef_, start, end, offsets)
            # the best labelling's score, as the other oracles give it
            best = np.array([ranked[0][0] if ranked else -np.inf for ranked in out["ranked"]])
            log_z, marginals = out["log_z"], out["marginals"]
        elif hasattr(crf, "transition2_coef_"):
            log_z, marginals, *_, best = naive_chain2.enumerate_batch2(
                unary, T, crf.transition2_coef_, start, end, offsets)
        else:
            log_z, marginals, _, _, best = naive.enumerate_batch(unary, T, start, end, offsets)
    return log_z, best, marginals


def _semimarkov_patterns_oracle(crf, x, unary, offsets):
    """(log Z, best score, None) of an order-d SemiMarkovCRF, by enumeration."""
    from tests.naive_semimarkov_patterns import enumerate_ordered

    first, last = x @ crf.first_coef_.T, x @ crf.last_coef_.T
    log_z, best = [], []
    for lo, hi in zip(offsets[:-1], offsets[1:]):
        found = enumerate_ordered((unary[lo:hi], first[lo:hi], last[lo:hi], crf.length_coef_,
                                   crf.transition_coef_, crf.start_coef_, crf.end_coef_),
                                  crf.label_patterns_, crf.pattern_coef_)
        log_z.append(found["log_z"])
        best.append(found["scores"][0] if found["scores"].size else -np.inf)
    return np.array(log_z), np.array(best), None


#: What predict or transform may refuse by design, with a message naming the cause:
#: scores past float64 (named by token); a featurizer's parameters that do not fit
#: the tokens (a word column beyond their columns, another width than at fit); a
#: hasher's width that is not the model's.
_CLEAR_REFUSALS = ("overflow float64", "but the tokens have",
                   "but this TokenFeaturizer was fitted on", "features, but")


def _clear_refusal(error):
    return any(text in str(error) for text in _CLEAR_REFUSALS)


def check_predictions(model, kind, reference=None):
    """Raise AssertionError unless ``model`` predicts what brute force says it should.

    Returns "ok", or "refused" when predict or transform raised one of the
    ValueErrors it raises by design (:data:`_CLEAR_REFUSALS`).
    """
    from skcrf._estimators.base import CRFEstimator

    X = test_input(kind)
    try:
        # a pipeline's transformers run here: they refuse as they do alone
        crf, Xt = _final_step(model, X)
    except ValueError as error:
        if _clear_refusal(error):
            return "refused"
        raise
    if crf is None:  # a transformer: what the plain-Python rules make of X
        try:
            out = model.transform(X)
        except ValueError as error:
            if _clear_refusal(error):
                return "refused"
            raise
        out._check_consistency()
        assert out.matrix.indices.max(initial=-1) < out.n_features
        if hasattr(model, "vocabulary_"):
            assert _named_entries(out) == _vectorized(model, X)
        else:
            assert _named_entries(out) == _featurized(model, X)
        return "ok"
    try:
        labels = crf.predict(Xt)
        features, offsets = crf._fitted_model()._features(Xt)
        log_proba = crf.sequence_log_proba(Xt, labels)
        marginals = crf.predict_marginals(Xt)
        nbest = (crf.predict_nbest(Xt, n=3)
                 if type(crf)._nbest is not CRFEstimator._nbest else None)
    except ValueError as error:
        if _clear_refusal(error):
            return "refused"
        raise
    classes = set(crf.classes_.tolist())
    for sequence, y in zip(X, labels, strict=True):
        assert len(y) == len(sequence) and set(y.tolist()) <= classes
    if "pruner_coef_" in vars(crf):
        # a pruned lattice's predictions are not brute force over every labelling:
        # valid labels and finite probabilities are what can be checked
        assert np.all(log_proba <= 1e-9) and not any(np.isnan(m).any() for m in marginals)
        return "ok"
    log_z, best, brute_marginals = _oracle(crf, features, offsets)
    feasible = np.isfinite(log_z) & np.isfinite(best)
    assert np.allclose(log_proba[feasible], (best - log_z)[feasible], rtol=1e-6, atol=1e-6), \
        (log_proba, best - log_z)
    for q, m in enumerate(marginals):
        assert not np.isnan(m).any()
        if feasible[q]:
            assert np.allclose(m.sum(axis=1), 1.0, atol=1e-6)
            if brute_marginals is not None:
                lo, hi = offsets[q], offsets[q + 1]
                assert np.allclose(m, brute_marginals[lo:hi], atol=1e-6)
    if nbest is not None:
        for q, labellings in enumerate(nbest):
            probabilities = [p for _, p in labellings]
            assert all(0 <= p <= 1 + 1e-9 for p in probabilities)
            assert probabilities == sorted(probabilities, reverse=True)
            if feasible[q]:
                assert np.isclose(probabilities[0], np.exp(best[q] - log_z[q]), atol=1e-6)
    if "solver_state_" in vars(crf):  # last: it changes the weights
        _continue_online(crf, Xt, labels)
    return "ok"


def _continue_online(crf, Xt, labels):
    """partial_fit from a loaded ``solver_state_``: the kernels that read it, unchecked.

    A ValueError (a state the parameters contradict, a batch that does not
    fit) is a clear refusal; a crash takes the child process down.
    """
    import contextlib

    try:
        # an edited verbose prints the epochs' table: stdout is the parent's protocol
        with contextlib.redirect_stdout(io.StringIO()):
            crf.partial_fit(Xt, [list(y) for y in labels])
    except ValueError:
        return
    assert np.isfinite(crf.coef_).all()


def _vectorized(vectorizer, X):
    """What SequenceVectorizer's rules make of the dicts ``X``, in plain Python: sorted
    (token, name, value) entries of the names in its vocabulary."""
    entries = {}
    t = 0
    for sentence in X:
        for token in sentence:
            for key, value in token.items():
                if isinstance(value, str):
                    name, value = f"{key}{vectorizer.separator}{value}", 1.0
                else:
                    name, value = str(key), float(value)
                if value and name in vectorizer.vocabulary_:
                    entries[t, name] = entries.get((t, name), 0.0) + value
            t += 1
    return sorted((t, name, value) for (t, name), value in entries.items())


def _featurized(featurizer, X):
    """The entries of the featurizer's reference path (per-token dicts, plain Python)."""
    entries = []
    t = 0
    for sentence in featurizer.transform_dicts(X):
        for token in sentence:
            for key, value in token.items():
                if isinstance(value, str):
                    entries.append((t, f"{key}={value}", 1.0))
                elif value:
                    entries.append((t, key, float(value)))
            t += 1
    return sorted(entries)


def _named_entries(matrix):
    names = matrix.feature_names
    coo = matrix.matrix.tocoo()
    return sorted(zip(coo.row.tolist(), names[coo.col].tolist(), coo.data.tolist()))


def main(manifest_path):
    """Check every model file of a manifest, one line of outcome each, on stdout.

    ``START k`` before model k and ``DONE k outcome`` after: if the process
    dies, the last START names the model that killed it.
    """
    from skcrf import load_model

    warnings.simplefilter("ignore")
    with open(manifest_path) as handle:
        manifest = json.load(handle)
    references = {}
    for k, entry in enumerate(manifest):
        print(f"START {k}", flush=True)
        try:
            model = load_model(entry["path"])
            reference = None
            if entry["reference"]:
                reference = references.get(entry["reference"])
                if reference is None:
                    reference = references[entry["reference"]] = load_model(entry["reference"])
            outcome = check_predictions(model, entry["kind"], reference)
        except Exception:  # noqa: BLE001 - reported to the parent, which fails
            outcome = "FAIL " + " | ".join(traceback.format_exc().strip().splitlines()[-3:])
        print(f"DONE {k} {outcome}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1])
