"""CoNLL-2000 chunking with CRF++'s chunking template: skcrf from raw tokens against
sklearn-crfsuite given the same features as dicts.

Prints the featurizer's time and the feature names of one token, then each
library's fit time (skcrf's includes featurizing) and chunk F1 on the test set.

Run: python benchmarks/bench_templates.py [--max-iter 100]
The machine may be shared: run the two fits alone, or compare ratios.
"""

import argparse
import time
import warnings

from common import data_home
from seqeval.metrics import f1_score
from sklearn.pipeline import make_pipeline

from skcrf import CRFClassifier, SequenceVectorizer, TokenFeaturizer
from skcrf.datasets import load_conll2000
# CRF++'s example template (its README), made for this task; the tests read it too
from tests.features.test_template import README_TEMPLATE as TEMPLATE


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-iter", type=int, default=100)
    args = parser.parse_args()
    X, y = load_conll2000("train", data_home=data_home())
    X_test, y_test = load_conll2000("test", data_home=data_home())
    y, y_test = [list(s) for s in y], [list(s) for s in y_test]
    featurizer = TokenFeaturizer(template=TEMPLATE)
    started = time.perf_counter()
    features = featurizer.fit_transform(X)
    print(f"featurizing the training set: {time.perf_counter() - started:.2f} s, "
          f"{features.n_features} features")
    print("features of token 1:", sorted(featurizer.transform_dicts(X[:1])[0][1]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        started = time.perf_counter()
        pipe = make_pipeline(TokenFeaturizer(template=TEMPLATE), SequenceVectorizer(),
                             CRFClassifier(alpha=0.3, l1_ratio=1 / 3, max_iter=args.max_iter,
                                           tol=1e-5)).fit(X, y)
        took = time.perf_counter() - started
    predicted = [list(labels) for labels in pipe.predict(X_test)]
    print(f"skcrf, raw tokens:            fit {took:7.1f} s, F1 {f1_score(y_test, predicted):.4f}")
    import sklearn_crfsuite

    dicts, dicts_test = featurizer.transform_dicts(X), featurizer.transform_dicts(X_test)
    started = time.perf_counter()
    crf = sklearn_crfsuite.CRF(c1=0.1, c2=0.1, max_iterations=args.max_iter,
                               all_possible_transitions=True).fit(dicts, y)
    took = time.perf_counter() - started
    predicted = [list(labels) for labels in crf.predict(dicts_test)]
    print(f"sklearn-crfsuite, same dicts: fit {took:7.1f} s, F1 {f1_score(y_test, predicted):.4f}")


if __name__ == "__main__":
    main()
