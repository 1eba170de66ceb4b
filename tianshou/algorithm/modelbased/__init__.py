"""Model-based methods: curiosity from a learned dynamics model, posterior sampling."""
