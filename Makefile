# Disruption Lab: the two commands. Everything installs into ./.venv.
PYTHON ?= python3.11
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

PORT   ?= 8000
# The suite runs on the machine's PostgreSQL and Redis (real worker processes, headless
# Chromium), then the web tests again on the SQLite + filesystem-broker default.
TEST_DATABASE_URL ?= postgres://postgres@127.0.0.1:5432/disruption_lab
CHROMIUM ?= /usr/bin/chromium

.PHONY: install run test test-core test-fast typecheck lint format bench clean chromium plotly-bundle

# pytest exits 5 when it ran no test (nothing collected, or a -m/-k that deselects all);
# make would report that as a bare "Error 5" and a green-looking log. Say so and fail.
# $(1): environment prefix, $(2): pytest arguments.
define pytest
	@echo '$(strip $(1)) pytest $(2)'
	@status=0; $(1) $(PY) -m pytest $(2) || status=$$?; \
	if [ $$status -eq 5 ]; then echo 'make: pytest ran no tests: $(2)' >&2; exit 1; fi; \
	exit $$status
endef
# The quick targets run on the SQLite + filesystem-broker default, no services needed.
LOCAL := env -u DATABASE_URL -u CELERY_BROKER_URL
FAST_MARKERS := not slow and not worker and not e2e and not postgres

$(STAMP): pyproject.toml
	@command -v $(PYTHON) >/dev/null 2>&1 || { echo "Python 3.11 is needed (set PYTHON=...)"; exit 1; }
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	touch $(STAMP)

install: $(STAMP)

# The app on this machine: SQLite and kombu's filesystem broker under var/, gunicorn and
# one Celery worker (with beat for the watchdog). Prints the URL and the login.
run: $(STAMP)
	$(PY) manage.py migrate --noinput
	$(PY) manage.py ensure_local_superuser
	$(PY) manage.py load_presets --owner admin
	$(PY) manage.py runlocal --port $(PORT)

test: $(STAMP) chromium
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .
	$(PY) -m mypy
	$(call pytest,DATABASE_URL=$(TEST_DATABASE_URL),--durations=25)
	$(call pytest,$(LOCAL),tests/web -p no:cacheprovider)

# The scheduler core's tests alone (no database, broker or browser): seconds.
test-core: $(STAMP)
	$(call pytest,$(LOCAL),tests/core -q)

# Core, web and API tests that need no service, worker process or browser, on SQLite.
test-fast: $(STAMP)
	$(call pytest,$(LOCAL),tests/core tests/web tests/api -q -m "$(FAST_MARKERS)")

# mypy as configured in pyproject.toml: strict on scheduler_core, Django/DRF plugins on
# experiments and config.
typecheck: $(STAMP)
	$(PY) -m mypy

# The browser tests use Debian's Chromium, never a downloaded one.
chromium:
	@test -x $(CHROMIUM) || { echo "installing Debian's chromium for the browser tests"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; }

lint: $(STAMP)
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .
	$(PY) -m mypy

# Rewrites files in place (ruff's formatter, settings in pyproject.toml).
format: $(STAMP)
	$(PY) -m ruff format .

# The plotly.js the app serves (static/vendor/plotly/plotly-lab.min.js, committed): the
# trace types our charts draw, built from the pinned plotly.js sources with esbuild
# (tools/plotly; Node 20 or later and the npm registry). Only for a plotly upgrade or a
# new trace type: the package's plotly.js version must stay the plotly package's.
plotly-bundle:
	cd tools/plotly && npm ci --ignore-scripts --no-audit --no-fund && node build.mjs

# Benchmarks (not tests): the scheduler core, the openb replay; figures in bench/baselines.json.
bench: $(STAMP)
	$(PY) bench/bench_core.py all
	$(PY) bench/bench_openb.py

clean:
	rm -rf $(VENV) var staticfiles
