__version__ = "0.6.0"

# Import every registering module (methods, datasets, the synthetic unseen set) and the installed plugins, so that the
# registries are complete in any process that imports any part of lotus_nb (nbs/19a_catalog.ipynb).
from . import catalog
