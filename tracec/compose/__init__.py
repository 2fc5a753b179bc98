"""Composition: a router over frozen LoRA adapters (model, routing, training, `tracec compose`)."""
