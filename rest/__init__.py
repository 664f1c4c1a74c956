"""plurm.rest: plurmrestd, the slurmrestd-compatible REST daemon (docs/rest.md)."""
