"Every notebook's tests pass (nbdev_test; `slow`/`cuda` cells and skip_exec notebooks are skipped by nbdev)"
from helpers import run, script, show, ONE_THREAD

# One torch thread per worker: two workers each spinning a per-core OpenMP pool on a 2-core machine run
# the notebooks ~15x slower (minutes instead of seconds).

def test_nbdev_test():
    res = run([script('nbdev_test'), '--n_workers', '2', '--timing'], timeout=15*60, env=ONE_THREAD)
    assert res.returncode == 0, f"nbdev_test failed\n{show(res)}"
    assert 'Success.' in res.stdout, show(res)
    print(res.stdout)
