"""Entry: the public entry points (``fit``, ``init``, ``@distributed``, the import hook) and the
one place the backend is chosen (:mod:`autodist.entry.backends`).
"""
