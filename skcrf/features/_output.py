"""``set_output`` of the transformers whose output is a SequenceMatrix.

scikit-learn's ``set_output(transform="pandas")`` (or ``"polars"``) asks a
transformer for a DataFrame. A SequenceMatrix is one sparse row of features
per token *and* the boundaries of the sequences, which a CRF needs and a
DataFrame cannot hold, so only the default output exists. This mixin says so
in one error, where scikit-learn's own message ("``set_output`` is not
available") says nothing of why; a Pipeline's ``set_output`` reaches it.
The global ``transform_output`` setting leaves these transformers alone
(``auto_wrap_output_keys=None``), so other transformers can still use it.
"""

__all__ = ["SequenceOutputMixin"]


class SequenceOutputMixin:
    """Adds ``set_output``: the default output only, else one error saying why."""

    #: How to get a DataFrame of the features anyway, for the error message.
    _dataframe_hint = ""

    def set_output(self, *, transform=None):
        """Accept scikit-learn's default output; refuse a DataFrame, saying why.

        Parameters
        ----------
        transform : {"default"} or None, default=None
            ``"default"`` and None keep the SequenceMatrix output. ``"pandas"``
            and ``"polars"`` raise a ValueError: a DataFrame cannot hold the
            boundaries of the sequences.

        Returns
        -------
        self : object
        """
        if transform in (None, "default"):
            return self
        raise ValueError(
            f"{type(self).__name__}.set_output(transform={transform!r}): its output is a "
            f"SequenceMatrix, one sparse row of features per token with the boundaries of "
            f"the sequences, which a CRF needs and a DataFrame cannot hold; only "
            f"transform='default' is available.{self._dataframe_hint}")
