# MirrorFlow: two commands for a newcomer (see README):
#   make demo   set up everything, start two local Kafka clusters, seed them, show status
#   make test   set up everything, run the whole test suite on real clusters
# Setup is incremental: a stamp per step, so a second run installs and fetches nothing.

PYTHON ?= python3.11
VENV   := .venv
BIN    := $(VENV)/bin
JARS   := .cache/jars
PYTEST_ARGS ?=

export PIP_DISABLE_PIP_VERSION_CHECK := 1

.PHONY: setup venv jars browser demo test down clean

setup: venv jars

venv: $(VENV)/.installed
jars: $(JARS)/kafka/.complete $(JARS)/spark/.complete

$(VENV)/.installed: pyproject.toml
	@echo "== python: $(VENV) (dependencies pinned in pyproject.toml)"
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip setuptools wheel
	$(BIN)/pip install -q -e '.[dev]'
	@touch $@

# One Maven profile per folder (see pom.xml); the stamp is written last, so an
# interrupted fetch is retried by the next run.
$(JARS)/%/.complete: pom.xml
	@echo "== jars: $* from Maven Central into $(JARS)/$*"
	@rm -rf $(JARS)/$*
	mvn -q -B -P $* dependency:copy-dependencies
	@touch $@

# The Replication page's browser test drives Debian's chromium through its chromedriver;
# apt-get runs only when either is missing (root, or sudo when available).
browser:
	@test -x /usr/bin/chromium -a -x /usr/bin/chromedriver || { \
	  echo "== browser: chromium and chromium-driver from Debian (apt-get)"; \
	  SUDO=$$(test "$$(id -u)" = 0 || echo sudo); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq chromium chromium-driver; }

demo: setup
	$(BIN)/mirrorflow demo

test: setup browser
	$(BIN)/python -m pytest $(PYTEST_ARGS)

down:
	@test ! -x $(BIN)/mirrorflow || $(BIN)/mirrorflow dev down

clean: down
	rm -rf $(VENV) $(JARS) .mirrorflow
