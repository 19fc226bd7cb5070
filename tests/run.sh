#!/usr/bin/env bash
# The README's test command. On a fresh machine it installs everything the tests need
# (a virtualenv with the CPU build of torch, Debian's Chromium, a running PostgreSQL), then runs the linter, the
# formatter check, the type checker and pytest.
# Extra arguments go to pytest, e.g. `bash tests/run.sh tests/pipeline -x`.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
# torch==2.13.0 resolves to the machine's CPU wheel; unpinned torch would pull several GB of CUDA wheels.
.venv/bin/pip install --quiet --disable-pip-version-check torch==2.13.0 -e ".[dev]"

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

if [ ! -x /usr/bin/chromium ]; then
  echo "tests/run.sh: installing Debian's chromium for the browser tests" >&2
  as_root apt-get update -q
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium
fi

if ! pg_isready -q -h 127.0.0.1 -p 5432 2>/dev/null; then
  if ! ls /etc/postgresql >/dev/null 2>&1; then
    echo "tests/run.sh: installing PostgreSQL" >&2
    as_root apt-get update -q
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q postgresql
    version=$(ls /etc/postgresql | head -n 1)
    hba=/etc/postgresql/$version/main/pg_hba.conf
    as_root sed -i -E 's/^(host\s+all\s+all\s+127\.0\.0\.1\/32\s+)\S+/\1trust/; s/^(local\s+all\s+(postgres|all)\s+)\S+/\1trust/' "$hba"
  fi
  as_root pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -n 1)" main start
  for _ in $(seq 1 30); do pg_isready -q -h 127.0.0.1 -p 5432 && break; sleep 1; done
  psql -h 127.0.0.1 -U postgres -tc "SELECT 1 FROM pg_database WHERE datname='test'" | grep -q 1 \
    || psql -h 127.0.0.1 -U postgres -c "CREATE DATABASE test"
fi

export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
# Every check runs even when an earlier one fails (the tests still report), and the script fails if any did.
status=0
.venv/bin/ruff check . || status=1
.venv/bin/ruff format --check . || status=1
.venv/bin/mypy || status=1

# pytest twice: the parallel-safe tests on every core (pytest-xdist; tests that share an expensive session fixture
# form one xdist_group, kept on one worker by --dist loadgroup), then the tests marked `serial` (load and
# timing-sensitive tests) alone on a quiet machine. Exit code 5 (nothing selected in one pass) is no failure.
pytest_pass() {
  local code=0
  .venv/bin/pytest -q "$@" || code=$?
  [ "$code" = 5 ] && code=0
  return "$code"
}
pytest_pass -n "${H2H_TEST_WORKERS:-auto}" --dist loadgroup -m "not serial" "$@" || status=$?
pytest_pass -m serial "$@" || status=$?
exit "$status"
