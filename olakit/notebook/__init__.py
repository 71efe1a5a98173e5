"""The notebook side: what the ablation notebooks call (ablations), sweeps of notebooks through papermill (sweep),
and the ipywidgets explorers (widgets)."""
