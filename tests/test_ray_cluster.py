"""The grid on a real multi-node Ray cluster on this machine, whose nodes share nothing with the driver but Ray (issue 18, item 4).

The head runs no task (`--num-cpus 0`); two worker nodes run in mount namespaces of their own (`unshare -m`) with a fresh
tmpfs over the test's folder, so that they cannot see the driver's results folder, its checkpoints or its data, nor each
other's checkpoint folders. The grid runs there; `results.csv` gets every row, equal to the local executor's; a driver killed
mid-grid resumes; data the nodes lack stops the grid before any training, naming the node and the path. Every process of
the cluster is killed at the end, pass or fail, by process group and by the cluster's own temporary folder (never with
`ray stop`, which would stop every Ray instance of the machine). Needs root (for the mounts) and Ray; skipped otherwise,
except where `LOTUS_NB_CLUSTER_TEST=required` (.ci/run sets it: there the test must run).
"""
import os, signal, socket, subprocess, sys, tempfile, time, shutil
from pathlib import Path
import pandas as pd
import pytest
from conftest import ROOT, read_rows
from lotus_nb.store import KEY, METRICS

ray = pytest.importorskip('ray')

SEEDS, METHODS = [1, 2], ['original', 'gold', 'finetune', 'lotus']
SPECS = ("[BenchmarkSpec('digits', 'resnet18_tiny', 0.1, train_epochs=3), "
         "BenchmarkSpec('digits', 'resnet18_tiny', forget_class=3, train_epochs=3)]")
ENV = dict(RAY_AUTH_MODE='disabled', RAY_USAGE_STATS_ENABLED='0', OMP_NUM_THREADS='1', MKL_NUM_THREADS='1', PYTHONHASHSEED='0',
           RAY_raylet_start_wait_time_s='120')   # a busy 2-core machine can take longer than Ray's default to register a node
UP = 'This command will now block forever'      # what `ray start --block` logs once its node is up
COLS = [c for c in METRICS if c != 'time_min']

def free_port() -> int:
    with socket.socket() as s: s.bind(('127.0.0.1', 0)); return s.getsockname()[1]

def can_isolate() -> bool:
    if os.geteuid() != 0 or not shutil.which('unshare'): return False
    try: return subprocess.run(['unshare', '-m', 'sh', '-c', 'mount -t tmpfs tmpfs /mnt'], timeout=20).returncode == 0
    except (OSError, subprocess.TimeoutExpired): return False

DRIVER = """
import sys, time, logging, ray
from lotus_nb.experiment import BenchmarkSpec
from lotus_nb.grid import run_grid
logging.basicConfig(level=logging.INFO, format='%(message)s')
address, out, nodes, specs, seeds, methods = sys.argv[1], sys.argv[2], int(sys.argv[3]), eval(sys.argv[4]), eval(sys.argv[5]), eval(sys.argv[6])
ray.init(address=address, include_dashboard=False, log_to_driver=False)
t0 = time.time()
while len([n for n in ray.nodes() if n['Alive']]) < nodes:
    if time.time() - t0 > 120: sys.exit(f'the cluster did not come up: {ray.nodes()}')
    time.sleep(1)
run_grid(specs, seeds=seeds, methods=methods, out_dir=out, executor='ray', progress=True, poll_s=1, write=False)
print('DRIVER DONE')
"""

class Cluster:
    "A head (no CPUs) and `workers` nodes of one CPU each, the workers in their own mount namespace with a tmpfs over `hide`"
    def __init__(self, hide:Path, workers:int=2):
        self.hide, self.workers, self.procs = hide, workers, []
        self.temp = tempfile.mkdtemp(prefix='lotus-rc-', dir='/tmp')   # short (socket paths), and no other Ray finds it
        self.port, self.address = free_port(), None
        self.logs = Path(self.temp)/'logs'; self.logs.mkdir()

    def _start(self, name, cmd, env=None, tries:int=2, timeout:float=150):
        "Start a node and wait until it is up (its log says so); a node that dies while starting is started again, once"
        for attempt in range(tries):
            log = open(self.logs/f'{name}.log', 'w')
            p = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, start_new_session=True, env={**os.environ, **ENV, **(env or {})})
            self.procs.append(p)
            deadline = time.time() + timeout
            while time.time() < deadline and p.poll() is None and UP not in self.log(name, None): time.sleep(0.5)
            if UP in self.log(name, None) and p.poll() is None: return p
            try: os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError: pass
        raise RuntimeError(f'Ray node {name} did not start:\n{self.log(name)}')

    def start(self):
        ray_bin = str(Path(sys.executable).parent/'ray') if (Path(sys.executable).parent/'ray').exists() else 'ray'
        self._start('head', [ray_bin, 'start', '--head', '--num-cpus', '0', '--port', str(self.port), '--node-ip-address', '127.0.0.1',
                             '--temp-dir', self.temp, '--include-dashboard', 'false', '--disable-usage-stats', '--block',
                             '--dashboard-agent-listen-port', str(free_port())])
        self.address = f'127.0.0.1:{self.port}'
        for k in range(self.workers):
            node = (f"mount --make-rprivate / && mount -t tmpfs tmpfs {self.hide} && exec {ray_bin} start --address {self.address} "
                    f"--num-cpus 1 --node-ip-address 127.0.0.1 --disable-usage-stats --block --dashboard-agent-listen-port {free_port()}")
            self._start(f'worker{k}', ['unshare', '-m', 'sh', '-c', node], env=dict(LOTUS_NB_NODE_CACHE=str(self.hide/'node_cache')))
        return self

    def log(self, name, tail:int=5000) -> str:
        text = (self.logs/f'{name}.log').read_text(errors='replace'); return text[-tail:] if tail else text

    def stop(self):
        "Kill every process of the cluster: its process groups, then any process left that names its temporary folder"
        for p in self.procs:
            try: os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError: pass
        for p in self.procs:
            try: p.wait(timeout=30)
            except subprocess.TimeoutExpired: pass
        for pid in os.listdir('/proc'):
            if not pid.isdigit() or int(pid) == os.getpid(): continue
            try: cmd = Path(f'/proc/{pid}/cmdline').read_bytes()
            except OSError: continue
            if self.temp.encode() in cmd:
                try: os.kill(int(pid), signal.SIGKILL)
                except ProcessLookupError: pass
        shutil.rmtree(self.temp, ignore_errors=True)

@pytest.fixture(scope='module')
def cluster(tmp_path_factory):
    if not can_isolate():
        why = 'needs root and unshare -m (mount namespaces) for nodes that cannot see the driver\'s files'
        if os.environ.get('LOTUS_NB_CLUSTER_TEST') == 'required': pytest.fail(why + ' (LOTUS_NB_CLUSTER_TEST=required, as in CI)')
        pytest.skip(why)
    hide = tmp_path_factory.mktemp('cluster')
    c = Cluster(hide)
    try:
        c.start(); yield c
    finally:
        c.stop()

def drive(c:Cluster, out:Path, specs:str=SPECS, timeout=240, kill_after_rows:int=None):
    "Run the grid from a driver process connected to the cluster; with `kill_after_rows`, SIGKILL the driver once that many rows are in"
    cmd = [sys.executable, '-c', DRIVER, c.address, str(out), str(c.workers + 1), specs, repr(SEEDS), repr(METHODS)]
    p = subprocess.Popen(cmd, cwd=ROOT, env={**os.environ, **ENV}, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         start_new_session=True)
    t0 = time.time()
    try:
        while p.poll() is None and time.time() - t0 < timeout:
            if kill_after_rows is not None and (out/'results.csv').exists() and len(read_rows(out/'results.csv')) >= kill_after_rows:
                os.killpg(p.pid, signal.SIGKILL); break
            time.sleep(0.5)
        else:
            if p.poll() is None: os.killpg(p.pid, signal.SIGKILL); pytest.fail(f'driver timed out after {timeout} s:\n{p.communicate()[0][-8000:]}')
        out_text = p.communicate(timeout=30)[0]
    finally:
        try: os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError: pass
    return p.returncode, out_text, time.time() - t0

def sorted_rows(path) -> pd.DataFrame:
    return read_rows(path).sort_values(['forget_class', 'method', 'seed'], na_position='first').reset_index(drop=True)

def test_grid_on_three_nodes(cluster, tmp_path):
    from lotus_nb.experiment import BenchmarkSpec
    from lotus_nb.grid import run_grid
    hide = cluster.hide
    t0 = time.time(); run_grid(eval(SPECS), seeds=SEEDS, methods=METHODS, out_dir=hide/'local', progress=False, write=False); t_local = time.time() - t0
    rc, out, t_ray = drive(cluster, hide/'ray')
    assert rc == 0 and 'DRIVER DONE' in out, out[-8000:]
    a, b = sorted_rows(hide/'local'/'results.csv'), sorted_rows(hide/'ray'/'results.csv')
    with pd.option_context('display.width', 250, 'display.max_columns', 30):
        print(f"\nlocal executor ({t_local:.0f} s) vs the 3-node cluster ({t_ray:.0f} s, driver included):")
        print(pd.concat({'local': a.set_index(['forget_class', 'method', 'seed'])[['avg_gap', 'mia', 'acc_forget', 'rf_jsd', 'threads']],
                         'cluster': b.set_index(['forget_class', 'method', 'seed'])[['avg_gap', 'mia', 'acc_forget', 'rf_jsd', 'threads']]}, axis=1).round(6))
    assert len(a) == len(b) == 16
    pd.testing.assert_frame_equal(a[KEY + COLS], b[KEY + COLS], check_exact=False, rtol=1e-9, atol=1e-12)
    assert set(b.threads) == {1}
    assert 'Ray node' in out and len(list((hide/'ray'/'runs').glob('*.json'))) == 16, "the driver wrote every record"
    # without storage, the checkpoints came home through the object store: the driver keeps each, trained once
    assert len(list((hide/'ray'/'checkpoints').glob('orig_*.pt'))) == 2 and len(list((hide/'ray'/'checkpoints').glob('gold_*.pt'))) == 4

def test_resume_after_driver_kill(cluster):
    hide = cluster.hide
    rc, out, _ = drive(cluster, hide/'resume', kill_after_rows=1)
    got = read_rows(hide/'resume'/'results.csv')
    assert 1 <= len(got) < 16, (len(got), out[-4000:])
    rc, out, _ = drive(cluster, hide/'resume')
    assert rc == 0 and 'DRIVER DONE' in out, out[-8000:]
    b = sorted_rows(hide/'resume'/'results.csv')
    assert len(b) == 16 and not b.duplicated(KEY).any()
    if (hide/'local'/'results.csv').exists():
        a = sorted_rows(hide/'local'/'results.csv')
        pd.testing.assert_frame_equal(a[KEY + COLS], b[KEY + COLS], check_exact=False, rtol=1e-9, atol=1e-12)

def test_data_missing_on_nodes_stops_before_training(cluster):
    "The driver has the data, the nodes do not: the grid stops before any training, naming the node and the path"
    from lotus_nb.testing import write_cifar10
    hide = cluster.hide
    write_cifar10(hide/'data', per_class=20)
    specs = f"[BenchmarkSpec('cifar10', 'resnet18_tiny', 0.1, train_epochs=1, data_root={str(hide/'data')!r})]"
    rc, out, _ = drive(cluster, hide/'missing', specs=specs, timeout=120)
    assert rc != 0 and 'data missing on the cluster' in out, out[-6000:]
    lines = [l for l in out.splitlines() if 'Ray node' in l and str(hide/'data') in l]
    assert len(lines) == 2, out[-6000:]                               # each worker node, named, with the folder it lacks
    assert not (hide/'missing'/'results.csv').exists() and not list((hide/'missing').glob('checkpoints/*.pt'))
