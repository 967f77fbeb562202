# MirrorFlow: two commands for a newcomer (see README):
#   make demo   set up everything, start two local Kafka clusters, seed them, show status
#   make test   set up everything, run the whole test suite on real clusters
# Setup is incremental: a stamp per step, so a second run installs and fetches nothing.

PYTHON ?= python3.11
VENV   := .venv
BIN    := $(VENV)/bin
JARS   := .cache/jars
PYTEST_ARGS ?=
CHAOS_ARGS ?=
# The fault proxy of the chaos harness (bench/chaos.py, tests marked `chaos`). The Go
# module proxy's version list stops at v2.5.0, but it serves v2.12.0, the newest release
# it has; it builds with Go 1.26. The stamp names the version: a new pin rebuilds.
TOXIPROXY_VERSION := v2.12.0
TOXIPROXY := .cache/bin/toxiproxy-server
TOXIPROXY_STAMP := .cache/bin/.toxiproxy-$(TOXIPROXY_VERSION)
# The validator of docker/kubernetes/ (tests/unit/dev/test_kubernetes.py), built from source through the Go
# module proxy, and the ServiceMonitor CRD it validates against, from prometheus-operator's Go module (the
# Kubernetes schemas themselves come from the PyPI package kubernetes-validate, in the dev extras).
KUBECONFORM_VERSION := v0.8.0
KUBECONFORM := .cache/bin/kubeconform
KUBECONFORM_STAMP := .cache/bin/.kubeconform-$(KUBECONFORM_VERSION)
PROMETHEUS_OPERATOR_VERSION := v0.85.0
CRDS := .cache/kubernetes/crds
CRDS_STAMP := $(CRDS)/.prometheus-operator-$(PROMETHEUS_OPERATOR_VERSION)

export PIP_DISABLE_PIP_VERSION_CHECK := 1

.PHONY: setup venv bytecode jars browser toxiproxy kubeconform demo test check chaos down clean

setup: venv bytecode jars

venv: $(VENV)/.installed
jars: $(JARS)/kafka/.complete $(JARS)/spark/.complete

$(VENV)/.installed: pyproject.toml
	@echo "== python: $(VENV) (dependencies pinned in pyproject.toml)"
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip setuptools wheel
	$(BIN)/pip install -q -e '.[dev]'
	@touch $@

# The project's own modules compiled to bytecode, at every run (only what changed is compiled again): where the
# environment sets PYTHONDONTWRITEBYTECODE (this machine does), the editable install leaves none, and every
# `mirrorflow` command and worker compiled ~100 modules from source (0.2 s of each `mirrorflow status`).
bytecode: venv
	@$(BIN)/python -m compileall -q -j 0 replicator dags plugins spark_jobs > /dev/null

# One Maven profile per folder (see pom.xml); the stamp is written last, so an
# interrupted fetch is retried by the next run.
# One Maven at a time (make -j): two sharing an empty local repository could fetch the same plugin at once.
$(JARS)/spark/.complete: | $(JARS)/kafka/.complete

$(JARS)/%/.complete: pom.xml
	@echo "== jars: $* from Maven Central into $(JARS)/$*"
	@rm -rf $(JARS)/$*
	mvn -q -B -P $* dependency:copy-dependencies
	@touch $@

# Toxiproxy's server from source, through the Go module proxy, into .cache/bin; the
# stamp is written last, so an interrupted build is retried by the next run.
toxiproxy: $(TOXIPROXY_STAMP)

$(TOXIPROXY_STAMP):
	@command -v go >/dev/null || { echo "toxiproxy: 'go' not found: install Go (1.23 or newer) to build the fault proxy"; exit 1; }
	@echo "== toxiproxy: github.com/Shopify/toxiproxy/v2/cmd/server@$(TOXIPROXY_VERSION) into $(TOXIPROXY)"
	@mkdir -p .cache/bin
	GOBIN=$(abspath .cache/bin) go install github.com/Shopify/toxiproxy/v2/cmd/server@$(TOXIPROXY_VERSION)
	mv .cache/bin/server $(TOXIPROXY)
	@rm -f .cache/bin/.toxiproxy-*
	@touch $@

# kubeconform from source, as toxiproxy above; and the ServiceMonitor CRD's YAML out of prometheus-operator's
# module (`go mod download -json` prints the folder it unpacked to). Stamps name the versions: a new pin
# fetches again.
kubeconform: $(KUBECONFORM_STAMP) $(CRDS_STAMP)

$(KUBECONFORM_STAMP):
	@command -v go >/dev/null || { echo "kubeconform: 'go' not found: install Go (1.23 or newer) to build the Kubernetes manifests' validator"; exit 1; }
	@echo "== kubeconform: github.com/yannh/kubeconform/cmd/kubeconform@$(KUBECONFORM_VERSION) into $(KUBECONFORM)"
	@mkdir -p .cache/bin
	GOBIN=$(abspath .cache/bin) go install github.com/yannh/kubeconform/cmd/kubeconform@$(KUBECONFORM_VERSION)
	@rm -f .cache/bin/.kubeconform-*
	@touch $@

$(CRDS_STAMP):
	@command -v go >/dev/null || { echo "crds: 'go' not found: install Go to fetch prometheus-operator's CRDs"; exit 1; }
	@echo "== crds: ServiceMonitor of github.com/prometheus-operator/prometheus-operator@$(PROMETHEUS_OPERATOR_VERSION) into $(CRDS)"
	@rm -rf $(CRDS) && mkdir -p $(CRDS)
	dir=$$(go mod download -json github.com/prometheus-operator/prometheus-operator@$(PROMETHEUS_OPERATOR_VERSION) \
	       | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$$/\1/p'); \
	  test -n "$$dir" && install -m 0644 "$$dir/example/prometheus-operator-crd/monitoring.coreos.com_servicemonitors.yaml" $(CRDS)/
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

# The suite in two parts (tests/run_suite.py): all but the short fault runs in TEST_PROCESSES pytest processes side
# by side (pytest-xdist, a module per process), then the three short fault runs (marker chaos) two at a time, with
# nothing else loading the machine. TEST_MARKERS narrows both (e.g. "not kafka and not spark and not airflow": the pure part, in seconds);
# PYTEST_ARGS go to both (paths, -q, -k, --durations); TEST_PROCESSES=1 runs part one in one process.
TEST_PROCESSES ?= 3
TEST_MARKERS ?=

test: setup browser toxiproxy kubeconform
	$(BIN)/python tests/run_suite.py --processes $(TEST_PROCESSES) --markers "$(TEST_MARKERS)" -- $(PYTEST_ARGS)

# Lint and types (the pinned ruff and mypy of the dev extras): ruff over the whole tree,
# mypy strict over replicator/ (both configured in pyproject.toml). Needs no cluster.
check: venv
	$(BIN)/ruff check .
	$(BIN)/mypy
	@# The benches, strict too: a second run, since mypy takes files or packages, not both (bench/ is scripts).
	$(BIN)/mypy bench/*.py

# The long fault run (100 faults, ~1 hour); e.g. make chaos CHAOS_ARGS="--cycles 40 --seed 3"
chaos: setup toxiproxy
	$(BIN)/python bench/chaos.py $(CHAOS_ARGS)

down:
	@test ! -x $(BIN)/mirrorflow || $(BIN)/mirrorflow dev down

clean: down
	rm -rf $(VENV) $(JARS) .mirrorflow
