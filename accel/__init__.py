"""plurm.accel."""
