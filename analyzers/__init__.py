"""Pure functions from a normalized :class:`tracekit.model.Trace` to metric frames. No file formats here."""
