# The two commands of the README, each setting up what it needs on first use:
#   make demo   train and evaluate a CRF on CoNLL-2002 Spanish NER, print the report
#   make test   run the test suite
# The corpora are read from $SKCRF_DATA, by default ../shared/data if it exists.

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

demo: $(VENV)/.installed
	$(PY) -m skcrf warmup --quiet
	MPLBACKEND=Agg $(PY) examples/conll2002_ner.py

test: $(VENV)/.installed
	$(PY) -m pytest

bench: $(VENV)/.installed
	cd benchmarks && ../$(PY) bench_core.py

docs: $(VENV)/.installed
	$(PY) -m sphinx -W --keep-going -b html docs docs/_build/html

clean:
	rm -rf $(VENV) build *.egg-info
