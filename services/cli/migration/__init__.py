"""`strait migrate`: hand a flow's copy positions from MirrorMaker 2 to Strait in place, and back."""
