"""topic-sync: create remote topics, grow their partitions, sync their configs and announce them (MM2 rules)."""
