"""Import times of lotus_nb's parts in fresh interpreters: each part's wall time, the time of the other modules it loads
(exactly those, in their order) imported alone, and the difference (lotus_nb's own share), beside the import that loads every
part: `lotus_nb.all` (0.8 on: every module, then the built-ins and plugins loaded), or `lotus_nb.core.catalog` in an older
lotus_nb (0.6 and 0.7: it imported every registering module; before 0.6 any import of lotus_nb imported it).

    PYTHONPATH=. python benchmarks/import_time.py              # median of 5 interpreters per row
    PYTHONPATH=. python benchmarks/import_time.py --repeat 1 --parts lotus_nb.running.store lotus_nb.metrics.evaluation   # a smoke run
"""
import argparse, json, statistics, subprocess, sys, time

PARTS = ['lotus_nb.core.checks', 'lotus_nb.running.store', 'lotus_nb.running.tracking', 'lotus_nb.models.training', 'lotus_nb.metrics.evaluation', 'lotus_nb.methods.base', 'lotus_nb.methods.lotus',
         'lotus_nb.running.runner', 'lotus_nb.running.grid', 'lotus_nb.running.benchmark']
EVERYTHING = ('lotus_nb.all', 'lotus_nb.core.catalog')   # the first the lotus_nb on the path has: the last row, which loads every part

PROBE = """
import sys, time, json
t = time.perf_counter(); import {mod}; dt = time.perf_counter() - t
mods = sorted(m for m in sys.modules if m.startswith('lotus_nb'))
third = [m for m in sys.modules if not m.startswith('lotus_nb')]   # in the order they were loaded
print(json.dumps(dict(s=dt, lotus=mods, third=third)))
"""
THIRD = """
import sys, time, importlib
t = time.perf_counter()
for m in {mods!r}:
    try: importlib.import_module(m)
    except Exception: pass
print(time.perf_counter() - t)
"""

def fresh(code: str) -> str:
    r = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, timeout=600)
    if r.returncode: raise RuntimeError(r.stderr[-2000:])
    return r.stdout.strip().splitlines()[-1]

def everything() -> str:
    "The module of the lotus_nb on a fresh interpreter's path that loads every part"
    code = f"import importlib.util as u; print(next(m for m in {EVERYTHING!r} if u.find_spec(m)))"
    return fresh(code)

def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--repeat', type=int, default=5, help='fresh interpreters per row (the median is printed)')
    ap.add_argument('--json', help='also write the rows here')
    ap.add_argument('--parts', nargs='+', default=PARTS, help='the parts to time (default: all ten), then the import of every part')
    a = ap.parse_args()
    base = {m for m in sys.modules}   # this interpreter's start-up modules are in every fresh one too
    rows = []
    for mod in [*a.parts, everything()]:
        probes = [json.loads(fresh(PROBE.format(mod=mod))) for _ in range(a.repeat)]
        third = [m for m in probes[0]['third'] if m not in base]   # exactly the modules the part loaded, in their order
        t3 = [float(fresh(THIRD.format(mods=third))) for _ in range(a.repeat)]
        s, s3 = statistics.median(p['s'] for p in probes), statistics.median(t3)
        rows.append(dict(module=mod, seconds=round(s, 3), third_party_s=round(s3, 3), own_s=round(s - s3, 3),
                         lotus_modules=len(probes[0]['lotus']), torch='torch' in probes[0]['third']))
    w = max(len(r['module']) for r in rows)
    print(f"{'import':<{w}}  {'wall s':>7}  {'others s':>11}  {'lotus_nb s':>10}  {'x all':>9}  {'modules':>7}  torch")
    cat = rows[-1]['seconds']
    for r in rows:
        print(f"{r['module']:<{w}}  {r['seconds']:>7.3f}  {r['third_party_s']:>11.3f}  {r['own_s']:>10.3f}  {r['seconds']/cat:>9.2f}  "
              f"{r['lotus_modules']:>7}  {'yes' if r['torch'] else 'no'}")
    print("others s: the modules outside lotus_nb that the part loads, exactly those, imported alone; lotus_nb s: the wall time less that; "
          f"x all: the wall time over {rows[-1]['module']}'s, which loads every part")
    if a.json:
        with open(a.json, 'w') as f: json.dump(rows, f, indent=1)

if __name__ == '__main__': main()
