#!/usr/bin/env bash
# Set-up of a fresh Debian x86_64 machine with Python 3.11: the Fashion-MNIST data package, Chromium and MathJax,
# torch/torchvision at their pinned versions, and lotus_nb (editable) with its dev tools and every optional engine
# (`.[dev,all]`: the tests exercise Ray, grad-cam and imagehash too).
# Idempotent: when everything is already in place it checks and returns in a few seconds.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
REPO="$(pwd -P)"
PY="${PYTHON:-python}"
FMNIST=/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz

# 1. From the Debian archive, only what is missing, only as root with apt-get: Fashion-MNIST, and Chromium and
#    MathJax for the documentation check (tools/build_docs.py, tests/test_docs.py)
APT=()
[ -f "$FMNIST" ] || APT+=(dataset-fashion-mnist)
[ -x /usr/bin/chromium ] || APT+=(chromium)
[ -f /usr/share/javascript/mathjax/MathJax.js ] || APT+=(libjs-mathjax)
if [ "${#APT[@]}" -gt 0 ] && [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "setup: installing ${APT[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq "${APT[@]}" >/dev/null
fi

# The checks below run from / so that the checkout itself is not on sys.path.

# 2. torch and torchvision at the pinned versions
if ! (cd / && "$PY" - <<'PYEOF') >/dev/null 2>&1
import importlib.metadata as m, sys
sys.exit(not (m.version('torch').split('+')[0] == '2.14.1' and m.version('torchvision').split('+')[0] == '0.29.1'))
PYEOF
then
    echo "setup: installing torch==2.14.1 torchvision==0.29.1"
    "$PY" -m pip install -q torch==2.14.1 torchvision==0.29.1
fi

# 3. lotus_nb, editable from this checkout, with every requirement of settings.ini: the runtime ones,
#    dev_requirements and each extra_requirements_<engine> (the `all` extra is their union)
if ! (cd / && "$PY" - "$REPO" <<'PYEOF') >/dev/null 2>&1
import configparser, importlib.metadata as m, json, pathlib, re, shlex, sys
from packaging.requirements import Requirement
repo = pathlib.Path(sys.argv[1])
cfg = configparser.ConfigParser(delimiters=['=']); cfg.read(repo/'settings.ini', encoding='utf-8'); cfg = cfg['DEFAULT']
d = m.distribution(cfg['lib_name'])
url = json.loads(d.read_text('direct_url.json') or '{}')
assert url.get('dir_info', {}).get('editable') and url.get('url') == repo.as_uri(), 'not an editable install of this checkout'
assert d.version == cfg['version'], 'version changed'
groups = {None: 'requirements', 'dev': 'dev_requirements'} | {k[len('extra_requirements_'):]: k for k in cfg if k.startswith('extra_requirements_')}
want = {(str(Requirement(r)), g) for g, k in groups.items() for r in shlex.split(cfg.get(k, ''))}
want |= {(r, 'all') for r, g in want if g not in (None, 'dev')}
for r, _ in want: r = Requirement(r); assert r.specifier.contains(m.version(r.name), prereleases=True), f'{r} not satisfied'
# the installed metadata declares the same requirements in the same groups (settings.ini may have changed since)
have = set()
for x in d.requires or []:
    r = Requirement(x); g = re.search(r'extra == "([^"]+)"', str(r.marker)) if r.marker else None
    r.marker = None; have.add((str(r), g and g.group(1)))
assert have == want, f'requirements changed: {have ^ want}'
PYEOF
then
    echo "setup: installing lotus_nb (editable, with the dev and all extras)"
    "$PY" -m pip install -q -e ".[dev,all]"
fi
echo "setup: done"
