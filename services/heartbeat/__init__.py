"""heartbeat: emits MM2 heartbeats into each source and watches the mirrored ones for liveness and latency."""
