"""Portable checkpoints: digest, export, verification, replay, backup and restore."""
