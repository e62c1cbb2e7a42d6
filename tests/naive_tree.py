"""Brute-force references for tree CRFs: enumerate every labelling of every forest.

Exponential in the number of nodes, so only for small problems; obviously right
by construction, which is what makes them oracles for the tree kernels and the
tree structure's objective. A forest is given as in the kernels: ``parents[v]``
is node ``v``'s parent within its sequence, -1 for a root; the score of a
labelling ``y`` is::

    sum_v unary[v, y_v] + sum_{roots r} root[y_r] + sum_{links p -> v} T[y_p, y_v]

:func:`random_forest` and :func:`batch_of_forests` draw the forests the tests
enumerate.
"""

import itertools

import numpy as np
from scipy.special import logsumexp


def labelling_score(unary, transitions, root, parents, labels, edges=None):
    """Log score of one labelling of one forest (unary: (n, n_classes)).

    With ``edges`` (n, n_classes, n_classes), the link into v scores
    ``edges[v, parent's label, v's label]`` instead of ``transitions``.
    """
    score = 0.0
    for v, label in enumerate(labels):
        score += unary[v, label]
        p = parents[v]
        if p < 0:
            score += root[label]
        else:
            score += (transitions if edges is None else edges[v])[labels[p], label]
    return score


def all_labellings(n, n_classes):
    """Every labelling of ``n`` nodes, one per row: (n_classes ** n, n) int64."""
    return np.array(list(itertools.product(range(n_classes), repeat=n)),
                    dtype=np.int64).reshape(-1, n)


def all_scores(unary, transitions, root, parents, labellings):
    """:func:`labelling_score` of every row of ``labellings``, summed term by term."""
    n = unary.shape[0]
    scores = unary[np.arange(n), labellings].sum(axis=1)
    for v in range(n):
        p = parents[v]
        scores += (root[labellings[:, v]] if p < 0
                   else transitions[labellings[:, p], labellings[:, v]])
    return scores


def enumerate_forest(unary, transitions, root, parents):
    """(log Z, marginals, expected link counts [parent, child], best labelling, best score).

    An infeasible forest (every labelling scores -inf) has log Z -inf and
    all-zero marginals and counts; its "best" labelling is arbitrary.
    """
    n, n_classes = unary.shape
    marginals = np.zeros((n, n_classes))
    counts = np.zeros((n_classes, n_classes))
    if n == 0:
        return 0.0, marginals, counts, np.zeros(0, dtype=np.int64), 0.0
    labellings = all_labellings(n, n_classes)
    scores = all_scores(unary, transitions, root, parents, labellings)
    log_z = logsumexp(scores)
    top = int(np.argmax(scores))
    best = labellings[top]
    if log_z == -np.inf:
        return log_z, marginals, counts, best, scores[top]
    probs = np.exp(scores - log_z)
    for v in range(n):
        np.add.at(marginals[v], labellings[:, v], probs)
        if parents[v] >= 0:
            np.add.at(counts, (labellings[:, parents[v]], labellings[:, v]), probs)
    return log_z, marginals, counts, best, scores[top]


def enumerate_batch(unary, transitions, root, parents, offsets):
    """Brute force over a batch in the kernels' layout.

    Returns (log_z, marginals, link_counts, best labellings, best scores), the
    counts summed over the sequences.
    """
    n_classes = unary.shape[1]
    log_z, marginals, best, best_scores = [], [np.zeros((0, n_classes))], [], []
    counts = np.zeros((n_classes, n_classes))
    for lo, hi in zip(offsets[:-1], offsets[1:]):
        lz, m, c, b, s = enumerate_forest(unary[lo:hi], transitions, root, parents[lo:hi])
        log_z.append(lz)
        marginals.append(m)
        counts += c
        best.append(b)
        best_scores.append(s)
    return (np.array(log_z), np.concatenate(marginals), counts,
            np.concatenate(best + [np.zeros(0, dtype=np.int64)]), np.array(best_scores))


def feature_counts(x, parents, labels, n_classes):
    """Phi of one labelling as dense blocks: state (n_classes, n_features), links, roots."""
    state = np.zeros((n_classes, x.shape[1]))
    links = np.zeros((n_classes, n_classes))
    roots = np.zeros(n_classes)
    for v, label in enumerate(labels):
        state[label] += x[v]
        if parents[v] < 0:
            roots[label] += 1
        else:
            links[labels[parents[v]], label] += 1
    return state, links, roots


def negative_log_likelihood(x, offsets, parents, label_ids, state, transitions, root):
    """Brute-force sum_q -log p(y_q | x_q) and its gradient E[Phi] - Phi(gold), dense.

    ``x`` is the dense (n_tokens, n_features) feature matrix and ``state`` the
    dense (n_classes, n_features) state weights. Returns ``(loss, (state
    gradient, transitions gradient, root gradient))``; an infeasible gold
    labelling gives an infinite loss.
    """
    n_classes = state.shape[0]
    loss = 0.0
    grad = [np.zeros_like(state), np.zeros_like(transitions), np.zeros_like(root)]
    for lo, hi in zip(offsets[:-1], offsets[1:]):
        if hi == lo:
            continue
        xs, ps = x[lo:hi], parents[lo:hi]
        unary = xs @ state.T
        labellings = list(itertools.product(range(n_classes), repeat=hi - lo))
        scores = np.array([labelling_score(unary, transitions, root, ps, y)
                           for y in labellings])
        log_z = logsumexp(scores)
        gold = label_ids[lo:hi]
        loss += log_z - labelling_score(unary, transitions, root, ps, gold)
        for y, prob in zip(labellings, np.exp(scores - log_z)):
            for total, phi in zip(grad, feature_counts(xs, ps, y, n_classes)):
                total += prob * phi
        for total, phi in zip(grad, feature_counts(xs, ps, gold, n_classes)):
            total -= phi
    return loss, tuple(grad)


def layout_loss_and_gradient(structure, x, offsets, parents, label_ids, w, l2=0.0):
    """The objective of a TreeStructure by brute force, its gradient in the layout of ``w``.

    ``loss = sum_q -log p(y_q | x_q) + l2 / 2 * ||w||^2``; the state block of
    the gradient holds the (feature, label) pairs of ``structure.state_pairs``
    in their order.
    """
    blocks = structure.layout.views(w)
    pairs = structure.state_pairs
    state = pairs.to_dense(blocks["state"])
    loss, (g_state, g_transitions, g_root) = negative_log_likelihood(
        x, offsets, parents, label_ids, state, blocks["transitions"], blocks["root"])
    grad = structure.layout.zeros()
    views = structure.layout.views(grad)
    views["state"][:] = g_state[pairs.labels, pairs.feature_of_pairs()]
    views["transitions"][:] = g_transitions
    views["root"][:] = g_root
    return loss + 0.5 * l2 * (w @ w), grad + l2 * w


#: Shapes of the random forests: a chain, a chain whose root is its last node,
#: a star, only roots, and random forests (parents before or after their child).
SHAPES = ("path", "reversed", "star", "roots", "random")


def labels_down_the_forest(rng, parents, keeps):
    """Labels "A"/"B" of a forest: random at the roots, then down the trees.

    A child gets its parent's label if ``keeps(child)``, else the other one.
    """
    labels = [None] * len(parents)
    pending = [v for v in range(len(parents)) if parents[v] < 0]
    for v in pending:
        labels[v] = "A" if rng.random() < 0.5 else "B"
    while pending:
        v = pending.pop()
        for child in np.flatnonzero(parents == v):
            keep = keeps(child)
            labels[child] = labels[v] if keep else ("B" if labels[v] == "A" else "A")
            pending.append(child)
    return labels


def random_forest(rng, n, shape="random"):
    """Parents (local indices, -1 for a root) of a forest of ``n`` nodes."""
    if shape == "path":
        return np.arange(-1, n - 1, dtype=np.int64)
    if shape == "reversed":
        parents = np.arange(1, n + 1, dtype=np.int64)
        parents[n - 1:] = -1
        return parents
    if shape == "roots":
        return np.full(n, -1, dtype=np.int64)
    parents = np.full(n, -1, dtype=np.int64)
    if n == 0:
        return parents
    if shape == "star":
        centre = int(rng.integers(n))
        parents[:] = centre
        parents[centre] = -1
        return parents
    # a random order of creation: each node hangs from an earlier-created one
    # (or is a root), so parents point forward and backward in index order
    order = rng.permutation(n)
    for k in range(1, n):
        if rng.random() >= 0.2:
            parents[order[k]] = order[rng.integers(k)]
    return parents


def batch_of_forests(rng, lengths, shapes):
    """(parents, offsets) of one forest per length, local parent indices."""
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    parents = [random_forest(rng, n, shape) for n, shape in zip(lengths, shapes)]
    return np.concatenate([np.zeros(0, dtype=np.int64)] + parents), offsets


def enumerate_forest_edges(unary, edges, root, parents):
    """Brute force with a score per link: (log Z, marginals, pair marginals, best, best score).

    ``edges[v]`` scores the link into node v [parent label, v's label] (ignored
    for a root); the pair marginals are per link, zero for a root.
    """
    n, n_classes = unary.shape
    marginals = np.zeros((n, n_classes))
    pairs = np.zeros((n, n_classes, n_classes))
    if n == 0:
        return 0.0, marginals, pairs, np.zeros(0, dtype=np.int64), 0.0
    labellings = all_labellings(n, n_classes)
    scores = unary[np.arange(n), labellings].sum(axis=1)
    for v in range(n):
        p = parents[v]
        scores = scores + (root[labellings[:, v]] if p < 0
                           else edges[v][labellings[:, p], labellings[:, v]])
    log_z = logsumexp(scores)
    top = int(np.argmax(scores))
    if log_z == -np.inf:
        return log_z, marginals, pairs, labellings[top], scores[top]
    probs = np.exp(scores - log_z)
    for v in range(n):
        np.add.at(marginals[v], labellings[:, v], probs)
        if parents[v] >= 0:
            np.add.at(pairs[v], (labellings[:, parents[v]], labellings[:, v]), probs)
    return log_z, marginals, pairs, labellings[top], scores[top]


def edge_feature_counts(x, parents, labels, n_classes):
    """Phi of one labelling's link features: (n_features, n_classes ** 2), x of the child."""
    counts = np.zeros((x.shape[1], n_classes * n_classes))
    for v, label in enumerate(labels):
        if parents[v] >= 0:
            counts[:, labels[parents[v]] * n_classes + label] += x[v]
    return counts
