"""plurm.nodeagent."""
