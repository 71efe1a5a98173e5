"""Analysis over records (pure pandas/numpy/scipy; no LLM calls): paper and method tables (tables), confidence
intervals (intervals), paired tests with Holm correction (inference), template agreement (agreement), cost against
accuracy (cost), accuracy by retrieval similarity (similarity), per-question views (questions), figures (figures),
and the reproduction of the OlaGPT paper from recorded outputs (reproduce).
"""
