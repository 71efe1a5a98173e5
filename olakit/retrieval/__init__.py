"""Retrieval shared by the methods: the sentence embedder (embedder) and exact inner-product search (dense)."""
