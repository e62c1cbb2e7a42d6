"""One set of training defaults: every estimator, its docstring and the command line."""

import re
from fractions import Fraction

import pytest

import skcrf
from skcrf import CRFClassifier, SemiMarkovCRF
from skcrf._estimators import defaults as _defaults
from skcrf._cli._commands import _estimator, _regularization
from skcrf._cli._parser import build_parser
from skcrf.compat import CRF

DEFAULTS = {"alpha": _defaults.ALPHA, "l1_ratio": _defaults.L1_RATIO,
            "max_iter": _defaults.MAX_ITER, "tol": _defaults.TOL}


def _estimators():
    """Every public CRF estimator (TreeCRF too, once it exists)."""
    names = ["CRFClassifier", "SemiMarkovCRF", "TreeCRF"]
    return [getattr(skcrf, name) for name in names if hasattr(skcrf, name)]


def _documented_default(doc, name):
    """The value after ``default=`` in a numpydoc parameter line, as a number."""
    match = re.search(rf"^\s*{name} : [^\n]*default=([^\s,]+)\s*$", doc, re.MULTILINE)
    assert match, f"no '{name} : ..., default=...' line"
    return float(Fraction(match.group(1)))


@pytest.mark.parametrize("estimator", _estimators(), ids=lambda cls: cls.__name__)
def test_estimators_take_the_shared_defaults(estimator):
    params = estimator().get_params()
    assert {name: params[name] for name in DEFAULTS} == DEFAULTS
    for name, value in DEFAULTS.items():
        assert _documented_default(estimator.__doc__, name) == pytest.approx(value)


def test_the_command_line_trains_the_estimators_model():
    args = build_parser().parse_args(["train", "data.txt", "-m", "model.skcrf"])
    assert _regularization(args) == (_defaults.ALPHA, _defaults.L1_RATIO)
    for structure, estimator in (("chain", CRFClassifier), ("semimarkov", SemiMarkovCRF)):
        args.structure = structure
        crf = _estimator(args)
        assert isinstance(crf, estimator)
        assert {name: crf.get_params()[name] for name in DEFAULTS} == DEFAULTS


def test_defaults_are_crfsuites_usual_c1_c2():
    assert _defaults.crfsuite_c1_c2() == pytest.approx((0.1, 0.1))


def test_compat_keeps_sklearn_crfsuites_own_defaults():
    """CRFsuite's c1=0, c2=1 and delta=1e-5, whatever CRFClassifier's defaults are."""
    classifier, _ = CRF()._classifier()
    assert classifier.alpha == 2.0 and classifier.l1_ratio == 0.0
    assert classifier.tol == 1e-5
