__version__ = "0.7.0"

# Nothing is imported here, and no registry imports anything: the functions that resolve a name (unlearn, load_dataset,
# list_methods, ...) call lotus_nb.catalog.load_plugins(), which imports lotus_nb's registering modules by name, then the
# installed plugins, once (nbs/19a_catalog.ipynb); so importing one part of lotus_nb loads only that part.
# `from lotus_nb.all import *` imports every part, for a notebook.
