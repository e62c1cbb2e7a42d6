"""Public names of a package imported on first use (PEP 562), so that ``import skcrf`` stays light."""

from importlib import import_module


def lazy_attributes(package, public, namespace):
    """The module-level ``__getattr__`` and ``__dir__`` of a package with lazy names.

    Parameters
    ----------
    package : str
        The package's ``__name__``.
    public : dict of str to str
        Each lazy name and the module (relative to ``package``) that defines it.
    namespace : dict
        The package's ``globals()``: a name is stored there once imported, so
        that later lookups skip ``__getattr__``.

    Returns
    -------
    __getattr__, __dir__ : callable
    """
    def __getattr__(name):
        module = public.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(import_module(module, package), name)
        namespace[name] = value  # later lookups skip this function
        return value

    def __dir__():
        return sorted(set(namespace) | set(public))

    return __getattr__, __dir__
