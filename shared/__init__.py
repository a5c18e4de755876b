"""Strait's common library: what two or more services need, one concept per module."""
