"""The data layer: file helpers (files), dataset loaders (loaders), pinned downloads (fetch), records (records),
importers of recorded runs (recorded) and manual corrections (overrides)."""
