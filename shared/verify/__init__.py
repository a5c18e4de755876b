"""Record-by-record proof that a flow lost nothing: each source partition against its remote copy."""
