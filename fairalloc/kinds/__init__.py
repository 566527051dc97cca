"""One module per problem kind, each exporting its ``KIND`` record (``fairalloc.contract``).

The registry finds the modules here (``fairalloc.registry.shipped_kinds``); a module added
here is a registered kind. ``ORDER`` is only the order fairalloc lists kinds in (the order
the papers' problems are introduced in the README); a kind it does not name follows the
others, by name.
"""

ORDER = ("drf", "emrf", "etf", "moldable", "accelos", "token", "hetero")
