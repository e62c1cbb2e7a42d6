"""What the documentation build passes to the example scripts (sphinx-gallery's ``reset_argv``).

The scripts train on the full corpora; with their default settings that takes
minutes on two cores, too long for a documentation build. The build caps
training at ``MAX_ITER`` iterations instead, through the scripts' own
``--max-iter`` option, so the scripts shown are exactly what a user runs.
"""

#: L-BFGS iterations of the CRFs trained while the documentation is built.
MAX_ITER = 50


def reset_argv(gallery_conf, script_vars):
    """The command-line arguments every example script gets during the build."""
    return ["--max-iter", str(MAX_ITER)]
