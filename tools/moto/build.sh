#!/usr/bin/env bash
# Installs moto (the emulated EC2 of the machine tests, docs/maintainers/machines.md) from PyPI into a
# virtual environment in a cache outside the work tree, in a folder named by moto's version and a digest
# of the files here (requirements.txt pins every package). Prints the venv's bin folder on stdout (its
# `moto_server` is what the tests start); does nothing when that venv is complete.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

version=$(sed -nE 's/^moto\[[^]]*\]==([^ ]+).*/\1/p' "$here/requirements.txt")
digest=$(cd "$here" && cat requirements.txt build.sh | sha256sum | cut -c1-12)
cache_root="${CAPI_MOTO_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/capi-installer/moto}"
out="$cache_root/moto-${version}_${digest}"
bin="$out/venv/bin"

built() { [[ -x "$bin/moto_server" && -e "$out/done" ]]; }
if built; then
  echo "$bin"
  exit 0
fi

log() { echo "moto build: $*" >&2; }
mkdir -p "$out"
exec 9>"$out/.lock"
if ! flock -n 9; then
  log "another install of this set is running; waiting for it"
  flock 9
  if built; then
    echo "$bin"
    exit 0
  fi
fi
rm -rf "$out/venv" "$out/done"
start=$(date +%s)
python="${PYTHON:-python3}"
if ! "$python" -c 'import venv, ensurepip' 2>/dev/null; then
  log "needs $python with the venv module and pip (Debian: apt-get install python3-venv)"
  exit 1
fi
log "installing moto $version into $out/venv with $("$python" --version)"
"$python" -m venv "$out/venv"
"$out/venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-input \
  --requirement "$here/requirements.txt" >&2
touch "$out/done"
log "installed in $(( $(date +%s) - start ))s"
echo "$bin"
