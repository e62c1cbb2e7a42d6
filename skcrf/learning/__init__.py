"""Learning: the training objective and the solvers, as plain functions of the weights."""
