"""Strait's services: one package each, none imports another."""
