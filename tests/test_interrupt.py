"A benchmark killed mid-run resumes: the rows already written stay as they are and only the missing ones are run (a kill inside a row's write: tests/test_store.py)"
import os, signal, subprocess, sys, time
import pandas as pd
import pytest
from helpers import ROOT, read_rows
from lotus_nb.running.benchmark import run_benchmark

SEEDS, METHODS = [1, 2, 3], ['original', 'gold', 'finetune', 'lotus']
ARGS = dict(seeds=SEEDS, methods=METHODS, progress=False)
CODE = ("import sys; from lotus_nb.running.benchmark import run_benchmark; "
        f"run_benchmark('digits', 'resnet18_small', seeds={SEEDS}, methods={METHODS}, out_dir=sys.argv[1], progress=False)")

def rows(path) -> int:
    "Finished rows so far: the store leaves out a torn last line, so any other error is a real one and fails the test"
    return len(read_rows(path))

def test_kill_and_resume(tmp_path):
    out, total = tmp_path/'res', len(SEEDS)*len(METHODS)
    res_csv = out/'results.csv'
    log = open(tmp_path/'child.log', 'w')
    proc = subprocess.Popen([sys.executable, '-c', CODE, str(out)], cwd=ROOT, stdout=log, stderr=subprocess.STDOUT,
                            start_new_session=True)
    try:
        deadline = time.monotonic() + 15*60
        while rows(res_csv) < 2:
            if proc.poll() is not None:
                pytest.fail(f"the benchmark process exited ({proc.returncode}) before writing 2 rows:\n"
                            f"{(tmp_path/'child.log').read_text()[-5000:]}")
            if time.monotonic() > deadline: pytest.fail("no 2 rows within 15 minutes")
            time.sleep(0.1)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None: os.killpg(proc.pid, signal.SIGKILL); proc.wait()
        log.close()
    assert proc.returncode == -signal.SIGKILL, f"the process was not killed but exited with {proc.returncode}"
    before_bytes = res_csv.read_bytes()
    before = read_rows(res_csv)
    if not 2 <= len(before) < total:
        pytest.fail(f"could not interrupt the benchmark mid-run: {len(before)} of {total} rows when killed")
    ckpts = {p.name: p.stat().st_mtime_ns for p in (out/'checkpoints').glob('*.pt')}

    b = run_benchmark('digits', 'resnet18_small', out_dir=out, **ARGS)
    after = read_rows(res_csv)
    assert len(after) == total, after
    assert not after.duplicated(['method', 'seed']).any(), after[['method', 'seed']]
    assert sorted(zip(after.method, after.seed)) == sorted((m, s) for m in METHODS for s in SEEDS)
    # the rows written before the kill are the first rows, unchanged (none was redone), and the file only grew
    pd.testing.assert_frame_equal(after.iloc[:len(before)].reset_index(drop=True), before.reset_index(drop=True))
    assert res_csv.read_bytes().startswith(before_bytes)
    # finished checkpoints were loaded, not retrained
    assert {n: (out/'checkpoints'/n).stat().st_mtime_ns for n in ckpts} == ckpts
    assert len(b.results) == total
