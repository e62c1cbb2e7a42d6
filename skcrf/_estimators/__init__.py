"""What every CRF estimator shares (private): the estimators' machinery.

- :mod:`.base`: ``CRFEstimator``, the fit driver, prediction;
- :mod:`.queries`: the queries made of a structure's hooks (n-best, sequence
  probabilities);
- :mod:`.training`: the training problem an estimator hands the solvers;
- :mod:`.online`: online training, ``partial_fit`` and sample weights;
- :mod:`.pruning`: higher orders trained on a pruned lattice;
- :mod:`.constraints`: allowed transitions and tagging schemes;
- :mod:`.segment_tags`, :mod:`.semimarkov_state`: the semi-Markov CRF's tags
  and fitted state;
- :mod:`.fitted_state`: declarations of fitted state (what a model file may set);
- :mod:`.defaults`: the training defaults shared with the command line;
- :mod:`.compile_ahead`, :mod:`.compile_worker`: prediction kernels compiled in
  a second process during a fresh install's first fit.

Nothing here imports an estimator module at import time, except
:mod:`.compile_worker`, which runs only as a process of its own.
"""
