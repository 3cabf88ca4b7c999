"""Importers: benchmark logs in their own formats -> canonical rollouts."""
