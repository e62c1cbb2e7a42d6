"""The scikit-learn tags every estimator of sequences shares."""


def sequence_tags(tags, token_input, *, y_required=False):
    """Mark ``tags`` (from ``super().__sklearn_tags__()``) as those of an estimator of sequences.

    Parameters
    ----------
    tags : sklearn.utils.Tags
        The tags to change, in place.
    token_input : {"dict", "string"}
        What a token is: a feature dict, or a word (or tuple of strings).
    y_required : bool, default=False
        Whether fit needs label sequences.

    Returns
    -------
    tags : sklearn.utils.Tags
        ``tags``: X is a list of sequences of tokens, never a 2-D array.
    """
    tags.input_tags.two_d_array = False
    setattr(tags.input_tags, token_input, True)
    if y_required:
        tags.target_tags.required = True
    return tags
