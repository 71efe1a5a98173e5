"""The CoT + self-review loop (seeds/003) and OlaGPT's verification thinking: parsing of steps, similar questions
and review scores (parse), the stop rules (stop), the loop in standard and lite mode (loop), and the runner that
writes records with each iteration's history (run)."""
