"""GEEK (seeds/002): the question state (state), actions and the rows of Table 2 (actions), prompts as a data file
with the exemplar leakage check (prompts), knowledge corpora (corpus), retrievers by name (retrievers), the step
loop with strategy exploration (agent), and the runner that writes records with traces (run)."""
