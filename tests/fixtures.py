"""Fixture writers for the dataset tests: each writes a small tree in one dataset's exact on-disk format.

The writers live in `lotus_nb.core.testing` (exported from nbs/core/07_testing.ipynb), so the notebooks, these tests and the
end-to-end papermill runs share one implementation; this module gathers them for the test suite.
Every image carries its label in its pixels (`label_image`); `label_of` reads it back."""
from lotus_nb.data.loaders import unnormalize
from lotus_nb.core.testing import (label_image, label_of, save_jpeg, py2_pickle, write_idx, write_cifar10, write_cifar100,
                              write_tinyimagenet, write_mufac, write_imagenet, write_cifake)

__all__ = ['label_image', 'label_of', 'unnormalize', 'save_jpeg', 'py2_pickle', 'write_idx', 'write_cifar10', 'write_cifar100',
           'write_tinyimagenet', 'write_mufac', 'write_imagenet', 'write_cifake']
