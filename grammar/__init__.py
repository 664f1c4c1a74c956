"""plurm.grammar."""
