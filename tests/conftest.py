"""pytest's hooks and fixtures for the whole suite: none at present. The helpers the tests share are a module of their own,
imported by name (`from helpers import ...`: tests/helpers.py); this folder is put on the path so that it imports under
any of pytest's import modes."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
