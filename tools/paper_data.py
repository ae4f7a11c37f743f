"""The paper's datasets at their sizes, without the pixels: synthetic data in each on-disk format that `data_root` reads.

    python tools/paper_data.py --out DIR                          # all six, at the paper's sizes
    python tools/paper_data.py --out DIR --datasets cifar100 mufac --workers 2
    python tools/paper_data.py --out DIR --fraction 0.01          # the same trees, 1% of the images (tests)

Then `papermill nbs/paper.ipynb out.ipynb -p scale paper -p data_root DIR ...` finds every dataset in DIR, in the tree
its loader reads (`load_dataset(name, root=DIR)`):

| dataset      | tree in DIR                                     | written (fraction 1)                                          |
|--------------|-------------------------------------------------|---------------------------------------------------------------|
| cifar10      | cifar-10-batches-py/ (Python 2 pickles)         | 50,000 + 10,000 images of 32 px                               |
| cifar100     | cifar-100-python/ (Python 2 pickles)            | 50,000 + 10,000 images of 32 px, fine and coarse labels       |
| tinyimagenet | tiny-imagenet-200/ (the zip's tree)             | 100,000 train JPEGs of 64 px, 10,000 val (annotated), 10,000 test |
| mufac        | custom_korean_family_dataset_resolution_128/    | 10,025 / 1,539 / 1,504 CSV rows, JPEGs of 128 px, duplicates planted so the cleaning leaves the paper's 1,062 / 5,513 / 1,211 / 1,118 |
| imagenet     | imagenet/ (torchvision's root: train/, val/, meta.bin) | what the large-scale benchmark reads: 1,000 classes x (50 train + 10 val) = 60,000 JPEGs of about 400 x 350 px |
| cifake       | cifake/test/FAKE, test/REAL                     | 10,000 FAKE JPEGs of 32 px (1,000 per class), 10,000 REAL     |

The sizes come from each dataset's registration (`register_dataset`: train_images, heldout_images, num_classes), with
the loaders' own constants where the registration has the whole set but the benchmark reads part of it (ImageNet: 50
training images per class, `IMAGENET_FORGET + IMAGENET_RETAIN`, and 5 + 5 held-out, `IMAGENET_HELDOUT`; the registered
1,281,167 / 50,000 are the full set) or where the registration has no split of a count (MUFAC's val / test rows,
1,539 / 1,504, from its README; the planted duplicates from `MUFAC_CLEAN_SIZES`).

Every image is `lotus_nb.core.testing.label_image`: its label in two grey bands (a third digit in the blue channel from 144
on), a random bottom quarter, and per image noise and band offsets (NOISE, JITTER below), so that two images of one
class differ and a network has something to learn that is not one picture per class. The writers are
`lotus_nb.core.testing`'s, the ones the small test fixtures use: one writer per format.

Safety: each tree it writes holds `LOTUS_SYNTHETIC.json` (what was written: sizes, seed, settings; `complete` once
done), and DIR holds one too. The tool refuses, before any work, a DIR that holds anything it did not write (a real
dataset, or anything else without the marker), so synthetic data never sits beside real data under one `data_root`.
Rerun over its own output, it skips the datasets already complete with the same settings, rewrites one left
incomplete, and refuses one written with other settings unless `--replace`.

After writing, each dataset is loaded through the package's loader (`load_dataset(name, root=DIR, download=False)`)
and checked: its sizes and classes, the folder it was found in, and `label_of` on decoded images (`--verify sample`: up
to 2,000 images of each split; `full`: every image; `none`). The times and sizes go into the marker.
"""
from __future__ import annotations
import argparse, json, math, os, shutil, sys, time
from pathlib import Path

MARKER = 'LOTUS_SYNTHETIC.json'
TREES = {'cifar10': 'cifar-10-batches-py', 'cifar100': 'cifar-100-python', 'tinyimagenet': 'tiny-imagenet-200',
         'mufac': 'custom_korean_family_dataset_resolution_128', 'imagenet': 'imagenet', 'cifake': 'cifake'}
# Per-pixel noise (label_image's `noise`: uniform in [-noise, noise]) and band offsets (`jitter`). Chosen so that
# label_of reads every label back through each format's encoding and loader (measured: worst band-median error 8 of
# the 10 levels allowed, at 32 px), and a larger image, which label_of averages over more pixels, takes more; ImageNet's
# 96 gives JPEGs of about 90 KB at 400 x 350 px, near the real set's mean file size (about 110 KB).
NOISE = dict(cifar10=16, cifar100=16, cifake=16, tinyimagenet=32, mufac=48, imagenet=96)
JITTER = 3
IMAGENET_SIDES = (350, 400, 0.2)  # height, width (about ImageNet's mean resolution), spread: each side within +-20%
MUFAC_ROWS = dict(val=1_539)      # its README: val F0801-F0850 1,539 images, test F0851-F0900 the rest of the 3,043 held out
MUFAC_FAMILY = 34                 # rows per family id: 10,025 training images in 299 families (F0001-F0299)
GREY_EVERY = 50                   # every 50th image greyscale (labels below 144), as a few real ones are
BYTES_PER_IMAGE = dict(cifar10=3_100, cifar100=3_100, tinyimagenet=4_096, mufac=9_000, imagenet=100_000, cifake=4_096)  # on disk, measured (a JPEG takes at least a 4 KiB block)


# The classes the paper forgets by name (lotus_nb.paper.paper_plan's tab:class), and where they sit: CIFAR-100's fine label 4 is
# 'beaver' (its meta lists the names alphabetically); TinyImageNet's 'pizza' (n07873807) has the index that the real
# wnids.txt gives it, which cannot be read here, so the synthetic set gives the name to its first class. The writers name
# classes generically; name_classes renames these after writing (tools/paper_data.py's rehearsal of tab:class found it).
NAMED = {'cifar100': {4: 'beaver'}, 'tinyimagenet': {0: 'pizza'}}


def paper_named_classes() -> dict:
    "dataset -> the class names the paper's benchmarks forget (PAPER_BENCHMARKS' forget_class given as a name)"
    from lotus_nb.paper.paper_plan import PAPER_BENCHMARKS
    out = {}
    for pbs in PAPER_BENCHMARKS.values():
        for pb in pbs:
            if isinstance(pb.forget_class, str) and not pb.forget_class.isdigit(): out.setdefault(pb.dataset, set()).add(pb.forget_class)
    return out


def name_classes(out:Path, name:str, names:dict):
    "Give the classes `names` ({index: name}) of dataset `name`, written under `out`, their names: in CIFAR-100's meta, in TinyImageNet's words.txt"
    if not names: return
    import pickle, lotus_nb.core.testing as T
    if name == 'cifar100':
        path = out/TREES[name]/'meta'
        with open(path, 'rb') as f: meta = pickle.load(f, encoding='bytes')
        for k, n in names.items(): meta[b'fine_label_names'][k] = n.encode()
        T.py2_pickle(meta, path)
    elif name == 'tinyimagenet':
        base = out/TREES[name]
        wnids = [l.strip() for l in (base/'wnids.txt').read_text().splitlines() if l.strip()]
        new = {wnids[k]: n for k, n in names.items()}
        lines = []
        for l in (base/'words.txt').read_text().splitlines():
            w = l.split('\t')[0]; lines.append(f"{w}\t{new[w]}" if w in new else l)
        (base/'words.txt').write_text(''.join(f'{l}\n' for l in lines))
    else: raise ValueError(f"{name}: no way to name its classes")


def registered():
    "The dataset registry with the paper's formats registered (the format chapters' modules)"
    import lotus_nb.data.formats_cifar, lotus_nb.data.formats_folders, lotus_nb.data.mufac   # noqa: F401 (they register)
    from lotus_nb.data.datasets import dataset_defaults
    return dataset_defaults


def scaled(n:int, fraction:float, least:int=1) -> int: return max(least, round(n*fraction))


def plan(name:str, fraction:float, seed:int) -> dict:
    "The writer, its arguments (files do not depend on workers), the classes it names, and what the loader must then give, for one dataset"
    out = _plan(name, fraction, seed)
    if names := NAMED.get(name): out['names'], out['expect'] = names, {**out['expect'], 'names': names}
    return out


def _plan(name:str, fraction:float, seed:int) -> dict:
    import lotus_nb.core.testing as T
    dd = registered()(name)
    common = dict(seed=seed, noise=NOISE[name], jitter=JITTER)
    if name in ('cifar10', 'cifar100'):
        per, test = scaled(dd.train_images//dd.num_classes, fraction), scaled(dd.heldout_images//dd.num_classes, fraction)
        kw = dict(per_class=per, test_per_class=test, **common)
        return dict(writer='write_cifar10' if name == 'cifar10' else 'write_cifar100', kwargs=kw,
                    expect=dict(train=per*dd.num_classes, heldout=test*dd.num_classes, classes=dd.num_classes), images=(per + test)*dd.num_classes)
    if name == 'tinyimagenet':
        c = dd.num_classes
        per, n_val = scaled(dd.train_images//c, fraction), scaled(dd.heldout_images, fraction, least=c)
        kw = dict(n_classes=c, per_class=per, n_val=n_val, n_test=scaled(dd.heldout_images, fraction), val_balanced=True,
                  grey_every=GREY_EVERY, size=dd.img_size, **common)
        return dict(writer='write_tinyimagenet', kwargs=kw, expect=dict(train=per*c, heldout=n_val, classes=c), images=per*c + n_val + kw['n_test'])
    if name == 'mufac':
        from lotus_nb.data.mufac import MUFAC_FORGET_ROWS, MUFAC_CLEAN_SIZES
        n_val = MUFAC_ROWS['val']; n_test = dd.heldout_images - n_val; f = MUFAC_FORGET_ROWS; clean = MUFAC_CLEAN_SIZES
        gone = dict(forget=f - clean['forget'], retain=dd.train_images - f - clean['retain'], val=n_val - clean['val'], test=n_test - clean['test'])
        planted = {'forget in retain': gone['forget']//2, 'forget duplicate': gone['forget'] - gone['forget']//2,
                   'retain duplicate': gone['retain'], 'val in test': gone['val']//2, 'val duplicate': gone['val'] - gone['val']//2,
                   'test in train': gone['test']//2, 'test duplicate': gone['test'] - gone['test']//2}
        fr = scaled(f, fraction, least=4)   # the writer's least rows (its first planted copies sit in rows it fixes)
        kw = dict(n_train=scaled(dd.train_images, fraction, least=fr + 7 + 2*scaled(gone['retain'], fraction)),
                  n_val=scaled(n_val, fraction, least=6 + 4), n_test=scaled(n_test, fraction, least=9 + 6), forget_rows=fr,
                  planted={k: scaled(v, fraction) for k, v in planted.items()},
                  per_family=MUFAC_FAMILY, size=dd.img_size, **common)
        p = kw['planted']
        T._mufac_copies(p, fr, dict(train=kw['n_train'], val=kw['n_val'], test=kw['n_test']))   # the writer's layout check, before any work
        sizes = dict(forget=fr - p['forget in retain'] - p['forget duplicate'], retain=kw['n_train'] - fr - p['retain duplicate'],
                     val=kw['n_val'] - p['val in test'] - p['val duplicate'], test=kw['n_test'] - p['test in train'] - p['test duplicate'])
        if fraction == 1 and sizes != clean: raise AssertionError(f"MUFAC plan gives {sizes}, not the paper's {clean}")
        return dict(writer='write_mufac', kwargs=kw, expect=dict(train=sizes['forget'] + sizes['retain'], heldout=sizes['val'] + sizes['test'],
                    classes=dd.num_classes, cleaned=sizes), images=kw['n_train'] + kw['n_val'] + kw['n_test'], options=dict(forget_rows=fr))
    if name == 'imagenet':
        from lotus_nb.data.formats_folders import IMAGENET_FORGET, IMAGENET_RETAIN, IMAGENET_HELDOUT
        c = scaled(dd.num_classes, fraction, least=2); per, val = IMAGENET_FORGET + IMAGENET_RETAIN, 2*IMAGENET_HELDOUT
        h, w, spread = IMAGENET_SIDES
        kw = dict(n_classes=c, per_class=per, val_per_class=val, val_layout='folders', height=h, width=w, spread=spread,
                  grey_every=GREY_EVERY, **common)
        return dict(writer='write_imagenet', kwargs=kw, expect=dict(train=per*c, heldout=val*c, classes=c), images=(per + val)*c)
    if name == 'cifake':
        per = scaled(dd.heldout_images//dd.num_classes, fraction)
        kw = dict(per_class=per, n_real=per*dd.num_classes, **common)
        return dict(writer='write_cifake', kwargs=kw, expect=dict(train=0, heldout=per*dd.num_classes, classes=dd.num_classes), images=2*per*dd.num_classes)
    raise KeyError(name)


def read_marker(path:Path) -> dict:
    "The marker in `path`, or None when there is none (or it cannot be read as the tool's)"
    try: m = json.loads((Path(path)/MARKER).read_text())
    except (OSError, ValueError): return None
    return m if isinstance(m, dict) and m.get('synthetic') is True else None


def check_out(out:Path, names:list, plans:dict, replace:bool) -> dict:
    "Refuse an `out` holding anything the tool did not write; what to do with each dataset: 'write', 'skip' or 'rewrite'"
    if out.exists() and not out.is_dir(): raise SystemExit(f"--out {out} is a file, not a folder")
    if out.exists():
        ours = {TREES[n] for n in TREES}
        foreign = sorted(p.name for p in out.iterdir()
                         if not (p.name in (MARKER, MARKER + '.tmp') and read_marker(out)) and not (p.name in ours and p.is_dir() and read_marker(p)))
        if foreign:
            raise SystemExit(f"--out {out} holds {', '.join(foreign)}, which tools/paper_data.py did not write (no {MARKER}): it writes "
                             "synthetic data only into an empty folder or its own output, never beside real data. Choose another folder.")
    todo = {}
    for n in names:
        m = read_marker(out/TREES[n])
        if m is None: todo[n] = 'write'
        elif not m.get('complete'): todo[n] = 'rewrite'
        elif m.get('settings') == settings(n, plans[n]): todo[n] = 'skip'
        elif replace: todo[n] = 'rewrite'
        else:
            raise SystemExit(f"{out/TREES[n]} was written with other settings ({m.get('settings')}); now asked for {settings(n, plans[n])}. "
                             "Pass --replace to rewrite it, or choose another --out.")
    return todo


def settings(name:str, p:dict) -> dict:
    "What the files of one dataset depend on (not the worker count): the writer, its arguments, and its code (lotus_nb/core/testing.py's hash)"
    import hashlib, lotus_nb.core.testing as T
    code = hashlib.sha256(Path(T.__file__).read_bytes()).hexdigest()[:16]
    return json.loads(json.dumps(dict(dataset=name, writer=p['writer'], kwargs=p['kwargs'], writer_code=code, **({'names': p['names']} if p.get('names') else {}))))


def disk_bytes(path:Path) -> tuple:
    "(bytes on disk, files) under `path`"
    n = b = 0
    for dirpath, _, files in os.walk(path):
        for f in files: b += os.lstat(os.path.join(dirpath, f)).st_blocks*512; n += 1
    return b, n


def verify(name:str, out:Path, p:dict, mode:str, workers:int) -> dict:
    "Load the written tree through the package's loader and check sizes, classes, folder and labels (label_of)"
    import numpy as np, torch
    from lotus_nb.data.datasets import load_dataset
    from lotus_nb.core.testing import label_of
    t0 = time.time()
    d = load_dataset(name, root=out, download=False, **p.get('options', {}))
    load_s = time.time() - t0
    e, got = p['expect'], dict(train=len(d.y_train), heldout=len(d.y_heldout), classes=d.num_classes)
    bad = [f"{k}: {got[k]}, expected {e[k]}" for k in ('train', 'heldout', 'classes') if got[k] != e[k]]
    bad += [f"class {k} is {d.classes[k]!r}, not {n!r}" for k, n in e.get('names', {}).items() if d.classes[k] != n]
    if name == 'mufac' and d.notes['cleaning'].after != e['cleaned']:
        bad.append(f"cleaned sizes {d.notes['cleaning'].after}, expected {e['cleaned']}")
    for split in ('x_train', 'x_heldout'):
        x = getattr(d, split)
        if not isinstance(x, torch.Tensor) and len(x) and not Path(x.paths[0]).resolve().is_relative_to(out.resolve()):
            bad.append(f"{split} read from {x.paths[0]}, not from {out}")
    t1, checked, wrong = time.time(), 0, 0
    for x, y in ((d.x_train, d.y_train), (d.x_heldout, d.y_heldout)):
        n = len(y)
        if mode == 'none' or n == 0: continue
        idx = np.arange(n) if mode == 'full' else np.sort(np.random.RandomState(0).permutation(n)[:2000])
        for i in range(0, len(idx), 512):
            part = idx[i:i+512]
            xb = x[torch.as_tensor(part)] if isinstance(x, torch.Tensor) else x[part].load(num_workers=0 if len(part) < 256 else workers)
            wrong += int((label_of(xb) != y[torch.as_tensor(part)]).sum()); checked += len(part)
    if wrong: bad.append(f"label_of disagrees with the loader's label on {wrong} of {checked} images")
    res = dict(train=got['train'], heldout=got['heldout'], classes=got['classes'], in_memory=d.in_memory, load_s=round(load_s, 1),
               labels_checked=checked, labels_wrong=wrong, label_check_s=round(time.time() - t1, 1), verify=mode)
    if name == 'mufac': res['cleaned'] = d.notes['cleaning'].after
    if bad: raise SystemExit(f"{name}: the written tree does not load as planned: " + '; '.join(bad) + f" ({res})")
    return res


def write_marker(path:Path, content:dict):
    path.mkdir(parents=True, exist_ok=True)
    tmp = path/(MARKER + '.tmp'); tmp.write_text(json.dumps(content, indent=1) + '\n'); tmp.replace(path/MARKER)


def main(argv=None):
    names_all = list(TREES)
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0], formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument('--out', required=True, help='the folder to write into (then: -p data_root OUT); empty, new, or this tool\'s output')
    ap.add_argument('--datasets', nargs='+', default=names_all, metavar='NAME', help=f"which (default all): {', '.join(names_all)}")
    ap.add_argument('--fraction', type=float, default=1.0, help='share of the images, in (0, 1]; ImageNet: of its classes (default 1: the paper sizes)')
    ap.add_argument('--workers', type=int, default=len(os.sched_getaffinity(0)),
                    help='processes drawing and encoding images (default: the cores this process may use)')
    ap.add_argument('--seed', type=int, default=0, help='seeds every image and label order (default 0)')
    ap.add_argument('--verify', choices=('sample', 'full', 'none'), default='sample', help='label_of on up to 2,000 images per split, on every image, or none')
    ap.add_argument('--replace', action='store_true', help="rewrite a dataset this tool wrote with other settings")
    a = ap.parse_args(argv)
    # every check before any work
    if unknown := [n for n in a.datasets if n not in TREES]:
        raise SystemExit(f"unknown dataset{'s' if len(unknown) > 1 else ''} {', '.join(map(repr, unknown))}; valid: {', '.join(names_all)}")
    if not 0 < a.fraction <= 1: raise SystemExit(f"--fraction {a.fraction}: a share in (0, 1]")
    if a.workers < 1: raise SystemExit(f"--workers {a.workers}: at least 1")
    if a.seed < 0: raise SystemExit(f"--seed {a.seed}: 0 or more")
    names = list(dict.fromkeys(a.datasets))
    if 'mufac' in names and a.verify != 'none':
        import importlib.util
        if importlib.util.find_spec('imagehash') is None:
            raise SystemExit("mufac's loader cleans it with perceptual hashes: pip install \"lotus_nb[mufac]\" (or --verify none, or leave mufac out)")
    out = Path(a.out).expanduser()
    try: plans = {n: plan(n, a.fraction, a.seed) for n in names}
    except ValueError as e: raise SystemExit(f"--fraction {a.fraction}: {e}")
    todo = check_out(out, names, plans, a.replace)
    need = sum(plans[n]['images']*BYTES_PER_IMAGE[n] for n in names if todo[n] != 'skip')
    probe = next(p for p in [out, *out.parents] if p.exists())
    if (free := shutil.disk_usage(probe).free) < 1.1*need:
        raise SystemExit(f"{probe} has {free/1e9:.1f} GB free; writing {', '.join(n for n in names if todo[n] != 'skip')} needs about {need/1e9:.1f} GB")
    import lotus_nb, lotus_nb.core.testing as T
    print(f"paper_data: {', '.join(names)} into {out} (fraction {a.fraction}, seed {a.seed}, {a.workers} worker(s); "
          f"{len(os.sched_getaffinity(0))} of {os.cpu_count()} cores usable; about {need/1e9:.2f} GB to write)", flush=True)
    top = read_marker(out) or dict(synthetic=True, written_by='tools/paper_data.py', datasets={})
    write_marker(out, top)
    summary = {}
    for n in names:
        tree, p = out/TREES[n], plans[n]
        if todo[n] == 'skip':
            m = read_marker(tree); summary[n] = m; print(f"{n}: already written with these settings ({tree}), skipped", flush=True); continue
        if tree.exists(): shutil.rmtree(tree)   # ours (its marker says so): incomplete, or --replace
        m = dict(synthetic=True, written_by='tools/paper_data.py', lotus_nb=lotus_nb.__version__, dataset=n, tree=TREES[n],
                 settings=settings(n, p), fraction=a.fraction, seed=a.seed, expect=p['expect'], complete=False)
        write_marker(tree, m)
        print(f"{n}: writing {p['images']:,} images into {tree} ...", flush=True)
        t0 = time.time(); getattr(T, p['writer'])(out, **p['kwargs'], workers=a.workers); name_classes(out, n, p.get('names')); secs = time.time() - t0
        size, files = disk_bytes(tree)
        print(f"{n}: written in {secs:.1f} s, {size/1e6:,.1f} MB on disk, {files:,} files; loading it through load_dataset ...", flush=True)
        res = verify(n, out, p, a.verify, a.workers)
        m.update(complete=True, write_s=round(secs, 1), bytes=size, files=files, workers=a.workers, verified=res)
        write_marker(tree, m); summary[n] = m
        top['datasets'][n] = dict(tree=TREES[n], complete=True); write_marker(out, top)
        print(f"{n}: loaded in {res['load_s']} s ({res['train']:,} train / {res['heldout']:,} held-out, {res['classes']} classes"
              f"{', cleaned ' + str(res['cleaned']) if 'cleaned' in res else ''}); " +
              (f"label_of right on {res['labels_checked']:,} images ({res['label_check_s']} s)" if a.verify != 'none' else 'labels not checked (--verify none)'), flush=True)
    print(f"\n{'dataset':14s} {'write s':>8s} {'MB':>9s} {'files':>8s} {'load s':>7s}  sizes")
    for n, m in summary.items():
        v = m['verified']
        print(f"{n:14s} {m['write_s']:8.1f} {m['bytes']/1e6:9.1f} {m['files']:8,d} {v['load_s']:7.1f}  {v['train']:,} / {v['heldout']:,}, {v['classes']} classes")
    return summary


if __name__ == '__main__':
    main()
