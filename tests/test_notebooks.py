"Every notebook's tests pass (nbdev_test; `slow`/`cuda` cells and skip_exec notebooks are skipped by nbdev)"
from helpers import run, script, show, ONE_THREAD

# One torch thread per worker: two workers each spinning a per-core OpenMP pool on a 2-core machine run
# the notebooks ~15x slower (minutes instead of seconds).

def test_nbdev_test():
    res = run([script('nbdev_test'), '--n_workers', '2', '--timing'], timeout=30*60, env=ONE_THREAD)   # 12.4 min for every chapter at 0.8 on the loaded 2-core machine; 30: room, not a target
    assert res.returncode == 0, f"nbdev_test failed\n{show(res)}"
    assert 'Success.' in res.stdout, show(res)
    print(res.stdout)
