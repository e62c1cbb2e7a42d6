"""skcrf.datasets.make_sequence_classification: shapes, reproducibility, the walk's law."""

import numpy as np
import pytest

from skcrf.datasets import make_sequence_classification


def test_shapes_and_lengths_in_range():
    X, y = make_sequence_classification(40, n_features=3, n_classes=4, length_range=(0, 7),
                                        random_state=1)
    assert len(X) == len(y) == 40
    lengths = [x.shape[0] for x in X]
    assert lengths == [len(labels) for labels in y]
    assert min(lengths) >= 0 and max(lengths) <= 7
    assert 0 in lengths  # the range includes empty sequences
    assert all(x.shape[1] == 3 and x.dtype == np.float64 for x in X)
    assert set(np.concatenate(y).tolist()) <= {0, 1, 2, 3}


def test_random_state_reproduces_and_changes():
    first = make_sequence_classification(10, random_state=3)
    again = make_sequence_classification(10, random_state=np.random.RandomState(3))
    other = make_sequence_classification(10, random_state=4)
    for a, b in zip(first[0] + first[1], again[0] + again[1]):
        np.testing.assert_array_equal(a, b)
    assert not all(a.shape == b.shape and np.array_equal(a, b)
                   for a, b in zip(first[0], other[0]))


def test_return_lengths_is_the_stacked_list():
    X, y = make_sequence_classification(12, random_state=5)
    stacked, labels, lengths = make_sequence_classification(12, return_lengths=True,
                                                            random_state=5)
    np.testing.assert_array_equal(lengths, [len(x) for x in X])
    np.testing.assert_array_equal(stacked, np.concatenate(X))
    np.testing.assert_array_equal(labels, np.concatenate(y))


def test_stickiness_is_the_rate_of_stays():
    for stickiness in (0.5, 0.95):
        _, y = make_sequence_classification(400, n_classes=3, length_range=(30, 30),
                                            stickiness=stickiness, random_state=0)
        stays = np.mean(np.concatenate([labels[1:] == labels[:-1] for labels in y]))
        # 11,600 steps: the binomial's standard deviation is below 0.005
        assert abs(stays - stickiness) < 0.025


def test_fully_sticky_sequences_keep_one_state_and_first_states_vary():
    _, y = make_sequence_classification(60, n_classes=3, stickiness=1.0, random_state=2)
    assert all(len(set(labels.tolist())) == 1 for labels in y)
    assert len({labels[0] for labels in y}) == 3


def test_emissions_centre_on_their_state_means():
    X, y = make_sequence_classification(300, n_features=2, n_classes=2, class_sep=5.0,
                                        noise=0.1, random_state=0)
    X, y = np.concatenate(X), np.concatenate(y)
    for state in (0, 1):
        assert X[y == state].std(axis=0).max() < 0.12  # only the noise around one mean


@pytest.mark.parametrize("kwargs, message", [
    ({"n_sequences": -1}, "n_sequences"),
    ({"n_features": 0}, "n_features"),
    ({"n_classes": 2.5}, "n_classes"),
    ({"length_range": (5, 2)}, "length_range"),
    ({"length_range": "long"}, "length_range"),
    ({"stickiness": 1.5}, "stickiness"),
    ({"noise": float("nan")}, "noise"),
    ({"class_sep": -1.0}, "class_sep"),
])
def test_bad_parameters_are_named(kwargs, message):
    with pytest.raises(ValueError, match=message):
        make_sequence_classification(**kwargs)
