"""The field's methods beyond the paper's (CF-k, EU-k, l1-sparse, and every built-in registered with default_run=False: read from their modules): built-ins that
`list_methods` holds, run when named and never by a default run, kept out of the paper's tables; each runs through `unlearn` on
an instance task and a class task of `demo_task`, changes the model's parameters, leaves f_orig alone and gives finite metrics;
a benchmark refuses a kind a method does not support, in one line naming the kinds it does."""
import dataclasses, math
import pytest, torch
from lotus_nb.methods.base import METHODS, KINDS, list_methods, method_kinds, method_config, register_method, unlearn, Unlearned, frozen
from lotus_nb.core.registry import registered
from lotus_nb.methods.demo import demo_task
from lotus_nb.metrics.evaluation import evaluate
from lotus_nb.metrics.report import PAPER_METHODS
from lotus_nb.running.benchmark_spec import BenchmarkSpec, resolve_spec, check_benchmark
from lotus_nb.running.store import Store

from helpers import builtin_methods
FIELD = {m: method_kinds(m) for m in builtin_methods()[1]}   # name -> the kinds it declares (each chapter checks its refusals)

@pytest.fixture(scope='module')
def tasks():
    "A small trained f_orig on digits (the tiny ResNet, 2 epochs) with its instance task, and one with class 3 forgotten"
    torch.set_num_threads(1)
    return {'instance': demo_task('digits', 'resnet18_tiny', epochs=2),
            'class': demo_task('digits', 'resnet18_tiny', epochs=2, forget_class=3)}

def test_registered_as_builtins_outside_the_default_run():
    assert set(FIELD) <= set(list_methods(reference=False)) and set(FIELD) <= set(list_methods(default_run=False))
    assert not set(FIELD) & set(list_methods(default_run=True)) and not set(FIELD) & set(PAPER_METHODS)
    assert all(METHODS.layer(m) == 'builtin' and not METHODS[m].paper for m in FIELD)
    assert {'cf_k', 'eu_k', 'l1_sparse'} <= set(FIELD) and all(FIELD[m] for m in FIELD)   # at least the first three, each of some kind

@pytest.mark.parametrize('kind', KINDS)
@pytest.mark.parametrize('name', list(FIELD))
def test_runs_changes_the_model_finite_metrics(tasks, name, kind):
    if kind not in FIELD[name]: pytest.skip(f"{name} does not do {kind} unlearning")
    f_orig, ts, task = tasks[kind]
    assert (task.forget_class is None) == (kind == 'instance')
    before = {k: v.clone() for k, v in f_orig.state_dict().items()}
    out = unlearn(name, f_orig, task, progress=False, epochs=2)
    assert all(torch.equal(v, before[k]) for k, v in f_orig.state_dict().items()), "f_orig is left unchanged"
    assert out.model is not f_orig and not out.model.training
    assert any(not torch.equal(p, q) for p, q in zip(out.model.parameters(), f_orig.parameters())), "the parameters change"
    assert out.record['method'] == name and out.record['config']['epochs'] == 2
    assert out.record['steps'] > 0 or method_config(name).epochs == 0, "a trained method steps; a one-shot one (Fisher: epochs 0) need not"
    m = evaluate(out.model, ts['forget'], ts['retain'], ts['test'], ts['unseen'], f_orig=f_orig)
    nums = {k: v for k, v in m.items() if isinstance(v, (int, float))}
    assert {'acc_forget', 'acc_retain', 'acc_test', 'mia'} <= set(nums) and all(math.isfinite(v) for v in nums.values()), m

def test_a_refused_kind_is_refused_in_one_line(tasks):
    "A method registered for instance unlearning only: unlearn and check_benchmark (the grid's check) refuse a class task, naming the kinds"
    f_orig, _, task = tasks['class']
    with registered(METHODS):
        register_method('toy_instance_only', kinds=('instance',), default_run=False)(lambda o, t, c, p=True: Unlearned(frozen(o), {}))
        with pytest.raises(ValueError, match=r"^'toy_instance_only' does not do class unlearning: it supports instance unlearning only$"):
            unlearn('toy_instance_only', f_orig, task, progress=False)
        spec = resolve_spec(BenchmarkSpec('digits', 'resnet18_tiny', forget_class=3))
        with pytest.raises(ValueError, match='supports instance unlearning only'):
            check_benchmark(spec, [0], ['toy_instance_only'], Store('/tmp/lotus_nb_no_store'))
        seeds, methods = check_benchmark(spec, [0], ['cf_k', 'eu_k', 'l1_sparse'], Store('/tmp/lotus_nb_no_store'))
        assert methods == ['cf_k', 'eu_k', 'l1_sparse']

def test_default_run_leaves_them_out():
    "A benchmark whose methods are None runs the default run's methods: the paper's and LoTUS + SalUn, none of the field's"
    spec = resolve_spec(BenchmarkSpec('digits'))
    _, methods = check_benchmark(spec, [0], None, Store('/tmp/lotus_nb_no_store'))
    assert methods == list_methods(default_run=True) and not set(FIELD) & set(methods)

@pytest.mark.parametrize('name', list(FIELD))
def test_search_space_and_budget(name):
    "The tuner's ranges hold the defaults of both architectures; the preview counts the config's epochs (a one-shot method: none, no lr)"
    from lotus_nb.running.tuner import search_space
    space, one_shot = search_space(name), method_config(name).epochs == 0   # one shot: Fisher, a single draw
    assert ('epochs' in space and 'lr' in space) != one_shot and space
    for arch in ('resnet', 'vit'):
        cfg = method_config(name, arch)
        assert all(getattr(cfg, k) in r for k, r in space.items()), (name, arch)
        assert (dataclasses.asdict(cfg)['epochs'] >= 1) != one_shot

def test_the_field_through_the_notebooks(tmp_path):
    """`-p methods field` through papermill (a rehearsal: one batch a loop): the experiments notebook on an instance
    benchmark runs every method that does instance unlearning, and its field table ranks them and lists the class-only ones as
    not applicable, with the reason; the class-unlearning notebook runs the class-only ones too. The paper's tables keep the
    paper's methods."""
    from helpers import papermill, show, outputs, run_nb
    from lotus_nb.methods.base import FIELD as KEYWORD, field_methods, display_name
    from lotus_nb.running.store import Store
    res = papermill(tmp_path/'out.ipynb', '-p', 'dataset', 'digits', '-y', 'seeds: [1]', '-p', 'methods', KEYWORD, '-p', 'fast_dev_run', '1',
                    '-p', 'out_dir', tmp_path/'res')
    assert res.returncode == 0, show(res)
    runs, skipped = field_methods('instance')
    assert sorted(Store(tmp_path/'res'/'rehearsal').read().method) == sorted(runs)
    out = outputs(tmp_path/'out.ipynb')
    assert skipped and all(f'not applicable: {why}' in out for why in skipped.values()), out[-3000:]
    field = next(Store(tmp_path/'res'/'rehearsal').tables.glob('*_field.csv'))
    t = __import__('pandas').read_csv(field, index_col=0)
    assert {display_name(m) for m in runs} | {display_name(m) for m in skipped} == set(t.index)
    paper = next(Store(tmp_path/'res'/'rehearsal').tables.glob('*_avg_gap.csv'))
    assert not {display_name(m) for m in FIELD} & set(__import__('pandas').read_csv(paper, index_col=0).columns)   # the paper's columns only
    cls = run_nb('class_unlearning', tmp_path/'cls.ipynb', '-y', 'benchmarks: [digits]', '-y', 'seeds: [1]', '-p', 'methods', KEYWORD,
                 '-p', 'fast_dev_run', '1', '-p', 'out_dir', tmp_path/'cls')
    assert cls.returncode == 0, show(cls)
    ran = set(Store(tmp_path/'cls'/'rehearsal').read().method)
    assert ran == set(field_methods('class')[0]) and {'delete', 'boundary_shrink'} <= ran
    assert 'not applicable' not in outputs(tmp_path/'cls.ipynb') and '| DELETE ' in outputs(tmp_path/'cls.ipynb')
