"""`strait`: the operator's command line."""
