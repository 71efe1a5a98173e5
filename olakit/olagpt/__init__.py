"""OlaGPT (seeds/000): intention (intent), thinking templates (templates), the notes library (notes), note
selection (selection), active learning (active_learning), the controller's prompts (controller), the regex vote
(vote), the LLM vote (llm_vote), baselines (baselines) and the live runner (run)."""
