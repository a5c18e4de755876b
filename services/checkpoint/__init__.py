"""checkpoint: translates committed consumer-group offsets into MM2 checkpoints; optionally moves idle target groups."""
