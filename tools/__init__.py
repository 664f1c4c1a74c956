"""plurm.tools."""
