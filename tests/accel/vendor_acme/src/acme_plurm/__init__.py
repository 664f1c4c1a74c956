"""ACME tensor accelerators for plurm: a vendor backend in its own package."""
