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

.PHONY: run test lint bench clean chromium

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
	DATABASE_URL=$(TEST_DATABASE_URL) $(PY) -m pytest
	env -u DATABASE_URL -u CELERY_BROKER_URL $(PY) -m pytest tests/web -p no:cacheprovider

# The browser tests use Debian's Chromium, never a downloaded one.
chromium:
	@test -x $(CHROMIUM) || { echo "installing Debian's chromium for the browser tests"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; }

lint: $(STAMP)
	$(PY) -m ruff check .
	$(PY) -m mypy

# Benchmarks (not tests): the scheduler core, the openb replay; figures in bench/baselines.json.
bench: $(STAMP)
	$(PY) bench/bench_core.py all
	$(PY) bench/bench_openb.py

clean:
	rm -rf $(VENV) var staticfiles
