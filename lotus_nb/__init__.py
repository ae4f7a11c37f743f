__version__ = "0.7.0"

# Nothing is imported here: a registry (methods, datasets, metrics, unseen sources, split rules) imports lotus_nb.catalog,
# every registering module and the installed plugins, on its first read (nbs/00a_registry.ipynb), so that importing one
# part of lotus_nb loads only that part.
