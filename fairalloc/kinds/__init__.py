"""One module per problem kind, each exporting its ``KIND`` record (``fairalloc.contract``)."""
