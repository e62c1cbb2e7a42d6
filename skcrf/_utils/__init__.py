"""Package-wide helpers (private): validation, kernel threads and type aliases.

- :mod:`.validation`: checks of user input and scores, with messages naming
  the sequence and token;
- :mod:`.parallel`: thread counts and calling the kernels safely;
- :mod:`.type_aliases`: the public API's annotations.
"""
