"""acl-sync: copy topic ACLs from a flow's source to its remote topics on the target (MM2 rules, additive)."""
