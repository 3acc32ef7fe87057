"""Kinds of a test's own, one file each, as a new one in autodist needs: a strategy type
(``strategy.py``). ``tests/test_extensions.py`` puts each to work and takes it away again."""
