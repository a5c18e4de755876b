"""audit: verify newly copied ranges of each flow shortly after they land, within a read budget."""
