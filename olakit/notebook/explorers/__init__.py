"""The ipywidgets explorers over records: questions (agreement, corrections, notes curation), heatmaps (Fig 12,
agreement, kappa), GEEK traces and review histories; one module each. Only this package imports ipywidgets."""
