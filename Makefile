# Two commands on a fresh machine: `make run` and `make test`. Both create .venv themselves from pinned versions.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
PIP    := $(VENV)/bin/pip -q --disable-pip-version-check
HOST   ?= 127.0.0.1
PORT   ?= 8000
# Production mode (playground/deploy/production.py) whenever the server is reachable from elsewhere: HOST not a loopback address
# (127.x, ::1, localhost), or PLAYGROUND_PUBLIC_URL set, or PLAYGROUND_MODE=production. Then `make run` runs DEBUG off,
# with a secret key kept in var/secret_key, static files collected and served by WhiteNoise, and prints the join link.
PRODUCTION := $(strip $(filter-out 127.% localhost ::1 [::1],$(HOST)) $(PLAYGROUND_PUBLIC_URL) \
                      $(filter production,$(PLAYGROUND_MODE)))

.PHONY: run test test-fast conformance lint messages bench kafka kafka-stop venv venv-test clean

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)

# Stamps depend on the pins, so editing pyproject.toml or requirements.lock reinstalls.
$(VENV)/.run-installed: pyproject.toml requirements.lock | $(VENV)/bin/python
	$(PIP) install -c requirements.lock -e .
	touch $@

$(VENV)/.test-installed: pyproject.toml requirements.lock | $(VENV)/bin/python
	$(PIP) install -c requirements.lock -e '.[test]'
	touch $@

venv: $(VENV)/.run-installed
venv-test: $(VENV)/.test-installed

## Serve the dashboard on the embedded simulator: in-memory channel layer, SQLite. It serves at once: the Java client's
## worker (for Java sessions on a real cluster) is built by the server in the background (playground/asgi.py).
## `make run HOST=0.0.0.0` serves a room: production mode, and "Join at http://<this machine>:8000/w/".
ifeq ($(PRODUCTION),)
run: venv
	$(PY) manage.py migrate --noinput
	@echo "Kafka Transaction Playground: http://$(HOST):$(PORT)/"
	$(VENV)/bin/daphne --no-server-name -b $(HOST) -p $(PORT) playground.asgi:application
else
run: export PLAYGROUND_MODE := production
run: venv
	$(PY) manage.py migrate --noinput
	$(PY) manage.py collectstatic --noinput -v 0
	$(PY) -m playground.deploy serve --host $(HOST) --port $(PORT)
endif

## Every test: unit, scenarios, web, Redis, the real Kafka broker (3 nodes, started and stopped here), browser.
test: venv-test
	bash tools/system-deps.sh
	$(PY) -m playground.kafka.java_worker build
	bash tools/test.sh

## Only what needs no broker, Redis or browser (quick feedback while developing).
test-fast: venv-test
	$(VENV)/bin/pytest -q -m "not browser and not kafka and not redis" tests

## franz-go's kgo integration tests against simcluster --kafka 3.9 and --kafka 4, judged against the tests that pass
## against real Kafka 3.9.1 and 4.4.0 (tools/conformance/expected-*.txt; README: make conformance). Needs Go 1.26+.
## make test runs it too (tools/test.sh).
conformance: venv-test
	bash tools/conformance/run.sh

## The house alone, for quick feedback (make test runs the same checks in tests/test_house.py): lint and format
## (ruff), types (mypy, strict on the engines, the scenario format and the session core), the layers (import-linter).
lint: venv-test
	$(VENV)/bin/ruff check playground tests tools
	$(VENV)/bin/ruff format --check playground tests tools
	$(VENV)/bin/mypy
	$(VENV)/bin/lint-imports

## The catalogues compiled after a .po was edited (GNU gettext's msgfmt; the .mo files are committed, and
## tests/web/test_i18n.py checks each holds what its .po says).
messages:
	for po in locale/*/LC_MESSAGES/*.po; do msgfmt --check-format -o "$${po%.po}.mo" "$$po" || exit 1; done

## Figures: the simulator, the web layer, and the simulator against the real broker side by side.
bench: venv-test
	bash tools/system-deps.sh
	bash tools/bench/run.sh

## A real Apache Kafka (KRaft, 3 nodes on loopback) for users without Docker. `make kafka-stop` stops it.
## KAFKA_VERSION=4 for Kafka 4.x (tools/kafka/README.md); kafka-stop stops both versions' clusters.
kafka:
	bash tools/kafka/kafka.sh start --nodes 3

kafka-stop:
	bash tools/kafka/kafka.sh --version 3.9 stop
	bash tools/kafka/kafka.sh --version 4 stop

clean:
	-bash tools/kafka/kafka.sh --version 3.9 clean
	-bash tools/kafka/kafka.sh --version 4 clean
	rm -rf $(VENV) var test-artifacts .pytest_cache .hypothesis tools/java/.build
