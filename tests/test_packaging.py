"lotus_nb builds as a wheel that installs and imports on its own, outside the repository"
import sys, zipfile
from pathlib import Path
import lotus_nb
from conftest import ROOT, run, show

def test_wheel_installs_and_imports(tmp_path):
    res = run([sys.executable, '-m', 'pip', 'wheel', '--no-deps', '--no-build-isolation', '-q', '-w', tmp_path/'dist', '.'],
              cwd=ROOT, timeout=600)
    assert res.returncode == 0, show(res)
    wheels = list((tmp_path/'dist').glob('lotus_nb-*.whl'))
    assert len(wheels) == 1, wheels
    names = set(zipfile.ZipFile(wheels[0]).namelist())
    missing = [f'lotus_nb/{p.name}' for p in (ROOT/'lotus_nb').glob('*.py') if f'lotus_nb/{p.name}' not in names]
    assert not missing, f"modules missing from the wheel: {missing}"

    venv = tmp_path/'venv'
    res = run([sys.executable, '-m', 'venv', '--system-site-packages', venv], timeout=300)
    assert res.returncode == 0, show(res)
    py = venv/'bin'/'python'
    res = run([py, '-m', 'pip', 'install', '-q', '--no-deps', '--force-reinstall', wheels[0]], cwd=tmp_path, timeout=600)
    assert res.returncode == 0, show(res)
    # cwd outside the repo; -I: no PYTHONPATH, user site or script folder on sys.path, so only the venv's copy can win
    code = ("import lotus_nb, lotus_nb.lotus, lotus_nb.experiment, lotus_nb.metrics; "
            "assert callable(lotus_nb.lotus.lotus_unlearn) and callable(lotus_nb.metrics.evaluate); "
            "print(lotus_nb.__file__); print(lotus_nb.__version__)")
    res = run([py, '-I', '-c', code], cwd=tmp_path, timeout=300)
    assert res.returncode == 0, show(res)
    *_, file, version = res.stdout.strip().splitlines()
    assert version == lotus_nb.__version__, (version, lotus_nb.__version__)
    path = Path(file).resolve()
    assert path.is_relative_to(venv.resolve()), f"imported {path}, not the venv's copy"
    assert not path.is_relative_to(ROOT), f"imported the repository's {path}"
