"""plurm.common: what the daemons and the commands share: daemon start-up, the job
environment, the GRES unit model."""
