"""plurm.plugins."""
