# The two commands of the README, each setting up what it needs on first use:
#   make demo   train and evaluate a CRF on CoNLL-2002 Spanish NER, print the report
#               (without the corpus and a network: on the sample that ships with skcrf)
#   make test   run the test suite
# The corpora are read from $SKCRF_DATA; for contributors, by default the shared
# folder beside the checkout (../shared/data) if it exists.

PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
# ../shared/data when it is there; else skcrf's own data home (~/skcrf_data),
# where the demo fetches its corpus on first use
ifneq ($(wildcard ../shared/data),)
export SKCRF_DATA ?= $(abspath ../shared/data)
endif

.PHONY: help demo test bench docs clean

help:
	@echo "make demo    train and evaluate a CRF on CoNLL-2002 Spanish NER, print the report"
	@echo "             (without the corpus and no network: on skcrf's embedded sample)"
	@echo "make test    run the test suite"
	@echo "make bench   benchmarks/bench_core.py: skcrf against sklearn-crfsuite"
	@echo "make docs    build the HTML docs into docs/_build/html"
	@echo "make clean   remove the environment and build files"
	@echo "The corpora are read from \$$SKCRF_DATA (now: $(or $(SKCRF_DATA),~/skcrf_data))."

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[test,bench,plot,docs]"
	touch $@

# The demo checks the data before anything else, and compiles only the kernels
# it uses, as it uses them (skcrf says so on stderr when that takes a while).
# DEMO_ARGS passes more options to the script, such as --max-iter 20.
demo: $(VENV)/.installed
	MPLBACKEND=Agg $(PY) examples/conll2002_ner.py --sample-if-unavailable $(DEMO_ARGS)

test: $(VENV)/.installed
	$(PY) -m pytest

bench: $(VENV)/.installed
	cd benchmarks && ../$(PY) bench_core.py

docs: $(VENV)/.installed
	$(PY) -m sphinx -W --keep-going -b html docs docs/_build/html

clean:
	rm -rf $(VENV) build *.egg-info
